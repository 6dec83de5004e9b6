import Foundation
import OutboxCore
import OutboxWire
import Testing

/// The fold, table-driven: every status against every kind of event.
@Suite("The fold")
struct FoldTests {
    static let id = Samples.id
    static let moment = Samples.moment

    /// A state of the given status, as if reached by legal events, with `attempts` started.
    static func state(_ status: OutboxStatus, attempts: Int = 1) -> OperationState {
        var state = OperationState(id: id, seq: 1, recordedAt: moment, enqueued: Samples.enqueued())
        state.status = status
        state.attemptCount = status == .queued ? attempts - 1 : attempts
        state.latestSeq = 10
        return state
    }

    static func event(_ body: JournalEventBody, seq: JournalSequence = 11) -> JournalEvent {
        JournalEvent(seq: seq, operationID: id, recordedAt: moment.addingTimeInterval(60), body: body)
    }

    static func finished(_ disposition: Disposition, attempt: AttemptNumber = 1) -> JournalEventBody {
        .attemptFinished(AttemptFinished(
            attempt: attempt, outcome: .response(statusCode: 500), disposition: disposition,
            errorCode: "code", errorMessage: "message", approvalRequestID: "apr-1",
            nextAttemptAt: moment.addingTimeInterval(2)
        ))
    }

    /// Every (status, event) pair the fold allows, and the status it leads to.
    static let legal: [(from: OutboxStatus, body: JournalEventBody, to: OutboxStatus)] = [
        (.queued, .attemptStarted(AttemptStarted(attempt: 1, trigger: .appLaunch)), .syncing),
        (.syncing, finished(.accepted), .synced),
        (.syncing, finished(.replayed), .synced),
        (.syncing, finished(.pendingApproval), .pendingApproval),
        (.syncing, finished(.transientFailure), .queued),
        (.syncing, finished(.unauthorized), .queued),
        (.syncing, finished(.rejected), .failed),
        (.syncing, finished(.blocked), .blocked),
        (.syncing, .attemptAbandoned(AttemptAbandoned(attempt: 1)), .queued),
        (.failed, .withdrawn(Withdrawn(errorCode: "validation_failed", errorMessage: "bad")), .withdrawn),
        (.failed, .requeued(Requeued(requestedBy: .member)), .queued),
        (.blocked, .requeued(Requeued(requestedBy: .member)), .queued),
        (.queued, .discarded(Discarded(requestedBy: .member, reason: .memberDiscarded)), .discarded),
        (.failed, .discarded(Discarded(requestedBy: .member, reason: .memberDiscarded)), .discarded),
        (.blocked, .discarded(Discarded(requestedBy: .app, reason: .signOut)), .discarded),
        (.pendingApproval, .approvalDecided(ApprovalDecided(approved: true, reference: nil)), .synced),
        (.pendingApproval, .approvalDecided(ApprovalDecided(approved: false, reference: nil)), .failed),
        (.syncing, finished(.conflicted), .conflicted),
        (.syncing, finished(.gaveUp), .failed),
        (.conflicted, .discarded(Discarded(requestedBy: .member, reason: .memberDiscarded)), .discarded),
        (.conflicted, .rebased(Rebased(baseRevision: "r8")), .queued),
        (.failed, .superseded(Superseded(by: otherID, reason: .revised)), .superseded),
        (.blocked, .superseded(Superseded(by: otherID, reason: .revised)), .superseded),
        (.conflicted, .superseded(Superseded(by: otherID, reason: .revised)), .superseded),
        (.queued, .dependencyEnded(DependencyEnded(dependency: otherID, status: .discarded)), .blocked),
    ]

    static let otherID = OperationID("0E621E1F-C36C-495A-93FC-0C247A3E6E5F")!

    /// One representative body of each operation event kind but `enqueued`.
    static let representatives: [JournalEventBody] = [
        .attemptStarted(AttemptStarted(attempt: 1, trigger: .appLaunch)),
        finished(.accepted),
        .attemptAbandoned(AttemptAbandoned(attempt: 1)),
        .withdrawn(Withdrawn(errorCode: "validation_failed", errorMessage: "bad")),
        .requeued(Requeued(requestedBy: .member)),
        .discarded(Discarded(requestedBy: .member, reason: .memberDiscarded)),
        .approvalDecided(ApprovalDecided(approved: true, reference: nil)),
        .superseded(Superseded(by: otherID, reason: .revised)),
        .rebased(Rebased(baseRevision: "r8")),
        .dependencyEnded(DependencyEnded(dependency: otherID, status: .discarded)),
    ]

    @Test func enqueueStartsAnOperationQueuedAndDueNow() throws {
        let event = Self.event(.enqueued(Samples.enqueued()), seq: 1)
        let state = try Fold.apply(event, to: nil)
        #expect(state.status == .queued)
        #expect(state.nextAttemptAt == nil)
        #expect(state.attemptCount == 0)
        #expect(state.firstSeq == 1 && state.latestSeq == 1)
        #expect(state.payloadByteCount == Samples.request().payload.count)
    }

    @Test func everyLegalTransitionLeadsWhereTheTableSays() throws {
        for (from, body, to) in Self.legal {
            let next = try Fold.apply(Self.event(body), to: Self.state(from))
            #expect(next.status == to, "\(from) + \(body.kind)")
            #expect(next.latestSeq == 11)
        }
    }

    @Test func everyOtherPairIsRefusedNamingTheOperationStatusAndEvent() {
        let legalPairs = Set(Self.legal.map { "\($0.from)/\($0.body.kind)" })
        for status in OutboxStatus.allCases {
            for body in Self.representatives + [.enqueued(Samples.enqueued())] {
                guard !legalPairs.contains("\(status)/\(body.kind)") else { continue }
                #expect {
                    try Fold.apply(Self.event(body), to: Self.state(status))
                } throws: { error in
                    guard case OutboxError.illegalTransition(let operation, let from, let kind, _) = error else { return false }
                    return operation == Self.id && from == status && kind == body.kind
                }
            }
        }
    }

    @Test func aQueuedEditOfARecordDeletedOnTheServerTurnsConflictedItsChangeKept() throws {
        var queued = Self.state(.queued)
        queued.records = [Samples.record]
        queued.nextAttemptAt = Self.moment.addingTimeInterval(30)
        let next = try Fold.apply(Self.event(.deletedOnServer(DeletedOnServer(key: Samples.record, revision: 5))), to: queued)
        #expect(next.status == .conflicted)
        #expect(next.lastErrorCode == ErrorCode.deletedOnServer)
        #expect(next.serverRevision == "5" && next.serverCurrent == nil && next.nextAttemptAt == nil)
        #expect(next.records == [Samples.record], "the write still changes the record: its change stays on screen")
        #expect(next.rolledBackSeq == nil, "conflicted is not rolled back")
    }

    @Test func onlyAQueuedWriteOfTheRecordLearnsItWasDeletedOnTheServer() {
        let deleted = JournalEventBody.deletedOnServer(DeletedOnServer(key: Samples.record, revision: 5))
        for status in OutboxStatus.allCases where status != .queued {
            var state = Self.state(status)
            state.records = [Samples.record]
            #expect(throws: OutboxError.self, "\(status)") { try Fold.apply(Self.event(deleted), to: state) }
        }
        var otherRecord = Self.state(.queued)
        otherRecord.records = [RecordKey(business: "pharmacy-7", type: "product", id: "other")]
        #expect {
            try Fold.apply(Self.event(deleted), to: otherRecord)
        } throws: { error in
            guard case OutboxError.illegalTransition(_, .queued, .deletedOnServer, let reason) = error else { return false }
            return reason.contains("did not change")
        }
    }

    @Test func theStateListsTheSeqOfEveryEventItFolded() throws {
        var state: OperationState?
        let bodies: [JournalEventBody] = [
            .enqueued(Samples.enqueued()),
            .attemptStarted(AttemptStarted(attempt: 1, trigger: .appLaunch)),
            Self.finished(.transientFailure),
            .attemptStarted(AttemptStarted(attempt: 2, trigger: .timer)),
            Self.finished(.accepted, attempt: 2),
        ]
        let seqs: [JournalSequence] = [3, 8, 9, 20, 21]
        for (body, seq) in zip(bodies, seqs) { try Fold.apply(Self.event(body, seq: seq), to: &state) }
        #expect(state?.eventSeqs == seqs)
        #expect(state?.firstSeq == 3 && state?.latestSeq == 21)
    }

    /// A read that only shows a row leaves the event seqs unread: everything else decodes the
    /// same, and a list that cannot fit is refused all the same.
    @Test func aStateDecodedToShowIsTheWholeStateWithoutItsEventSeqs() throws {
        var state: OperationState?
        let bodies: [JournalEventBody] = [
            .enqueued(Samples.enqueued()),
            .attemptStarted(AttemptStarted(attempt: 1, trigger: .appLaunch)),
            Self.finished(.transientFailure),
        ]
        for (body, seq) in zip(bodies, [3, 8, 9] as [JournalSequence]) { try Fold.apply(Self.event(body, seq: seq), to: &state) }
        let whole = try #require(state)
        let bytes = StateCodec.encode(whole)
        var expected = whole
        expected.eventSeqs = []
        #expect(try StateCodec.decode(bytes) == whole)
        #expect(try StateCodec.decode(bytes, eventSeqs: false) == expected)
        #expect(throws: DecodingProblem.self) { try StateCodec.decode(Array(bytes.dropLast()), eventSeqs: false) }
        #expect(throws: DecodingProblem.self) { try StateCodec.decode(bytes + [0], eventSeqs: false) }
    }

    @Test func aRefusedEventLeavesTheStateInPlaceUntouched() throws {
        var state: OperationState? = Self.state(.queued)
        let before = state
        #expect(throws: OutboxError.self) {
            try Fold.apply(Self.event(Self.finished(.accepted)), to: &state)
        }
        #expect(state == before)
    }

    @Test func anOperationEventBeforeEnqueueIsRefused() {
        for body in Self.representatives {
            #expect(throws: OutboxError.self) { try Fold.apply(Self.event(body), to: nil) }
        }
    }

    @Test func attemptsMustBeNumberedInOrder() {
        #expect(throws: OutboxError.self) {
            try Fold.apply(Self.event(.attemptStarted(AttemptStarted(attempt: 3, trigger: .timer))), to: Self.state(.queued))
        }
        #expect(throws: OutboxError.self) {
            try Fold.apply(Self.event(Self.finished(.accepted, attempt: 2)), to: Self.state(.syncing))
        }
        #expect(throws: OutboxError.self) {
            try Fold.apply(Self.event(.attemptAbandoned(AttemptAbandoned(attempt: 2))), to: Self.state(.syncing))
        }
    }

    @Test func aSeqThatDoesNotAdvanceIsRefused() {
        let body = JournalEventBody.attemptStarted(AttemptStarted(attempt: 1, trigger: .timer))
        #expect(throws: OutboxError.self) { try Fold.apply(Self.event(body, seq: 10), to: Self.state(.queued)) }
    }

    @Test func dispositionsSetAndClearTheErrorAndSchedule() throws {
        let retry = try Fold.apply(Self.event(Self.finished(.transientFailure)), to: Self.state(.syncing))
        #expect(retry.nextAttemptAt == Self.moment.addingTimeInterval(2))
        #expect(retry.lastErrorCode == "code" && retry.lastErrorMessage == "message")
        #expect(retry.latestOutcome == .transientFailure)

        let paused = try Fold.apply(Self.event(Self.finished(.unauthorized)), to: Self.state(.syncing))
        #expect(paused.status == .queued && paused.nextAttemptAt == nil)

        var failing = Self.state(.syncing)
        failing.lastErrorCode = "old"
        let synced = try Fold.apply(Self.event(Self.finished(.accepted)), to: failing)
        #expect(synced.lastErrorCode == nil && synced.lastErrorMessage == nil)
        #expect(synced.approvalRequestID == nil)

        let held = try Fold.apply(Self.event(Self.finished(.pendingApproval)), to: Self.state(.syncing))
        #expect(held.approvalRequestID == "apr-1")

        let abandoned = try Fold.apply(Self.event(.attemptAbandoned(AttemptAbandoned(attempt: 1))), to: Self.state(.syncing))
        #expect(abandoned.nextAttemptAt == nil && abandoned.latestOutcome == .abandoned)
    }

    @Test func aRejectedApprovalFailsWithAReason() throws {
        let rejected = try Fold.apply(
            Self.event(.approvalDecided(ApprovalDecided(approved: false, reference: "r"))),
            to: Self.state(.pendingApproval)
        )
        #expect(rejected.status == .failed)
        #expect(rejected.lastErrorCode == ErrorCode.approvalRejected)
        #expect(rejected.latestOutcome == .rejected)
    }

    @Test func engineStateFoldsPausesAndOpens() {
        var engine = EngineState()
        func apply(_ body: JournalEventBody) {
            engine = engine.applying(JournalEvent(seq: 1, operationID: nil, recordedAt: Self.moment, body: body))
        }
        apply(.journalOpened(JournalOpened(formatVersion: 1, engineVersion: "0.1.0", appVersion: nil)))
        apply(.sessionPaused(SessionPaused(reason: "unauthorized", triggeredBy: Self.id)))
        #expect(engine.isPaused && engine.pausedBy == Self.id && engine.openCount == 1)
        apply(.sessionResumed)
        #expect(!engine.isPaused && engine.pauseReason == nil)
    }
}
