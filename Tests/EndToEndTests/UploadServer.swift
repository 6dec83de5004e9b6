import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Outbox
import OutboxAudit
import OutboxCrypto
import TestHarness
import ThrowawayPostgres
import ThrowawaySwiftStore

/// One `outbox-test-server` process with its claims and records in a fresh schema of the tests'
/// PostgreSQL, and its upload endpoints on a fresh container of the tests' OpenStack Swift
/// store: the account's token and Temp-URL-Key handed over in its environment, as a deployment
/// hands them. Stopped, and its schema dropped, when dropped.
final class UploadServer: Sendable {
    let schema: TestSchema
    let store: TemporarySwiftStore
    let container: String
    let process: SpawnedProcess
    let baseURL: URL
    let segmentBytes: Int64
    private let http: URLSession

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// - Parameters:
    ///   - segmentBytes: the segment size grants set.
    ///   - maxUploadBytes: the largest file granted.
    init(segmentBytes: Int64 = 256 << 10, maxUploadBytes: Int64 = 64 << 20) throws {
        store = try TestSwiftStore.shared()
        container = try TestSwiftStore.freshContainer("uploads")
        schema = try TestPostgres.freshSchema("uploads")
        self.segmentBytes = segmentBytes
        let environment = ProcessInfo.processInfo.environment.merging([
            "OUTBOX_TEST_SERVER_POSTGRES": try TestPostgres.settings().conninfo,
            "PGOPTIONS": "-c search_path=\(schema.name)",
            "OUTBOX_SWIFT_TOKEN": store.authToken,
            "OUTBOX_SWIFT_KEY": TestSwiftStore.tempURLKey,
        ]) { $1 }
        do {
            process = try SpawnedProcess(
                try builtExecutable(named: "outbox-test-server").path,
                ["--postgres", "env:OUTBOX_TEST_SERVER_POSTGRES", "--pool-size", "4", "--read-timeout", "120",
                 "--swift-storage-url", store.storageURL.absoluteString, "--swift-auth-token", "env:OUTBOX_SWIFT_TOKEN",
                 "--swift-temp-url-key", "env:OUTBOX_SWIFT_KEY", "--swift-container", container,
                 "--segment-bytes", String(segmentBytes), "--max-upload-bytes", String(maxUploadBytes)],
                environment: environment, output: .pipe, errors: .pipe)
        } catch {
            schema.drop()
            throw error
        }
        // Its errors are read as they come, so that the pipe never fills; its first line names its port.
        let errors = process.errors!.collect()
        var lines = LineReader(process.output!)
        let line = lines.next() ?? lines.rest
        let prefix = "listening on 127.0.0.1:"
        guard line.hasPrefix(prefix), let port = UInt16(line.dropFirst(prefix.count).prefix { $0.isNumber }) else {
            if process.signal(SIGTERM) { _ = process.wait() }
            schema.drop()
            throw Failure(description: "outbox-test-server did not say its port: \(line) \(errors.text.suffix(2000))")
        }
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = EndToEndTests.patience
        configuration.timeoutIntervalForResource = EndToEndTests.patience
        configuration.urlCache = nil
        http = URLSession(configuration: configuration)
    }

    deinit {
        if process.signal(SIGTERM) { _ = process.wait() }
        http.invalidateAndCancel()
        schema.drop()
    }

    /// An answer, of the server or the store.
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: Data

        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// One request to `url`, on a fresh connection.
    func request(_ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil) async throws -> Answer {
        var request = URLRequest(url: url, timeoutInterval: EndToEndTests.patience)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue("close", forHTTPHeaderField: "Connection")
        let (data, response) = if let body {
            try await http.upload(for: request, from: body)
        } else {
            try await http.data(for: request)
        }
        guard let response = response as? HTTPURLResponse else { throw Failure(description: "\(method) \(url): not HTTP") }
        var read: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { read[name] = value }
        }
        return Answer(status: response.statusCode, headers: read, body: data)
    }

    /// A request to the server.
    func server(_ method: String, _ endpoint: String, key: String? = nil, _ body: String = "") async throws -> Answer {
        var headers = ["Content-Type": "application/json"]
        if let key { headers["Idempotency-Key"] = key }
        return try await request(method, URL(string: baseURL.absoluteString + endpoint)!, headers: headers,
                                 body: method == "GET" ? nil : Data(body.utf8))
    }

    /// `POST /_control/uploads` with `body`; answers the settings now.
    @discardableResult
    func setUploads(_ body: String) async throws -> [String: Any] {
        let answer = try await server("POST", "/_control/uploads", body)
        guard answer.status == 200 else { throw Failure(description: "/_control/uploads answered \(answer.status): \(answer.text)") }
        return answer.json
    }

    /// How many times each key's effect was applied.
    func applied() async throws -> [String: Int] {
        let entries = try await server("GET", "/_control/applied").json["applied"] as? [[String: Any]] ?? []
        return Dictionary(entries.map { ($0["key"] as? String ?? "", $0["count"] as? Int ?? 0) }) { $0 + $1 }
    }

    /// The claims in PostgreSQL: `<operation type> <key> <status> <response status>` per row.
    func claims() throws -> [String] {
        try schema.execute("SELECT operation_type, key, status, coalesce(response_status, 0) FROM idempotency_keys ORDER BY 1, 2")
            .map { "\(try $0.text(0)) \(try $0.text(1)) \(try $0.text(2)) \(try $0.int32(3))" }
    }

    /// A request to the store with the account's token, for `<container>/<object>`.
    func storeRequest(_ method: String, _ object: String) async throws -> Answer {
        try await request(method, store.objectURL(container: container, object: object), headers: ["X-Auth-Token": store.authToken])
    }

    /// The grant request's body as the engine sends it: its keys sorted.
    static func grantBody(id: AttachmentID, bytes: Data, name: String = "note.jpg", contentType: String = "image/jpeg") -> String {
        struct Body: Encodable {
            var attachment_id: String
            var size: Int64
            var sha256: String
            var content_type: String
            var name: String
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = Body(attachment_id: id.description, size: Int64(bytes.count), sha256: SHA256Digest(of: bytes).hex,
                        content_type: contentType, name: name)
        // Strings and an integer: encoding them cannot throw.
        return String(decoding: try! encoder.encode(body), as: UTF8.self)
    }
}

/// Seeded bytes: a photo's worth, the same for a seed on every run.
func seededBytes(_ count: Int, seed: UInt64) -> Data {
    var random = SeededRandom(seed: seed)
    var data = Data(capacity: count + 8)
    while data.count < count {
        var word = random.next()
        withUnsafeBytes(of: &word) { data.append(contentsOf: $0) }
    }
    return data.prefix(count)
}
