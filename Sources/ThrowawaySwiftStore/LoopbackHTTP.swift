public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// An answer from the store.
public struct SwiftStoreResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The headers, each name as the server sent it.
    public var headers: [String: String]
    public var body: Data

    /// The value of the header `name`, whatever its case.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Blocking HTTP requests to the store over loopback, for its start and its setup calls, which
/// run where no `await` is possible (a test process's shared store starts in a `static let`).
enum LoopbackHTTP {
    /// A hang guard, never a timing: the store answers loopback requests in milliseconds, but
    /// beside the other tests on two busy cores one may wait for a core much longer.
    static let timeoutSeconds: TimeInterval = 120

    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeoutSeconds
        configuration.timeoutIntervalForResource = timeoutSeconds
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        return URLSession(configuration: configuration)
    }()

    /// Sends one request and waits for its answer.
    /// - Throws: the `URLError` of a request that got no answer (refused, timed out).
    static func send(_ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil) throws -> SwiftStoreResponse {
        var request = URLRequest(url: url, timeoutInterval: timeoutSeconds)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        // A fresh connection per request: on Linux, URLSession resends a request whose reused
        // connection the server closed, without its body (see URLSessionTransport).
        request.setValue("close", forHTTPHeaderField: "Connection")
        if let body { request.httpBody = body }
        let answer = Answer()
        session.dataTask(with: request) { data, response, error in
            let result: Result<SwiftStoreResponse, any Error>
            if let http = response as? HTTPURLResponse {
                var headers: [String: String] = [:]
                for (name, value) in http.allHeaderFields {
                    if let name = name as? String, let value = value as? String { headers[name] = value }
                }
                result = .success(SwiftStoreResponse(status: http.statusCode, headers: headers, body: data ?? Data()))
            } else {
                result = .failure(error ?? URLError(.badServerResponse))
            }
            answer.result.withLock { $0 = result }
            answer.done.signal()
        }.resume()
        answer.done.wait()
        return try answer.result.withLock { $0! }.get()
    }

    private final class Answer: Sendable {
        let result = Mutex<Result<SwiftStoreResponse, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
    }
}
