import Foundation
import OutboxTestServer
import OutboxTestServerPostgres
import Testing

/// The upload endpoints' options (the store behind them is exercised by the end-to-end tests,
/// `AttachmentServerTests`), and a server started without a store.
@Suite("The outbox-test-server command line: uploads")
struct ServerCommandLineUploadsTests {
    /// Secrets the options name, in this process's environment (`PATH` and `HOME` are always set;
    /// a variable's value is what the option takes, never its name).
    static let token = "env:PATH"
    static let key = "env:HOME"

    static let complete = [
        "--swift-storage-url", "http://127.0.0.1:8080/v1/AUTH_test", "--swift-auth-token", token, "--swift-temp-url-key", key,
        "--swift-container", "photos",
    ]

    @Test func theUploadOptionsAreApplied() throws {
        guard case .run(let configuration) = try ServerCommandLine.parse(
            Self.complete + ["--segment-bytes", "262144", "--grant-lifetime", "1.5", "--max-upload-bytes=1048576"]).get(),
            let uploads = configuration.uploads
        else {
            Issue.record("expected the upload endpoints on a store")
            return
        }
        #expect(uploads.storageURL.absoluteString == "http://127.0.0.1:8080/v1/AUTH_test")
        #expect(uploads.authToken == ProcessInfo.processInfo.environment["PATH"])
        #expect(uploads.tempURLKey == ProcessInfo.processInfo.environment["HOME"])
        #expect(uploads.container == "photos")
        #expect(uploads.segmentBytes == 262_144)
        #expect(uploads.grantLifetimeSeconds == 1.5)
        #expect(uploads.maxObjectBytes == 1 << 20)
        guard case .run(let defaults) = try ServerCommandLine.parse(Self.complete).get(), let store = defaults.uploads else {
            Issue.record("expected the upload endpoints with their defaults")
            return
        }
        #expect(store.segmentBytes == 8 << 20 && store.grantLifetimeSeconds == 900 && store.maxObjectBytes == 256 << 20)
        guard case .run(let none) = try ServerCommandLine.parse([]).get() else { return }
        #expect(none.uploads == nil)
    }

    /// Each bad command line, and the words its message must hold.
    @Test(arguments: [
        (["--swift-storage-url", "http://127.0.0.1:8080/v1/AUTH_test"],
         "the upload endpoints need --swift-auth-token, --swift-temp-url-key, --swift-container as well"),
        (["--segment-bytes", "1024"], "the upload endpoints need --swift-storage-url, --swift-auth-token"),
        (["--swift-auth-token", "AUTH_tk0123"], "a secret is never given on a command line"),
        (["--swift-temp-url-key", "env:OUTBOX_NO_SUCH_VARIABLE"], "the environment variable OUTBOX_NO_SUCH_VARIABLE is not set"),
        (["--swift-storage-url", "ftp://store/v1/AUTH_test"], "--swift-storage-url expects the account's storage URL"),
        (["--swift-container", "photos/2024"], "holds more than letters, digits"),
        (["--segment-bytes", "0"], "--segment-bytes expects a whole number from 1 to 5368709120, not '0'"),
        (["--grant-lifetime", "0"], "--grant-lifetime expects seconds over 0 and at most 604800, not '0'"),
        (["--max-upload-bytes", "-1"], "--max-upload-bytes expects a whole number from 0 to 1099511627776, not '-1'"),
    ])
    func aBadUploadOptionIsAUsageErrorNamingIt(_ arguments: [String], _ expected: String) {
        guard case .failure(let error) = ServerCommandLine.parse(arguments) else {
            Issue.record("\(arguments) was accepted")
            return
        }
        #expect(error.message.contains(expected), "\(error.message)")
        #expect(!error.message.contains("AUTH_tk0123"), "a secret given by mistake is not repeated")
    }

    @Test func aServerWithoutAStoreAnswersItsUploadEndpoints501() throws {
        let server = try TestServer()
        defer { server.stop() }
        for request in [
            HTTPRequest(method: "POST", path: "/uploads", headers: [("Idempotency-Key", "k-1")], body: Data("{}".utf8)),
            HTTPRequest(method: "POST", path: "/uploads/0C1A2B3C-0000-4000-8000-000000000000/complete",
                        headers: [("Idempotency-Key", "k-2")], body: Data("{}".utf8)),
            HTTPRequest(method: "GET", path: "/_control/uploads"),
            HTTPRequest(method: "POST", path: "/_control/uploads", body: Data(#"{"grant_lifetime_seconds":1}"#.utf8)),
        ] {
            let response = try #require(server.respond(to: request))
            #expect(response.status == 501, "\(request.path)")
            #expect(String(decoding: response.body, as: UTF8.self).contains("uploads_unsupported"))
        }
        #expect(server.respond(to: HTTPRequest(method: "GET", path: "/uploads"))?.status == 405)
        #expect(server.respond(to: HTTPRequest(method: "POST", path: "/uploads/x/other"))?.status == 404)
    }
}
