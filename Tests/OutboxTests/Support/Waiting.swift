import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Synchronization

/// Waits, without waiting on real time, until `condition` holds: it is checked now and after
/// every commit of the outbox.
func eventually(_ outbox: Outbox, _ condition: () throws -> Bool) async throws {
    let changes = outbox.changes()
    if try condition() { return }
    for await _ in changes {
        if try condition() { return }
    }
    throw WaitingError.closedBeforeCondition
}

enum WaitingError: Error {
    case closedBeforeCondition
}

extension TestJournal {
    /// An outbox whose transport is `server`, with a session that can sign out.
    func open(server: some OutboxTransport, session: (any OutboxSession)? = nil,
              _ configure: (inout OutboxConfiguration) -> Void = { _ in }) throws -> Outbox {
        var configuration = configuration()
        if let session { configuration.session = session }
        configure(&configuration)
        return try Outbox(directory: directory, transport: server, configuration: configuration).withOpeningRecorded()
    }

    /// Enqueues one write and drains it through a transport that closes the outbox in the middle
    /// of its attempt, as the process ending would: after `server` applied the write when
    /// `applied`, before the request reached it otherwise. The row is left `syncing`.
    func interruptAnAttempt(on server: InMemoryServer, applied: Bool,
                            _ configure: (inout OutboxConfiguration) -> Void = { _ in }) async throws -> OperationID {
        let outboxBox = Mutex<Outbox?>(nil)
        let dying = ScriptedTransport(otherwise: .handle { request in
            let response = applied ? try await server.send(request) : nil
            outboxBox.withLock { $0 }?.close()
            guard let response else { throw URLError(.cancelled) }
            return response
        })
        let outbox = try open(server: dying, configure)
        outboxBox.withLock { $0 = outbox }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        return id
    }
}
