import Foundation

/// Runs blocking work on a thread of its own, so that a test blocked on a socket never holds
/// one of Swift concurrency's few threads (the server may be waiting for the test's next step).
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// Sends one request on a fresh connection and reads its response.
func exchange(_ port: UInt16, _ text: String) async throws -> RawResponse {
    try await onThread {
        let connection = try RawConnection(port: port)
        try connection.send(text)
        return try connection.readResponse()
    }
}

/// Sends `text` on a fresh connection and reads until the server closes it.
func exchangeUntilClosed(_ port: UInt16, _ text: String) async throws -> [UInt8] {
    try await onThread {
        let connection = try RawConnection(port: port)
        try connection.send(text)
        return try connection.readUntilClosed()
    }
}
