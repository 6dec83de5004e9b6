import Foundation
import Outbox
import OutboxAudit
import Synchronization

/// A transport whose request reaches the server, after which the app dies before the answer is
/// recorded: the engine is closed mid-attempt, then `afterwards` runs (time passing, the device
/// restarting).
final class DyingTransport: OutboxTransport {
    private let server: any OutboxTransport
    private let afterwards: @Sendable () -> Void
    private let engine = Mutex<Outbox?>(nil)
    private let dead = Atomic<Bool>(false)

    init(server: any OutboxTransport, afterwards: @escaping @Sendable () -> Void) {
        self.server = server
        self.afterwards = afterwards
    }

    /// The engine that dies at the first request.
    func attach(_ outbox: Outbox) {
        engine.withLock { $0 = outbox }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await server.send(request)
        engine.withLock { $0 }?.close()
        afterwards()
        dead.store(true, ordering: .releasing)
        return response
    }

    /// Returns once the app has died: its engine is closed, the journal free to open again (or
    /// once the test's time limit cancels the wait).
    func died() async {
        while !dead.load(ordering: .acquiring), !Task.isCancelled { await Task.yield() }
    }
}
