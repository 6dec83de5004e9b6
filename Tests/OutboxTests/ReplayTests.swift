import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage
import OutboxTesting
import Synchronization
import Testing

@Suite("The replay worker", .timeLimit(.minutes(10)))
struct ReplayTests {
    @Test func aScriptThatRunsOutAnswersItsOtherwiseAndCountsIt() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(.json(201, "{}")))
        let request = TransportRequest(method: "POST", endpoint: "/products", headers: [:], body: Data())
        #expect(try await transport.send(request).statusCode == 201)
        #expect(transport.unscriptedRequests == 0)
        await #expect(throws: URLError.self) { try await transport.send(request) }
        #expect(transport.unscriptedRequests == 1 && transport.requests.count == 2)
    }

    @Test func aQueuedWriteIsSentOnceWithItsKeyAndStoredBytes() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let request = productRequest(1)
        let id = try await outbox.enqueue(request)
        await outbox.drain()

        let row = try #require(try outbox.operation(id))
        #expect(row.status == .synced)
        #expect(row.attemptCount == 1)
        #expect(row.latestOutcome == .accepted)
        #expect(row.serverRevision == "1")
        let sent = try #require(server.requests.first)
        #expect(sent.headers["Idempotency-Key"] == id.uuid.uuidString)
        #expect(sent.body == request.payload)
        #expect(sent.method == "POST" && sent.endpoint == "/products")
        #expect(sent.headers["Outbox-Payload-Version"] == "1")
        #expect(sent.headers["Authorization"] == nil, "no credentials are stored with a row")
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished])
    }

    @Test func aLostResponseIsRetriedUnderTheSameKeyAndAppliedOnce() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.applyThenDropResponse)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        let first = try #require(try outbox.operation(id))
        #expect(first.status == .queued)
        #expect(first.nextAttemptAt == journal.clock.now().addingTimeInterval(2))
        #expect(first.lastErrorCode == "no_response")

        journal.clock.advance(by: 2)
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .synced)
        #expect(row.latestOutcome == .replayed)
        #expect(server.appliedCount(id.idempotencyKey) == 1)
        #expect(server.records.count == 1)
        let requests = server.requests
        #expect(requests.count == 2)
        #expect(requests[0].headers["Idempotency-Key"] == requests[1].headers["Idempotency-Key"])
        #expect(requests[0].body == requests[1].body)
    }

    @Test func theBackoffFollowsTheScheduleWhileTheNetworkIsDown() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        var delays: [Double] = []
        for _ in 0..<11 {
            await outbox.drain()
            let row = try #require(try outbox.operation(id))
            let next = try #require(row.nextAttemptAt)
            delays.append(next.timeIntervalSince(journal.clock.now()))
            journal.clock.set(to: next)
        }
        #expect(delays == [2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300])
        #expect(try outbox.operation(id)?.attemptCount == 11)
    }

    @Test func twoWritesToOneEntityAreSentInOrder() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server) { $0.maxConcurrentLanes = 4 }
        defer { outbox.close() }
        let first = try await outbox.enqueue(productRequest(1, entityID: "shelf-1"))
        let second = try await outbox.enqueue(productRequest(2, entityID: "shelf-1"))
        await outbox.drain()
        #expect(try outbox.operation(first)?.attemptCount == 1)
        #expect(try outbox.operation(second)?.attemptCount == 0, "the later write waits for the earlier one")

        server.setOnline(true)
        journal.clock.advance(by: 2)
        await outbox.drain()
        #expect(server.records.map(\.key) == [first.idempotencyKey, second.idempotencyKey])
        #expect(try outbox.operation(second)?.status == .synced)
    }

    @Test func aFailedHeadBlocksOnlyItsOwnLane() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(.error(422, code: "validation_failed", message: "Price must be positive")))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let head = try await outbox.enqueue(productRequest(1, entityID: "shelf-1"))
        let behind = try await outbox.enqueue(productRequest(2, entityID: "shelf-1"))
        let other = try await outbox.enqueue(productRequest(3, entityID: "shelf-2"))
        await outbox.drain()
        let failed = try #require(try outbox.operation(head))
        #expect(failed.status == .failed)
        #expect(failed.lastErrorMessage == "Price must be positive")
        #expect(try outbox.operation(behind)?.status == .queued)
        #expect(try outbox.operation(behind)?.attemptCount == 0)
        #expect(try outbox.operation(other)?.status == .synced)
    }

    @Test func aPoisonRowFailsAndTheRestOfTheQueueDrains() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 0..<5 { ids.append(try await outbox.enqueue(productRequest(number))) }
        server.inject(.apply, .respond(.error(422, code: "validation_failed", message: "Bad")))
        await outbox.drain()
        let statuses = try ids.map { try outbox.operation($0)?.status }
        #expect(statuses == [.synced, .failed, .synced, .synced, .synced])
    }

    @Test func aFourOhOneMidPassPausesWithRowsQueuedAndNothingScheduled() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 0..<4 { ids.append(try await outbox.enqueue(productRequest(number))) }
        server.inject(.apply, .respond(.error(401, code: "token_expired", message: "Sign in again")))
        await outbox.drain()
        #expect(try outbox.operation(ids[0])?.status == .synced)
        let paused = try #require(try outbox.operation(ids[1]))
        #expect(paused.status == .queued && paused.nextAttemptAt == nil)
        #expect(paused.lastErrorCode == "token_expired")
        #expect(try outbox.operation(ids[2])?.attemptCount == 0, "the pass stopped at the 401")
        #expect(try outbox.engineState().isPaused)
        let pause = try #require(try outbox.workerPause(), "the app is shown the pause")
        #expect(pause.reason == "token_expired" && pause.triggeredBy == ids[1] && pause.since != nil)
        #expect(outbox.nextWake == nil)
        #expect(server.requests.count == 2)

        // Still paused: a wake sends nothing.
        await outbox.drain()
        #expect(server.requests.count == 2)

        try await outbox.resumeSession()
        try await eventually(outbox) { try ids.allSatisfy { try outbox.operation($0)?.status == .synced } }
        #expect(try !outbox.engineState().isPaused)
        #expect(try outbox.workerPause() == nil)
        #expect(server.records.count == 4)
    }

    @Test func signingOutMidBatchStopsBeforeTheNextRow() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let session = SwitchableSession(account: journal.account)
        let transport = ScriptedTransport(otherwise: .handle { request in
            session.signOut()
            return try await server.send(request)
        })
        let outbox = try journal.open(server: transport, session: session)
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 0..<3 { ids.append(try await outbox.enqueue(productRequest(number))) }
        await outbox.drain()
        #expect(transport.requests.count == 1)
        #expect(try outbox.operation(ids[0])?.status == .synced)
        #expect(try ids.dropFirst().allSatisfy { try outbox.operation($0)?.attemptCount == 0 })
    }

    @Test func aSignedOutWorkerAsksAgainOneCapLaterAndNeverSpins() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let session = SwitchableSession(account: nil)
        let outbox = try journal.open(server: server, session: session)
        defer { outbox.close() }
        _ = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        #expect(server.requests.isEmpty)
        #expect(outbox.nextWake == journal.clock.now().addingTimeInterval(300))

        // Signed in again and no wake at all: the timer's next pass finds the session back.
        session.signIn(journal.account)
        journal.clock.advance(by: 300)
        try await eventually(outbox) { server.records.count == 1 }
    }

    @Test func theTimerFindsALaneHeadBehindManyBlockedRows() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(.error(403, code: "not_owner", message: "Ask the owner")))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        // A blocked head holds its lane: the seventy rows behind it stay due now, first in the
        // schedule, and must not hide the one row that can go.
        _ = try await outbox.enqueue(productRequest(0, entityID: "shelf-1"))
        await outbox.drain()
        for number in 1...70 { _ = try await outbox.enqueue(productRequest(number, entityID: "shelf-1")) }
        server.inject(.respond(.error(503, code: "maintenance", message: "Back soon")))
        let free = try await outbox.enqueue(productRequest(100, entityID: "shelf-2"))
        await outbox.drain()
        #expect(try outbox.operation(free)?.status == .queued)
        #expect(outbox.nextWake == journal.clock.now().addingTimeInterval(2))
    }

    @Test func nothingIsSentUnderAnotherAccount() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let session = SwitchableSession(account: "member-7")
        let outbox = try journal.open(server: server, session: session)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        #expect(server.requests.isEmpty)
        #expect(try outbox.operation(id)?.attemptCount == 0)

        session.signIn(journal.account)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
    }

    @Test func theTimerSendsWhenOnlyTheServerComesBack() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(.error(503, code: "maintenance", message: "Back soon")))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        outbox.wake(.appLaunch)
        try await eventually(outbox) { try outbox.operation(id)?.attemptCount == 1 && outbox.operation(id)?.status == .queued }
        await journal.clock.waitForSleepers(1)
        #expect(outbox.nextWake == journal.clock.now().addingTimeInterval(2))

        // No wake signal at all: the server alone came back, and the timer finds it.
        journal.clock.advance(by: 2)
        try await eventually(outbox) { try outbox.operation(id)?.status == .synced }
        let started = try outbox.journalEvents(of: id).compactMap { event -> WakeReason? in
            if case .attemptStarted(let started) = event.body { return started.trigger }
            return nil
        }
        #expect(started.last == .timer)
    }

    @Test func theClockMovedBackSixHoursStrandsNothing() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        await outbox.drain()
        let scheduled = try #require(try outbox.operation(id)?.nextAttemptAt)

        let rewound = journal.clock.now().addingTimeInterval(-6 * 3600)
        journal.clock.set(to: rewound)
        server.setOnline(true)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .queued, "not due yet by its stored moment")
        let wake = try #require(outbox.nextWake)
        #expect(wake == rewound.addingTimeInterval(300), "due at most one cap from when it was seen")
        #expect(wake < scheduled)

        journal.clock.advance(by: 300)
        try await eventually(outbox) { try outbox.operation(id)?.status == .synced }
    }

    @Test func theClockMovedForwardSixHoursReordersNothing() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 0..<4 {
            ids.append(try await outbox.enqueue(productRequest(number)))
            await outbox.drain()
            journal.clock.advance(by: 1)
        }
        journal.clock.advance(by: 6 * 3600)
        server.setOnline(true)
        await outbox.drain()
        #expect(server.records.map(\.key) == ids.map(\.idempotencyKey))
    }

    @Test func aTerminalTransitionsConflictSettlesAsReplayed() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.inject(.respond(.error(409, code: "invalid_state", message: "Already delivered")))
        let outbox = try journal.open(server: server) { $0.operationPolicies = ["dispatch.deliver": .terminalTransition] }
        defer { outbox.close() }
        var request = productRequest(1)
        request.operationType = "dispatch.deliver"
        request.endpoint = "/dispatches/d1/deliver"
        let id = try await outbox.enqueue(request)
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .synced)
        #expect(row.latestOutcome == .replayed)
        guard case .attemptFinished(let finished) = try outbox.journalEvents(of: id).last?.body else {
            Issue.record("no outcome recorded")
            return
        }
        #expect(finished.outcome == .response(statusCode: 409))
        #expect(finished.disposition == .replayed)
    }

    @Test func aPayloadAlteredOnDiskIsNeverSent() async throws {
        for fixChecksum in [true, false] {
            let (journal, server, id, seq) = try await journalWithTamperedPayload(fixChecksum: fixChecksum)
            let outbox = try journal.open(server: server)
            await outbox.drain()
            let row = try #require(try outbox.operationState(id))
            #expect(row.status == .blocked)
            #expect(row.lastErrorCode == "payload_corrupt")
            #expect(row.lastOutcome == .notSent)
            #expect(server.requests.isEmpty)
            if !fixChecksum {
                // Reading the damaged record is an error naming its seq, never a silent skip.
                #expect {
                    try outbox.operation(id)
                } throws: { error in
                    guard case OutboxError.journalCorrupt(let damaged, _) = error else { return false }
                    return damaged == seq
                }
            }
            outbox.close()
        }
    }

    @Test func anAttemptCutOffByTheProcessEndingIsAbandonedAndReplayedOnce() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        // The server applies the write, then the process "dies" before the outcome is recorded.
        let id = try await journal.interruptAnAttempt(on: server, applied: true)
        #expect(server.appliedCount(id.idempotencyKey) == 1)

        let reopened = try journal.open(server: server)
        defer { reopened.close() }
        #expect(try reopened.operation(id)?.status == .queued)
        await reopened.drain()
        let row = try #require(try reopened.operation(id))
        #expect(row.status == .synced)
        #expect(row.latestOutcome == .replayed)
        #expect(server.appliedCount(id.idempotencyKey) == 1)
        #expect(try reopened.journalEvents(of: id).map(\.kind) == [.enqueued, .attemptStarted, .attemptAbandoned, .attemptStarted, .attemptFinished])
    }

    @Test func lanesAreSentConcurrentlyUpToTheLimit() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let inFlight = Mutex((now: 0, most: 0))
        let gate = ArrivalGate(count: 3)
        let transport = ScriptedTransport(otherwise: .handle { request in
            inFlight.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            await gate.arrive()
            inFlight.withLock { $0.now -= 1 }
            return try await server.send(request)
        })
        let outbox = try journal.open(server: transport) { $0.maxConcurrentLanes = 3 }
        defer { outbox.close() }
        for number in 0..<9 { _ = try await outbox.enqueue(productRequest(number)) }
        await outbox.drain()
        #expect(server.records.count == 9)
        #expect(inFlight.withLock { $0.most } == 3, "three lanes were in flight together, never more")
    }

    @Test func overlappingWakesNeverSendARowTwice() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let released = AsyncGate()
        let transport = ScriptedTransport(otherwise: .handle { request in
            await released.wait()
            return try await server.send(request)
        })
        let outbox = try journal.open(server: transport) { $0.maxConcurrentLanes = 4 }
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 0..<4 { ids.append(try await outbox.enqueue(productRequest(number))) }
        outbox.wake(.appLaunch)
        for reason in [Outbox.AppWake.foreground, .connectivityRegained, .appLaunch, .foreground] { outbox.wake(reason) }
        await released.open()
        await outbox.drain()
        #expect(transport.requests.count == 4)
        #expect(try ids.allSatisfy { try outbox.operation($0)?.attemptCount == 1 })
    }

    @Test func aRowWaitingForItsDependencyDoesNotHoldBackTheTimerOfTheRetryItWaitsFor() async throws {
        let transport = ScriptedTransport(otherwise: .respond(TransportResponse.json(201, #"{"revision":"1"}"#)))
        transport.script(.respond(TransportResponse.error(503, code: "down", message: "Down")))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open()
        defer { outbox.close() }
        let product = try await outbox.enqueue(productRequest(1))
        let movement = try await outbox.enqueue(OutboxRequest(
            businessID: "pharmacy-7", operationType: "stock.move", endpoint: "/stock", payload: Data(#"{"qty":3}"#.utf8),
            category: "Stock", entityLabel: "Antiseptic", summary: "Stock movement", dependsOn: [product]
        ))
        await outbox.drain()
        await outbox.settle()
        let retry = try #require(try outbox.operation(product)?.nextAttemptAt)
        #expect(outbox.nextWake == retry, "the timer is armed for the product's retry, 2 s away, not one cap later")
        journal.clock.advance(by: 2)
        await outbox.settle()
        #expect(try outbox.operation(movement)?.status == .synced)
        #expect(transport.requests.map(\.endpoint) == ["/products", "/products", "/stock"])
    }
}

/// A journal holding one product (`productRequest(1)`) whose stored payload was then altered
/// behind the engine's back (see ``tamperWithPayload(_:seq:fixChecksum:)``), closed.
func journalWithTamperedPayload(fixChecksum: Bool) async throws
    -> (journal: TestJournal, server: InMemoryServer, id: OperationID, seq: JournalSequence)
{
    let journal = TestJournal()
    let server = InMemoryServer()
    let outbox = try journal.open(server: server)
    let id = try await outbox.enqueue(productRequest(1))
    let seq = try #require(try outbox.operation(id)?.firstSeq)
    outbox.close()
    try tamperWithPayload(journal.directory, seq: seq, fixChecksum: fixChecksum)
    return (journal, server, id, seq)
}

/// Rewrites the payload of the `enqueued` record at `seq` behind the engine's back: one byte
/// changed inside the JSON. With `fixChecksum`, the record's checksum is recomputed, as a
/// deliberate tamper would; without, the damage is plain.
func tamperWithPayload(_ directory: URL, seq: JournalSequence, fixChecksum: Bool) throws {
    let environment = try LMDBEnvironment.open(directory: directory)
    defer { environment.close() }
    let events = try environment.openDatabase("events")
    try environment.write { txn in
        guard var record = try txn.get(events, key: seq.key) else { throw WaitingError.closedBeforeCondition }
        let marker = Array("Antiseptic".utf8)
        guard let start = record.indices.first(where: { record[$0...].starts(with: marker) }) else { return }
        record[start] = UInt8(ascii: "X")
        if fixChecksum {
            record.removeLast(4)
            record += CRC32C.checksum(record).bigEndianBytes
        }
        try txn.put(events, key: seq.key, value: record)
    }
}

/// Lets `count` arrivals through together, once all have arrived.
actor ArrivalGate {
    private let count: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var opened = false

    init(count: Int) {
        self.count = count
    }

    func arrive() async {
        if opened { return }
        await withCheckedContinuation { continuation in
            waiting.append(continuation)
            if waiting.count >= count {
                opened = true
                for waiter in waiting { waiter.resume() }
                waiting.removeAll()
            }
        }
    }
}

/// A gate closed until `open()`.
actor AsyncGate {
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var isOpen = false

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiting.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiting { waiter.resume() }
        waiting.removeAll()
    }
}
