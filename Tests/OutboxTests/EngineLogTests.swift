import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage
import OutboxTesting
import Synchronization
import Testing

/// An outbox whose every record, down to trace, goes to `handler`; its storage fails as `faultHook` says.
private func open(
    _ journal: TestJournal, server: some OutboxTransport, handler: InMemoryLogHandler = InMemoryLogHandler(),
    faultHook: LMDBFaultHook? = nil, _ configure: (inout OutboxConfiguration) -> Void = { _ in }
) throws -> Outbox {
    var configuration = journal.configuration()
    configuration.logger = OutboxLogger(label: "outbox", handler: handler)
    configure(&configuration)
    return try Outbox(directory: journal.directory, transport: server, configuration: configuration, faultHook: faultHook).withOpeningRecorded()
}

/// Fails the next storage call of one kind, once each time it is armed.
private final class ArmedFault: Sendable {
    private let armed = Atomic<Bool>(false)
    private let call: LMDBCall
    private let error: LMDBError

    init(_ call: LMDBCall, _ error: LMDBError) {
        self.call = call
        self.error = error
    }

    var hook: LMDBFaultHook {
        LMDBFaultHook { [self] made in made == call && armed.exchange(false, ordering: .relaxed) ? error : nil }
    }

    func arm() {
        armed.store(true, ordering: .relaxed)
    }
}

@Suite("What the engine logs", .timeLimit(.minutes(10)))
struct EngineLogTests {
    @Test func theLifecycleIsLoggedWithIdsCodesAndSeqs() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let handler = InMemoryLogHandler()
        let outbox = try open(journal, server: server, handler: handler)
        defer { outbox.close() }

        let openedSeq = try #require(try outbox.events().first { $0.kind == .journalOpened }?.seq)
        let opened = try #require(handler.records.first { $0.message == "journal opened" })
        #expect(opened.level == .info)
        #expect(opened.metadata["outbox.seq"] == .string("\(openedSeq)"))
        #expect(opened.metadata["outbox.engine_version"] == .string(Outbox.engineVersion))

        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        let finishedSeq = try #require(try outbox.journalEvents(of: id).last?.seq)
        let finished = try #require(handler.records.first { $0.message == "attempt finished" })
        #expect(finished.metadata["outbox.operation"] == .string(id.description))
        #expect(finished.metadata["outbox.operation_type"] == "product.create")
        #expect(finished.metadata["outbox.attempt"] == "1")
        #expect(finished.metadata["outbox.disposition"] == "accepted")
        #expect(finished.metadata["outbox.status_code"] == "201")
        #expect(finished.metadata["outbox.seq"] == .string("\(finishedSeq)"))
        #expect(handler.records.contains { $0.message == "pass started" && $0.metadata["outbox.trigger"] == "drain" })
        #expect(handler.records.contains { $0.message == "pass ended" && $0.metadata["outbox.sent"] == "1" })

        // A 401 pauses the worker; resuming is logged too.
        server.inject(.respond(.error(401, code: "token_expired", message: "Sign in again")))
        let second = try await outbox.enqueue(productRequest(2))
        await outbox.drain()
        let paused = try #require(handler.records.first { $0.message.hasPrefix("worker paused") })
        #expect(paused.level == .notice)
        #expect(paused.metadata["outbox.operation"] == .string(second.description))
        #expect(paused.metadata["outbox.error_code"] == "token_expired")
        try await outbox.resumeSession()
        try await eventually(outbox) { try outbox.operation(second)?.status == .synced }
        #expect(handler.records.contains { $0.level == .info && $0.message.hasPrefix("session resumed") })

        _ = try await outbox.compact(before: .distantFuture)
        let compaction = try #require(handler.records.last { $0.message == "compaction finished" })
        #expect(compaction.level == .info)
        #expect(compaction.metadata["outbox.count"] == "2")
        #expect(compaction.metadata["outbox.reason"] == "requested")

        #expect(!handler.records.contains { $0.level >= .warning }, "nothing went wrong")
        #expect(try outbox.metrics().problems.isEmpty)
    }

    @Test func noRecordHoldsAPayloadALabelASummaryOrTheServersMessage() async throws {
        let markers = ["PAYLOAD-MARKER-7731", "LABEL-MARKER-4410", "SUMMARY-MARKER-9921", "MESSAGE-MARKER-5512"]
        func request(_ number: Int) -> OutboxRequest {
            var request = productRequest(number)
            request.payload = Data(#"{"id":"p-\#(number)","name":"PAYLOAD-MARKER-7731"}"#.utf8)
            request.entityLabel = "LABEL-MARKER-4410 \(number)"
            request.summary = "SUMMARY-MARKER-9921"
            return request
        }
        let journal = TestJournal()
        let server = InMemoryServer()
        let handler = InMemoryLogHandler()
        let outbox = try open(journal, server: server, handler: handler)
        defer { outbox.close() }

        // Accepted, rejected (the server's message echoing the label), held for approval, queued
        // offline and retried, blocked: every outcome the engine logs.
        guard case .synced = try await outbox.save(request(1)) else { throw WaitingError.closedBeforeCondition }
        server.inject(.respond(.error(422, code: "validation_failed", message: "MESSAGE-MARKER-5512: LABEL-MARKER-4410 is taken")))
        guard case .rejected = try await outbox.save(request(2)) else { throw WaitingError.closedBeforeCondition }
        server.inject(.holdForApproval(requestID: "apr-1"))
        _ = try await outbox.save(request(3))
        server.inject(.respond(.error(403, code: "forbidden", message: "MESSAGE-MARKER-5512")))
        _ = try await outbox.enqueue(request(4))
        await outbox.drain()
        server.setOnline(false)
        let queued = try await outbox.enqueue(request(5))
        await outbox.drain()
        server.setOnline(true)
        journal.clock.advance(by: 2)
        try await eventually(outbox) { try outbox.operation(queued)?.status == .synced }

        let records = handler.records
        #expect(records.count > 15, "the run was logged")
        for record in records {
            for marker in markers {
                #expect(!record.text.contains(marker), "\(record.text)")
            }
        }
    }
}

@Suite("Problems the engine meets", .timeLimit(.minutes(10)))
struct ProblemTests {
    @Test func aDamagedPayloadIsLoggedCountedAndKeptAndTheRowBlocked() async throws {
        for fixChecksum in [true, false] {
            let (journal, server, id, _) = try await journalWithTamperedPayload(fixChecksum: fixChecksum)
            let handler = InMemoryLogHandler()
            let outbox = try open(journal, server: server, handler: handler)
            await outbox.drain()
            #expect(try outbox.operationState(id)?.status == .blocked)
            #expect(try outbox.metrics().problems == [.payloadDamaged: 1])
            let problem = try #require(outbox.recentProblems.first)
            #expect(problem.kind == .payloadDamaged && problem.operationID == id)
            #expect(problem.recordedAt == journal.clock.now())
            let record = try #require(handler.records.first { $0.metadata["outbox.problem"] == "payload_damaged" })
            #expect(record.level == .error)
            #expect(record.metadata["outbox.operation"] == .string(id.description))
            #expect(!handler.records.contains { $0.text.contains("Antiseptic") }, "neither the payload nor the label")
            outbox.close()
        }
    }

    @Test func anOutcomeThatCannotBeRecordedIsCountedAndTheRowReplayedOnce() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let fault = ArmedFault(.commit, .io)
        // The first request reaches the server; the commit recording its answer fails.
        let firstSend = Atomic<Bool>(true)
        let transport = ScriptedTransport(otherwise: .handle { request in
            let response = try await server.send(request)
            if firstSend.exchange(false, ordering: .relaxed) { fault.arm() }
            return response
        })
        let handler = InMemoryLogHandler()
        let outbox = try open(journal, server: transport, handler: handler, faultHook: fault.hook)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()

        #expect(try outbox.operationState(id)?.status == .syncing)
        #expect(try outbox.metrics().problems == [.outcomeNotRecorded: 1])
        let problem = try #require(outbox.recentProblems.last)
        #expect(problem.kind == .outcomeNotRecorded && problem.operationID == id)
        #expect(problem.errorDescription.contains("error 5"), "\(problem.errorDescription)")
        let record = try #require(handler.records.first { $0.metadata["outbox.problem"] == "outcome_not_recorded" })
        #expect(record.level == .error)
        #expect(record.metadata["outbox.disposition"] == "accepted", "what the answer was, though it is not in the journal")

        // The next pass abandons the attempt and replays it under the same key: applied once.
        await outbox.drain()
        #expect(try outbox.operationState(id)?.status == .synced)
        #expect(try outbox.journalEvents(of: id).map(\.kind).contains(.attemptAbandoned))
        #expect(server.appliedCount(id.idempotencyKey) == 1)
        #expect(handler.records.contains { $0.message.hasPrefix("interrupted attempt abandoned") })
    }

    @Test func aPassThatCannotReadTheJournalAsksAgainOneCapLater() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let fault = ArmedFault(.beginTransaction, .readersFull)
        let outbox = try open(journal, server: server, faultHook: fault.hook)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        fault.arm()
        await outbox.drain()

        #expect(try outbox.operationState(id)?.attemptCount == 0)
        #expect(try outbox.metrics().problems == [.journalRead: 1])
        #expect(outbox.nextWake == journal.clock.now().addingTimeInterval(300), "not left without a timer")
        journal.clock.advance(by: 300)
        try await eventually(outbox) { try outbox.operationState(id)?.status == .synced }
    }

    @Test func aFailedFlushAtCloseIsKeptAfterTheClose() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let fault = ArmedFault(.sync, .io)
        let handler = InMemoryLogHandler()
        let outbox = try open(journal, server: server, handler: handler, faultHook: fault.hook) { $0.durability = .processCrash }
        let id = try await outbox.enqueue(productRequest(1))
        fault.arm()
        outbox.close()

        #expect(outbox.recentProblems.map(\.kind) == [.flushFailed])
        #expect(handler.records.contains { $0.level == .error && $0.metadata["outbox.problem"] == "flush_failed" })
        let reopened = try journal.open(server: server)
        defer { reopened.close() }
        #expect(try reopened.operationState(id)?.status == .queued, "the commit stayed in the OS's cache")
    }

    @Test func workCutShortByCloseIsNoProblemButALostOutcomeIs() {
        let handler = InMemoryLogHandler()
        let log = EngineLog(logger: OutboxLogger(label: "outbox", handler: handler), clock: ManualClock())
        log.problem(.journalRead, "reading the schedule", error: OutboxError.closed)
        #expect(log.problemCounts.isEmpty)
        #expect(handler.records.map(\.level) == [.debug])
        log.problem(.outcomeNotRecorded, "recording an outcome", error: OutboxError.closed)
        #expect(log.problemCounts == [.outcomeNotRecorded: 1])
        #expect(handler.records.last?.level == .error)
    }

    @Test func onlyTheLatestProblemsAreKeptAndEveryOneIsCounted() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var tally = ProblemTally()
        for second in 0..<40 {
            tally.record(OutboxLogger.Problem(kind: second.isMultiple(of: 4) ? .compactionFailed : .journalRead,
                                       recordedAt: start.addingTimeInterval(Double(second)), operationID: nil, errorDescription: "e"))
        }
        #expect(tally.recent.count == OutboxLogger.Problem.recentLimit)
        #expect(tally.recent.first?.recordedAt == start.addingTimeInterval(8), "the oldest eight were let go")
        #expect(tally.recent.last?.recordedAt == start.addingTimeInterval(39))
        #expect(tally.counts == [.journalRead: 30, .compactionFailed: 10])
    }

    @Test func anErrorFromOutsideTheEngineIsDescribedByItsTypeAlone() {
        struct EchoingError: Error, CustomStringConvertible {
            var description: String { "server said: PAYLOAD-MARKER-7731" }
        }
        let description = OutboxLogger.Problem.describe(EchoingError())
        #expect(!description.contains("PAYLOAD-MARKER"))
        #expect(description.hasSuffix("EchoingError"))
        #expect(OutboxLogger.Problem.describe(OutboxError.storage(code: 5, message: "Input/output error")) == "storage error 5: Input/output error")
    }

    @Test func problemCountsEncodeAsAnObjectKeyedByKind() throws {
        var metrics = try OutboxMetrics.sample()
        metrics.problems = [.journalRead: 2]
        let json = try #require(String(data: JSONEncoder().encode(metrics), encoding: .utf8))
        #expect(json.contains(#""problems":{"journal_read":2}"#), "\(json)")
    }
}

extension OutboxMetrics {
    /// The metrics of a fresh, empty journal.
    static func sample() throws -> OutboxMetrics {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        return try outbox.metrics()
    }
}
