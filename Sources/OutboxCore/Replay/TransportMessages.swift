public import Foundation

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
