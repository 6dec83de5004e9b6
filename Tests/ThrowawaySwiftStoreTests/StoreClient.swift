import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the store answered one request.
struct Answer {
    var status: Int
    var headers: [String: String]
    var body: Data

    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Requests to the store as a client sends them: `URLSession`, no cookies, no cache, no
/// redirects followed, a fresh connection each (see `URLSessionTransport`).
enum StoreClient {
    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        // A hang guard, never a timing.
        configuration.timeoutIntervalForRequest = 120
        configuration.timeoutIntervalForResource = 120
        configuration.urlCache = nil
        configuration.httpShouldSetCookies = false
        return URLSession(configuration: configuration)
    }()

    static func send(_ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil) async throws -> Answer {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue("close", forHTTPHeaderField: "Connection")
        request.httpBody = body
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        return Answer(status: http.statusCode, headers: fields, body: data)
    }
}
