import Foundation

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
