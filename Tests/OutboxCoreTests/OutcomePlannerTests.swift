import Foundation
import OutboxCore
import Testing

/// The outcome planner, row by row of its table: what an attempt got, and the events recorded.
@Suite("An attempt's outcome, planned once")
struct OutcomePlannerTests {
    static let now = Date(timeIntervalSinceReferenceDate: 800_000_000)
    static let id = OperationID("E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!

    static func response(_ status: Int, _ json: String = "{}") -> OutcomePlanner.Result {
        .transport(.response(TransportResponse(statusCode: status, headers: ["Content-Type": "application/json"], body: Data(json.utf8))))
    }

    static let conflict = response(412, #"{"code":"revision_conflict","message":"moved","server_revision":"3","current":{"price":14}}"#)

    static func facts(
        attempt: Int = 1, epochAttempts: Int = 0, ageSeconds: TimeInterval = 0, rebases: Int = 0,
        replay: OperationTypePolicy.Replay = .idempotent, rule: OperationTypePolicy.ConflictRule = .askMember,
        retry: OperationTypePolicy.RetryPolicy = .standard, withdraw: Bool = false, pauses: Bool = true
    ) -> OutcomePlanner.Facts {
        OutcomePlanner.Facts(
            operation: id, attempt: AttemptNumber(rawValue: attempt), retryEpochAttempts: epochAttempts,
            retryEpochAgeSeconds: ageSeconds, rebaseCount: rebases, replay: replay, conflictRule: rule,
            retryPolicy: retry, withdrawOnRejection: withdraw, pausesWorker: pauses, now: now
        )
    }

    /// The kinds of events a plan records after `attemptFinished`.
    enum Added: Equatable { case withdrawn, discardedServerWon, rebased(String), sessionPaused }

    struct Row: Sendable {
        var name: String
        var result: OutcomePlanner.Result
        var facts: OutcomePlanner.Facts
        var disposition: Disposition
        var code: String?
        var rescheduled: Bool
        var added: [Added]
    }

    static let giveUpPolicy = OperationTypePolicy.RetryPolicy.standard.givingUp(afterAttempts: 3, orAge: 3_600)

    static let table: [Row] = [
        Row(name: "201", result: response(201), facts: facts(), disposition: .accepted, code: nil, rescheduled: false, added: []),
        Row(name: "202 approval", result: response(202, #"{"request_id":"apr-1"}"#), facts: facts(),
            disposition: .pendingApproval, code: nil, rescheduled: false, added: []),
        Row(name: "offline, within the limits", result: .transport(.noResponse(.offline)), facts: facts(attempt: 2, retry: giveUpPolicy),
            disposition: .transientFailure, code: "offline", rescheduled: true, added: []),
        Row(name: "offline, the attempt limit reached", result: .transport(.noResponse(.offline)), facts: facts(attempt: 3, retry: giveUpPolicy),
            disposition: .gaveUp, code: ErrorCode.gaveUp, rescheduled: false, added: []),
        Row(name: "503, the age limit reached", result: response(503), facts: facts(attempt: 1, ageSeconds: 3_600, retry: giveUpPolicy),
            disposition: .gaveUp, code: ErrorCode.gaveUp, rescheduled: false, added: []),
        Row(name: "503, a person's retry started the limits over", result: response(503),
            facts: facts(attempt: 5, epochAttempts: 3, ageSeconds: 10, retry: giveUpPolicy),
            disposition: .transientFailure, code: "server_unavailable", rescheduled: true, added: []),
        Row(name: "422, sent by the worker", result: response(422, #"{"code":"validation_failed","message":"bad"}"#), facts: facts(),
            disposition: .rejected, code: "validation_failed", rescheduled: false, added: []),
        Row(name: "422, an inline save", result: response(422, #"{"code":"validation_failed","message":"bad"}"#), facts: facts(withdraw: true),
            disposition: .rejected, code: "validation_failed", rescheduled: false, added: [.withdrawn]),
        Row(name: "503, an inline save", result: response(503), facts: facts(withdraw: true),
            disposition: .transientFailure, code: "server_unavailable", rescheduled: true, added: []),
        Row(name: "412, the member decides", result: conflict, facts: facts(),
            disposition: .conflicted, code: "revision_conflict", rescheduled: false, added: []),
        Row(name: "412, the server wins", result: conflict, facts: facts(rule: .serverWins),
            disposition: .conflicted, code: "revision_conflict", rescheduled: false, added: [.discardedServerWon]),
        Row(name: "412, rebase within its times", result: conflict, facts: facts(rebases: 1, rule: .rebase(maxTimes: 2)),
            disposition: .conflicted, code: "revision_conflict", rescheduled: false, added: [.rebased("3")]),
        Row(name: "412, rebase past its times", result: conflict, facts: facts(rebases: 2, rule: .rebase(maxTimes: 2)),
            disposition: .conflicted, code: "revision_conflict", rescheduled: false, added: []),
        Row(name: "412 without a usable revision, rebase", result: response(412, #"{"code":"revision_conflict","server_revision":"a b"}"#),
            facts: facts(rule: .rebase(maxTimes: 2)), disposition: .conflicted, code: "revision_conflict", rescheduled: false, added: []),
        Row(name: "401, pausing", result: response(401), facts: facts(),
            disposition: .unauthorized, code: "unauthorized", rescheduled: false, added: [.sessionPaused]),
        Row(name: "401 in a batch that paused already", result: response(401), facts: facts(pauses: false),
            disposition: .unauthorized, code: "unauthorized", rescheduled: false, added: []),
        Row(name: "409 of a terminal transition", result: response(409, #"{"code":"state_conflict"}"#), facts: facts(replay: .terminalTransition),
            disposition: .replayed, code: "state_conflict", rescheduled: false, added: []),
        Row(name: "not sent: a damaged payload", result: .notSent(Classification(outcome: .notSent, disposition: .blocked, errorCode: ErrorCode.payloadCorrupt)),
            facts: facts(attempt: 9, retry: giveUpPolicy), disposition: .blocked, code: ErrorCode.payloadCorrupt, rescheduled: false, added: []),
    ]

    @Test(arguments: table.indices)
    func eachRowOfThePlannersTable(_ index: Int) throws {
        let row = Self.table[index]
        let plan = OutcomePlanner.plan(row.result, row.facts)
        #expect(plan.classification.disposition == row.disposition, "\(row.name)")
        #expect(plan.classification.errorCode == row.code, "\(row.name)")
        #expect(plan.finished.attempt == row.facts.attempt, "\(row.name)")
        #expect(plan.finished.classification == plan.classification, "\(row.name)")
        #expect((plan.finished.nextAttemptAt != nil) == row.rescheduled, "\(row.name)")
        let added: [Added] = plan.events.dropFirst().map { body in
            switch body {
            case .withdrawn: .withdrawn
            case .discarded(let discarded):
                discarded.reason == .serverWon && discarded.requestedBy == .rule ? .discardedServerWon : .withdrawn
            case .rebased(let rebased): .rebased(rebased.baseRevision)
            case .sessionPaused(let paused):
                paused.triggeredBy == Self.id ? .sessionPaused : .withdrawn
            default: .withdrawn
            }
        }
        #expect(added == row.added, "\(row.name)")
        #expect(plan.pauses == row.added.contains(.sessionPaused), "\(row.name)")
    }

    @Test func aGiveUpSaysHowManyAttemptsAndTheLastAnswer() {
        let plan = OutcomePlanner.plan(.transport(.noResponse(.offline)), Self.facts(attempt: 3, retry: Self.giveUpPolicy))
        let message = plan.classification.errorMessage ?? ""
        #expect(message.contains("after 3 attempts") && message.contains("No connection"))
        #expect(plan.classification.retryAfter == nil)
    }

    @Test func aRetryAfterLaterThanTheBackoffDecidesTheNextMoment() {
        let result = OutcomePlanner.Result.transport(.response(TransportResponse(statusCode: 429, headers: ["Retry-After": "60"])))
        let plan = OutcomePlanner.plan(result, Self.facts())
        #expect(plan.finished.nextAttemptAt == Self.now.addingTimeInterval(60))
    }

    /// What an answer confirms of the records a write changed.
    @Test func anAnswerConfirmsTheRecordItNamesOrTheWritesFirstAndNoneItDidNotChange() {
        let product = RecordKey(business: "pharmacy-7", type: "product", id: "p-1")
        let stock = RecordKey(business: "pharmacy-7", type: "stock", id: "s-1")
        var facts = Self.facts()
        facts.changes = [RecordWrite(key: product, value: Data(#"{"price":1}"#.utf8), schemaVersion: 1),
                         RecordWrite(key: stock, value: Data(#"{"qty":2}"#.utf8), schemaVersion: 1)]
        func plan(_ body: String) -> OutcomePlanner.Plan { OutcomePlanner.plan(Self.response(200, body), facts) }
        let named = plan(#"{"type":"stock","id":"s-1","revision":4,"record":{"qty":3}}"#)
        #expect(named.finished.confirmations.map(\.key) == [stock] && named.storeWrites.first?.revision == 4)
        #expect(named.storeWrites.first?.value == Data(#"{"qty":3}"#.utf8))
        let first = plan(#"{"revision":2}"#)
        #expect(first.finished.confirmations.map(\.key) == [product], "none named: the write's first")
        #expect(first.storeWrites.first?.value == Data(#"{"price":1}"#.utf8), "no record: the value written")
        #expect(plan(#"{"type":"product","id":"other","revision":2}"#).finished.confirmations.isEmpty, "a record it did not change")
        #expect(plan(#"{"record":{"price":1}}"#).finished.confirmations.isEmpty, "no revision: nothing to order the base by")
        let deleted = plan(#"{"type":"product","id":"p-1","revision":5,"deleted":true}"#)
        #expect(deleted.finished.confirmations.first?.valueHash == nil && deleted.storeWrites.first?.value == nil)
        #expect(OutcomePlanner.plan(Self.response(422, #"{"code":"validation_failed"}"#), facts).storeWrites.isEmpty)
    }
}
