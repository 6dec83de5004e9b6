import OutboxCrypto
import Testing
import ThrowawaySwiftStore

@Suite("TempURL signatures")
struct SwiftTempURLTests {
    @Test func hmacSHA256AnswersRFC4231sVectors() {
        // RFC 4231, test case 2: a key shorter than the block.
        let short = HMACSHA256.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(hex(short) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: a key longer than the block, hashed first.
        let long = HMACSHA256.authenticationCode(
            for: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8), key: [UInt8](repeating: 0xaa, count: 131))
        #expect(hex(long) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func theSignatureIsTheTempurlMiddlewaresOwnExample() {
        // The example in the docstring of Swift's swift/common/middleware/tempurl.py.
        let signature = SwiftTempURL.signature(
            method: "GET", path: "/v1/AUTH_account/container/object", expiresUnixSeconds: 1_512_508_563, key: "mykey")
        #expect(signature == "732fcac368abb10c78a4cbe95c3fab7f311584532bf779abd5074e13cbe8b88b")
    }

    @Test func theQueryCarriesTheHexSignatureAndTheExpiry() {
        let query = SwiftTempURL.query(
            method: "PUT", path: "/v1/AUTH_test/photos/p-1/0001", expiresUnixSeconds: 4_102_444_800, key: "outbox-test-temp-url-key")
        #expect(query == "temp_url_sig=f7a399a543ba834c79a4e929c6787b69e60b40db0ad3157b3b86ea3e2952f5d2&temp_url_expires=4102444800")
    }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
