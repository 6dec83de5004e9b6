import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// "May this row be sent now?", row by row of the rule's table, and the callers that ask it
/// agreeing: the worker sends exactly what `waitingOn` says is free.
@Suite("The eligibility rule")
struct EligibilityTests {
    static let now = Date(timeIntervalSinceReferenceDate: 800_000_000)
    static let row = OperationID("E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    static let other = OperationID("0B8A3A6E-7E6C-4D2C-9A3F-1F2E3D4C5B6A")!
    static let third = OperationID("5C1B2A39-8F7E-4D6C-8B5A-493827160514")!

    static func facts(
        status: OutboxStatus = .queued, due: Date? = nil, dependencies: [Eligibility.Row] = [],
        head: Eligibility.Row? = nil, paused: Bool = false, session: SessionObservation = .signedIn
    ) -> Eligibility.Facts {
        Eligibility.Facts(
            id: row, status: status, dueAt: due, dependencies: dependencies, laneHead: head,
            engine: Eligibility.Engine(isPaused: paused, pausedAt: paused ? now : nil, session: session), now: now
        )
    }

    static let table: [(String, Eligibility.Facts, Eligibility.Verdict)] = [
        ("queued, nothing holds it", facts(), .ready),
        ("synced", facts(status: .synced), .notQueued),
        ("syncing", facts(status: .syncing), .notQueued),
        ("failed, even with a lane head", facts(status: .failed, head: .init(id: other, status: .queued)), .notQueued),
        ("paused, before everything", facts(dependencies: [.init(id: other, status: .queued)], paused: true), .waiting(.sessionPaused(since: now))),
        ("signed out", facts(session: .signedOut), .waiting(.noSession)),
        ("another account", facts(session: .otherAccount), .waiting(.otherAccount)),
        ("a dependency queued", facts(dependencies: [.init(id: other, status: .queued)]), .waiting(.dependency(other, .queued))),
        ("a dependency unknown", facts(dependencies: [.init(id: other, status: nil)]), .waiting(.dependency(other, nil))),
        ("the first unsynced dependency decides", facts(dependencies: [.init(id: other, status: .synced), .init(id: third, status: .pendingApproval)]),
         .waiting(.dependency(third, .pendingApproval))),
        ("every dependency synced", facts(dependencies: [.init(id: other, status: .synced), .init(id: third, status: .synced)]), .ready),
        ("a dependency waiting, before the lane", facts(dependencies: [.init(id: third, status: .failed)], head: .init(id: other, status: .queued)),
         .waiting(.dependency(third, .failed))),
        ("behind its lane's head", facts(head: .init(id: other, status: .failed)), .waiting(.laneHead(other, .failed))),
        ("its own lane's head", facts(head: .init(id: row, status: .queued)), .ready),
        ("scheduled later", facts(due: now.addingTimeInterval(8)), .waiting(.scheduled(now.addingTimeInterval(8)))),
        ("due now", facts(due: now), .ready),
        ("behind its lane's head and scheduled", facts(due: now.addingTimeInterval(8), head: .init(id: other, status: .queued)),
         .waiting(.laneHead(other, .queued))),
        ("a dependency discarded", facts(dependencies: [.init(id: other, status: .discarded)]), .dependencyEnded(other, .discarded)),
        ("a dependency withdrawn", facts(dependencies: [.init(id: other, status: .withdrawn)]), .dependencyEnded(other, .withdrawn)),
        ("a dependency ended, but behind its lane's head", facts(dependencies: [.init(id: other, status: .discarded)], head: .init(id: third, status: .queued)),
         .waiting(.laneHead(third, .queued))),
        ("a dependency ended, but scheduled later", facts(due: now.addingTimeInterval(4), dependencies: [.init(id: other, status: .discarded)]),
         .waiting(.scheduled(now.addingTimeInterval(4)))),
    ]

    @Test(arguments: table.indices)
    func eachRowOfTheRulesTable(_ index: Int) {
        let (name, facts, expected) = Self.table[index]
        #expect(Eligibility.verdict(facts) == expected, "\(name)")
        // The row's part ignores the engine: what a send that asks the session itself uses.
        if case .waiting(let on) = expected, [.noSession, .otherAccount].contains(on) || facts.engine.isPaused {
            #expect(Eligibility.rowVerdict(facts) != expected, "\(name)")
        } else {
            #expect(Eligibility.rowVerdict(facts) == expected, "\(name)")
        }
    }

    @Test func onlyAWaitingVerdictTellsTheMemberWhatHoldsTheRow() {
        #expect(Eligibility.Verdict.ready.waitingOn == nil)
        #expect(Eligibility.Verdict.notQueued.waitingOn == nil)
        #expect(Eligibility.Verdict.dependencyEnded(Self.other, .discarded).waitingOn == nil)
        #expect(Eligibility.Verdict.waiting(.noSession).waitingOn == .noSession)
    }

    /// Through a real journal: rows held by a lane head, a dependency and a schedule, and one
    /// free. `waitingOn` says which is free, and a pass sends exactly that one.
    @Test func theWorkerSendsExactlyTheRowsWaitingOnSaysAreFree() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.fail(.offline))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        // One row offline: it is rescheduled, and its lane's next row waits behind it.
        let scheduled = try await outbox.enqueue(productRequest(1, entityID: "shelf-a"))
        await outbox.drain()
        let behind = try await outbox.enqueue(productRequest(2, entityID: "shelf-a"))
        var dependent = productRequest(3)
        dependent.dependsOn = [scheduled]
        let waiting = try await outbox.enqueue(dependent)
        let free = try await outbox.enqueue(productRequest(4))
        let rows = try [scheduled, behind, waiting, free].map { try #require(try outbox.operation($0)) }
        guard case .scheduled? = rows[0].waitingOn else { Issue.record("\(String(describing: rows[0].waitingOn))"); return }
        #expect(rows[1].waitingOn == .laneHead(scheduled, .queued))
        #expect(rows[2].waitingOn == .dependency(scheduled, .queued))
        #expect(rows[3].waitingOn == nil)

        transport.script(.respond(.json(201, "{}")))
        let before = transport.requests.count
        await outbox.drain()
        let sent = transport.requests.dropFirst(before).compactMap { $0.headers["Idempotency-Key"] }
        #expect(sent == [free.idempotencyKey])
    }
}
