import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage
import OutboxTesting

/// The moment every fixture journal starts at: 2027-01-15T08:00:00Z.
let fixtureStart = Date(timeIntervalSince1970: 1_800_000_000)

/// A product write, distinct per `number`.
func product(_ number: Int, label: String? = nil, category: String = "Products", type: String = "product.create",
             entityID: String? = nil) -> OutboxRequest {
    OutboxRequest(
        businessID: "pharmacy-7",
        operationType: type,
        endpoint: "/products",
        payload: Data(#"{"id":"product-\#(number)","name":"\#(label ?? "Antiseptic \(number)")","price":12.5}"#.utf8),
        entityID: entityID,
        category: category,
        entityLabel: label ?? "Antiseptic \(number)",
        summary: "New product"
    )
}

/// A journal written through the engine, holding an operation of every status.
struct EveryStatusJournal: Sendable {
    let directory: URL
    /// The clock's moment when the engine closed.
    let closedAt: Date
    /// Synced on its third attempt (offline, then a 503, then accepted).
    let synced: OperationID
    let pendingApproval: OperationID
    /// Rejected with a 422.
    let failed: OperationID
    /// Refused with a 403.
    let blocked: OperationID
    /// An inline save the server rejected as invalid.
    let withdrawn: OperationID
    /// Discarded by the member after one failed attempt.
    let discarded: OperationID
    /// One attempt failed offline; scheduled.
    let queued: OperationID
    /// Answered 401: queued with no schedule, the worker paused.
    let paused: OperationID
    /// An attempt started with no outcome (the app was killed mid-request).
    let syncing: OperationID

    var all: [OperationID] { [synced, pendingApproval, failed, blocked, withdrawn, discarded, queued, paused, syncing] }

    /// Writes the journal into `directory` and closes the engine.
    static func write(into directory: URL) async throws -> EveryStatusJournal {
        let clock = ManualClock(now: fixtureStart)
        let server = InMemoryServer()
        let outbox = try Outbox(
            directory: directory, transport: server,
            configuration: OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash, appVersion: "2.3.1")
        )
        // Offline, then a 503, then accepted: synced on attempt 3.
        server.setOnline(false)
        let synced = try await outbox.enqueue(product(1, label: "Antiseptic 500 ml"))
        await outbox.drain()
        server.setOnline(true)
        server.inject(.respond(.error(503, code: "server_unavailable", message: "Try again later")))
        clock.advance(by: 2)
        await outbox.drain()
        clock.advance(by: 4)
        await outbox.drain()

        clock.advance(by: 3600)
        server.inject(.holdForApproval(requestID: "apr-7"))
        let pendingApproval = try await outbox.enqueue(product(2, label: "Chidi Okafor", category: "Employees", type: "employee.create"))
        await outbox.drain()

        server.inject(.respond(.error(422, code: "validation_failed", message: "Price must be positive")))
        let failed = try await outbox.enqueue(product(3))
        await outbox.drain()

        server.inject(.respond(.error(403, code: "forbidden", message: "Only the owner may add products")))
        let blocked = try await outbox.enqueue(product(4))
        await outbox.drain()

        server.inject(.respond(.error(422, code: "validation_failed", message: "Name is required")))
        guard case .rejected = try await outbox.save(product(5)) else { throw FixtureError.unexpected("the save was not rejected") }
        let withdrawn = try requireSingleElement(try outbox.operations(matching: OperationQuery(statuses: [.withdrawn])).operations).id

        server.setOnline(false)
        let discarded = try await outbox.enqueue(product(6))
        await outbox.drain()
        try await outbox.discard(discarded)

        clock.advance(by: 600)
        let queued = try await outbox.enqueue(product(7, entityID: "shelf-3"))
        await outbox.drain()

        // A 401: the worker pauses, the row stays queued with no schedule.
        server.setOnline(true)
        server.inject(.respond(.error(401, code: "token_expired", message: "Sign in again")))
        let paused = try await outbox.enqueue(product(8))
        await outbox.drain()
        guard try outbox.engineState().isPaused else { throw FixtureError.unexpected("the worker did not pause") }

        // The worker is paused, so nothing races this hand-written start: an attempt in flight.
        clock.advance(by: 60)
        let syncing = try await outbox.appendEnqueued(product(9))
        _ = try await outbox.writer.append([JournalStore.Draft(
            operationID: syncing, body: .attemptStarted(AttemptStarted(attempt: 1, trigger: .drain))
        )])
        let closedAt = clock.now()
        outbox.close()
        return EveryStatusJournal(directory: directory, closedAt: closedAt, synced: synced, pendingApproval: pendingApproval,
                                  failed: failed, blocked: blocked, withdrawn: withdrawn, discarded: discarded,
                                  queued: queued, paused: paused, syncing: syncing)
    }

    /// The status each operation ends with.
    var expectedStatuses: [OperationID: OutboxStatus] {
        [synced: .synced, pendingApproval: .pendingApproval, failed: .failed, blocked: .blocked, withdrawn: .withdrawn,
         discarded: .discarded, queued: .queued, paused: .queued, syncing: .syncing]
    }
}

enum FixtureError: Error {
    case unexpected(String)
}

/// The only element of `items`.
func requireSingleElement<T>(_ items: [T]) throws -> T {
    guard items.count == 1, let only = items.first else { throw FixtureError.unexpected("expected one element, got \(items.count)") }
    return only
}

/// A small journal: `count` products enqueued offline, engine closed.
func writeQueuedJournal(into directory: URL, count: Int, clock: ManualClock = ManualClock(now: fixtureStart)) async throws -> [OperationID] {
    let outbox = try Outbox(directory: directory, transport: ScriptedTransport(otherwise: .fail(.offline)),
                            configuration: OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
    var ids: [OperationID] = []
    for number in 0..<count {
        ids.append(try await outbox.enqueue(product(number)))
        clock.advance(by: 60)
    }
    outbox.close()
    return ids
}

/// A journal as a busy day leaves it: `operations` products, most synced (some after offline
/// attempts), some failed (422), some discarded, then 12 left queued offline, and the oldest
/// settled ones compacted: several hundred events over a tree of several LMDB pages. Engine closed.
func writeBusyJournal(into directory: URL, operations: Int = 120) async throws -> [OperationID] {
    let clock = ManualClock(now: fixtureStart)
    let server = InMemoryServer()
    let outbox = try Outbox(directory: directory, transport: server,
                            configuration: OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
    var ids: [OperationID] = []
    for number in 0..<operations {
        let request = product(number, entityID: "shelf-\(number)")
        switch number % 6 {
        case 3:
            server.setOnline(true)
            server.inject(.respond(.error(422, code: "validation_failed", message: "Price must be positive")))
            ids.append(try await outbox.enqueue(request))
        case 4:
            server.setOnline(false)
            ids.append(try await outbox.enqueue(request))
        case 5:
            server.setOnline(false)
            let id = try await outbox.enqueue(request)
            await outbox.drain()
            try await outbox.discard(id)
            ids.append(id)
        default:
            server.setOnline(true)
            ids.append(try await outbox.enqueue(request))
        }
        await outbox.drain()
        clock.advance(by: 60)
    }
    // The last few stay queued: the device went offline for good.
    server.setOnline(false)
    for number in operations..<operations + 12 {
        ids.append(try await outbox.enqueue(product(number, entityID: "shelf-\(number)")))
        await outbox.drain()
        clock.advance(by: 60)
    }
    clock.advance(by: 3600)
    try await outbox.compact(before: fixtureStart.addingTimeInterval(Double(operations) * 15))
    outbox.close()
    return ids
}
