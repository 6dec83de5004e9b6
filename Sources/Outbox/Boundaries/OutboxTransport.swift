public import Foundation

/// Sends one request to the server.
///
/// The engine gives it the stored method, endpoint and payload, byte for byte, with the
/// `Idempotency-Key` header set. Authorization is the transport's business, added at send
/// time: a queued row never holds credentials.
public protocol OutboxTransport: Sendable {
    /// Sends one request.
    /// - Returns: the server's response, whatever its status.
    /// - Throws: when no response arrived (offline, timeout, reset). `URLError`s are classified
    ///   by their code; any other error counts as a failure of class `other`.
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// One request as it goes on the wire.
public struct TransportRequest: Sendable, Equatable {
    public var method: String
    /// The path, e.g. `/products`; the transport resolves it against its base URL.
    public var endpoint: String
    /// Carries `Idempotency-Key` (the operation id) and `Content-Type`.
    public var headers: [String: String]
    public var body: Data

    public init(method: String, endpoint: String, headers: [String: String], body: Data) {
        self.method = method
        self.endpoint = endpoint
        self.headers = headers
        self.body = body
    }
}

/// One response as it came off the wire.
public struct TransportResponse: Sendable, Equatable {
    public var statusCode: Int
    public var headers: [String: String]
    public var body: Data

    public init(statusCode: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
    }

    /// The value of a header, matched without regard to case.
    public func header(_ name: String) -> String? {
        if let exact = headers[name] { return exact }
        let lowered = name.lowercased()
        return headers.first { $0.key.lowercased() == lowered }?.value
    }
}
