import Foundation
@testable import Outbox

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
        return try Outbox(directory: directory, transport: server, configuration: configuration)
    }
}
