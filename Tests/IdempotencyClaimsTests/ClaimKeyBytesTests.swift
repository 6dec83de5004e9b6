import Foundation
import IdempotencyClaims
import OutboxWire
import Testing

/// "café" with a precomposed é (NFC: 63 61 66 C3 A9) and with e and a combining accent (NFD:
/// 63 61 66 65 CC 81): equal as Swift strings, two keys for PostgreSQL and LMDB, and two keys
/// for every store here.
let composedCafe = "caf\u{E9}"
let decomposedCafe = "cafe\u{301}"

@Suite("Claim keys compared byte for byte")
struct ClaimKeyBytesTests {
    @Test func theTwoSpellingsAreEqualStringsButDifferentKeysScopesAndIDs() throws {
        #expect(composedCafe == decomposedCafe, "Swift's String equality is canonical equivalence")
        let nfc = try #require(IdempotencyKey(rawValue: "k-" + composedCafe))
        let nfd = try #require(IdempotencyKey(rawValue: "k-" + decomposedCafe))
        #expect(nfc != nfd)
        #expect(Set([nfc, nfd]).count == 2)
        let scopes = [ClaimScope(businessID: composedCafe, operationType: "product.create"),
                      ClaimScope(businessID: decomposedCafe, operationType: "product.create"),
                      ClaimScope(businessID: "b", operationType: "t." + composedCafe),
                      ClaimScope(businessID: "b", operationType: "t." + decomposedCafe)]
        #expect(Set(scopes).count == 4)
        #expect(Set(scopes.map { ClaimID(scope: $0, key: nfc) } + scopes.map { ClaimID(scope: $0, key: nfd) }).count == 8)
        #expect(ExactString(composedCafe) != ExactString(decomposedCafe))
        #expect(ExactString(decomposedCafe) < ExactString(composedCafe), "byte order: 65 before C3")
        #expect(scopes[0].businessID == composedCafe && scopes[0].businessID.utf8.elementsEqual(composedCafe.utf8), "the text as given")
    }

    @Test(arguments: Backend.allCases)
    func keysThatDifferOnlyInTheirBytesAreTwoClaimsAndTwoWrites(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        #expect(try harness.handle(key: "k-" + composedCafe).outcome == .applied)
        #expect(try harness.handle(key: "k-" + decomposedCafe).outcome == .applied, "a distinct write, not a replay")
        #expect(try harness.effects("k-" + composedCafe) == 1)
        #expect(try harness.effects("k-" + decomposedCafe) == 1)
        #expect(try harness.handle(key: "k-" + decomposedCafe).outcome == .replayed)
        #expect(try harness.claim("k-" + composedCafe) != nil && harness.claim("k-" + decomposedCafe) != nil)
    }

    @Test(arguments: Backend.allCases)
    func businessIDsAndOperationTypesThatDifferOnlyInTheirBytesScopeTwoClaims(_ backend: Backend) throws {
        let harness = try ClaimsHarness.make(backend)
        let scopes = [ClaimScope(businessID: "b-" + composedCafe, operationType: "product.create"),
                      ClaimScope(businessID: "b-" + decomposedCafe, operationType: "product.create"),
                      ClaimScope(businessID: "b", operationType: "menu." + composedCafe),
                      ClaimScope(businessID: "b", operationType: "menu." + decomposedCafe)]
        for scope in scopes {
            #expect(try harness.handle(key: "k-1", scope: scope).outcome == .applied, "\(scope)")
        }
        for scope in scopes {
            #expect(try harness.effects("k-1", scope: scope) == 1, "\(scope)")
            #expect(try harness.handle(key: "k-1", scope: scope).outcome == .replayed, "\(scope)")
        }
    }
}
