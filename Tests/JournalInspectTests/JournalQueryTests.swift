import Foundation
import TestHarness
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

@Suite("The audit queries of JournalReader and Outbox", .hangGuard)
struct JournalQueryTests {
    @Test func eventsArePagedInJournalOrderAndEveryPageCarriesOn() async throws {
        let directory = TemporaryDirectory()
        _ = try await writeQueuedJournal(into: directory.url, count: 7)
        let reader = try JournalReader(directory: directory.url)
        defer { reader.close() }
        var query = EventQuery(limit: 3)
        var seqs: [UInt64] = []
        var pages = 0
        while true {
            let page = try reader.events(matching: query)
            seqs += page.events.map(\.seq.rawValue)
            pages += 1
            guard let next = page.nextAfter else { break }
            query.after = next
        }
        #expect(seqs == Array(1...8), "journalOpened and seven enqueued, each once")
        #expect(pages == 3)

        let tail = try reader.events(matching: EventQuery(order: .newestFirst, limit: 2))
        #expect(tail.events.map(\.seq.rawValue) == [8, 7])
        #expect(tail.nextAfter == 7)
        let earlier = try reader.events(matching: EventQuery(after: tail.nextAfter, order: .newestFirst, limit: 2))
        #expect(earlier.events.first?.seq == 6)
        let range = try reader.events(matching: EventQuery(seqFrom: 3, seqThrough: 5))
        #expect(range.events.map(\.seq.rawValue) == [3, 4, 5])
        #expect(range.nextAfter == nil)
        #expect(range.lastExamined == 5)
    }

    @Test func eventsFilterByKindOperationTypeOperationAndTime() async throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock(now: fixtureStart)
        let outbox = try Outbox(directory: directory.url, transport: ScriptedTransport(otherwise: .fail(.offline)),
                                configuration: OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
        let product = try await outbox.enqueue(JournalInspectTests.product(1))
        clock.advance(by: 3600)
        let employee = try await outbox.enqueue(JournalInspectTests.product(2, type: "employee.create"))
        // Offline, a pass stops at its first unanswered attempt: one pass per row.
        await outbox.drain()
        await outbox.drain()

        let enqueues = try outbox.events(matching: EventQuery(kinds: [.enqueued]))
        #expect(enqueues.events.map(\.operationID) == [product, employee])
        let employees = try outbox.events(matching: EventQuery(operationTypes: ["Employee.Create"]))
        #expect(employees.events.map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished])
        #expect(Set(employees.events.compactMap(\.operationID)) == [employee])
        let later = try outbox.events(matching: EventQuery(recordedFrom: fixtureStart.addingTimeInterval(1800)))
        #expect(later.events.first?.operationID == employee)
        #expect(!later.events.contains { $0.operationID == product && $0.kind == .enqueued })
        let earlier = try outbox.events(matching: EventQuery(recordedBefore: fixtureStart.addingTimeInterval(1800)))
        #expect(earlier.events.map(\.kind) == [.journalOpened, .enqueued])
        let one = try outbox.events(matching: EventQuery(operationID: product))
        #expect(one.events.allSatisfy { $0.operationID == product })
        #expect(one.events.count == 3, "enqueued, then the drain's attempt and its outcome")
        outbox.close()
    }

    @Test func operationsAreListedNewestFirstAndFiltered() async throws {
        let directory = TemporaryDirectory()
        let journal = try await EveryStatusJournal.write(into: directory.url)
        let reader = try JournalReader(directory: directory.url)
        defer { reader.close() }
        let all = try reader.operations(matching: OperationQuery()).operations
        #expect(all.map(\.id) == journal.all.reversed(), "newest first")
        #expect(Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0.status) }) == journal.expectedStatuses)

        let waiting = try reader.operations(matching: OperationQuery(statuses: [.queued, .blocked])).operations
        #expect(waiting.map(\.id) == [journal.paused, journal.queued, journal.blocked])
        let employees = try reader.operations(matching: OperationQuery(categories: ["employees"])).operations
        #expect(employees.map(\.id) == [journal.pendingApproval])
        let byType = try reader.operations(matching: OperationQuery(operationTypes: ["EMPLOYEE.create"])).operations
        #expect(byType.map(\.id) == [journal.pendingApproval])
        let firstHour = try reader.operations(matching: OperationQuery(createdBefore: fixtureStart.addingTimeInterval(60))).operations
        #expect(firstHour.map(\.id) == [journal.synced])
        let late = try reader.operations(matching: OperationQuery(createdFrom: fixtureStart.addingTimeInterval(4000))).operations
        #expect(late.map(\.id) == [journal.syncing, journal.paused, journal.queued])

        let firstPage = try reader.operations(matching: OperationQuery(limit: 4)).operations
        let secondPage = try reader.operations(matching: OperationQuery(after: firstPage.last?.firstSeq, limit: 4)).operations
        #expect(firstPage.map(\.id) + secondPage.map(\.id) == Array(journal.all.reversed().prefix(8)))
    }

    @Test func anIDPrefixFindsItsOperationIgnoringCaseAndHyphens() async throws {
        let directory = TemporaryDirectory()
        let ids = try await writeQueuedJournal(into: directory.url, count: 3)
        let reader = try JournalReader(directory: directory.url)
        defer { reader.close() }
        for id in ids {
            let key = id.idempotencyKey
            #expect(try reader.operationIDs(matchingPrefix: String(key.prefix(13)).lowercased()) == [id])
            #expect(try reader.operationIDs(matchingPrefix: key.replacingOccurrences(of: "-", with: "")) == [id])
        }
        #expect(try reader.operationIDs(matchingPrefix: "").isEmpty)
        let everyID = Set(try "0123456789ABCDEF".flatMap { try reader.operationIDs(matchingPrefix: String($0)) })
        #expect(everyID == Set(ids), "every id starts with some hex digit")
    }

    @Test func aTimelineHoldsEveryEventEachAttemptWithItsGapAndThePayloadCheck() async throws {
        let directory = TemporaryDirectory()
        let journal = try await EveryStatusJournal.write(into: directory.url)
        let reader = try JournalReader(directory: directory.url)
        defer { reader.close() }
        let timeline = try reader.timeline(of: journal.synced)
        #expect(timeline.isComplete)
        #expect(timeline.state?.status == .synced)
        #expect(timeline.events.map(\.kind) == [.enqueued] + Array(repeating: [.attemptStarted, .attemptFinished], count: 3).flatMap { $0 })
        #expect(timeline.attempts.map(\.number.rawValue) == [1, 2, 3])
        #expect(timeline.attempts.map(\.disposition) == [.transientFailure, .transientFailure, .accepted])
        #expect(timeline.attempts.map(\.outcome) == [.noResponse(.offline), .response(statusCode: 503), .response(statusCode: 201)])
        #expect(timeline.attempts.map(\.secondsSincePreviousAttempt) == [nil, 2, 4])
        #expect(timeline.attempts[0].nextAttemptAt == fixtureStart.addingTimeInterval(2))
        let payload = try #require(timeline.payload)
        #expect(payload.matches)
        #expect(payload.payload == product(1, label: "Antiseptic 500 ml").payload)
        #expect(payload.recordedHash == SHA256Digest(of: payload.payload))

        let inFlight = try reader.timeline(of: journal.syncing)
        #expect(inFlight.attempts.count == 1 && inFlight.attempts[0].isInFlight)
        let unknown = OperationID()
        #expect(throws: OutboxError.operationNotFound(unknown)) {
            _ = try reader.timeline(of: unknown)
        }
    }

    @Test func theSummaryCountsEveryStatusAndNamesThePauseAndTheOldestPendingRow() async throws {
        let directory = TemporaryDirectory()
        let journal = try await EveryStatusJournal.write(into: directory.url)
        let reader = try JournalReader(directory: directory.url)
        defer { reader.close() }
        let summary = try reader.summary()
        #expect(summary.formatVersion == RecordCodec.formatVersion)
        #expect(summary.projectionVersion == Int(JournalSchema.projectionVersion) && summary.projectionsAreCurrent)
        #expect(summary.account == "member-42")
        #expect(summary.firstSeq == 1)
        #expect(summary.lastSeq.rawValue == UInt64(summary.eventCount))
        #expect(summary.statusCounts == [.queued: 2, .syncing: 1, .synced: 1, .pendingApproval: 1, .failed: 1, .blocked: 1,
                                         .withdrawn: 1, .discarded: 1, .conflicted: 0, .superseded: 0])
        #expect(summary.operationCount == 9)
        #expect(summary.oldestPending?.id == journal.queued)
        #expect(summary.engine.isPaused && summary.engine.pauseReason == "token_expired")
        #expect(summary.engine.pausedBy == journal.paused)
        #expect(summary.engine.lastOpened?.appVersion == "2.3.1")
        // What an app reads of the same, without the fold's types.
        #expect(summary.oldestPendingID == journal.queued && summary.oldestPendingSince == summary.oldestPending?.createdAt)
        #expect(summary.workerPause == Outbox.WorkerPause(reason: "token_expired", since: summary.engine.pausedAt, triggeredBy: journal.paused))
        #expect(summary.lastOpened?.appVersion == "2.3.1")
        #expect(summary.lastEventAt == journal.closedAt)
        #expect(summary.fileBytes > 0 && summary.usedBytes > 0 && summary.eventBytes > 0)
        #expect(summary.damaged.isEmpty)
    }

    @Test func theQueueDepthRisesWithEachWriteAndFallsAsEachSettles() async throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock(now: fixtureStart)
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try Outbox(directory: directory.url, transport: server,
                                configuration: OutboxConfiguration(account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash))
        for number in 1...3 { _ = try await outbox.enqueue(product(number)) }
        server.setOnline(true)
        await outbox.drain()
        outbox.close()
        let reader = try JournalReader(directory: directory.url)
        defer { reader.close() }
        let depth = try reader.queueDepthHistory()
        // Three enqueues, then each row: started (still pending), finished (synced).
        #expect(depth.map(\.pending) == [1, 2, 3, 3, 2, 2, 1, 1, 0])
        let thinned = try reader.queueDepthHistory(maxSamples: 3)
        #expect(thinned.count == 3)
        #expect(thinned.map(\.pending).max() == 3, "a spike survives the thinning")
        #expect(thinned.last?.pending == 0, "the last sample is kept")
    }

    @Test func aJournalWithProjectionsOfAnOlderLayoutIsFoldedAndAnswersTheSame() async throws {
        let directory = TemporaryDirectory()
        let journal = try await EveryStatusJournal.write(into: directory.url)
        let current = try JournalReader(directory: directory.url)
        let expected = (
            ops: try current.operationStates(matching: OperationQuery()),
            timeline: try current.timeline(of: journal.synced),
            ledger: try current.ledger().entries,
            engine: try current.engineState(),
            summary: try current.summary(),
            prefix: try current.operationIDs(matchingPrefix: String(journal.failed.idempotencyKey.prefix(6)))
        )
        current.close()
        try Tamper.setMeta(directory.url, key: "projection-version", to: 0)
        let before = try dataFileDigest(directory.url)

        let folded = try JournalReader(directory: directory.url)
        defer { folded.close() }
        #expect(!folded.projectionsAreCurrent)
        #expect(try folded.operationStates(matching: OperationQuery()) == expected.ops)
        #expect(try folded.timeline(of: journal.synced) == expected.timeline)
        #expect(try folded.ledger().entries == expected.ledger)
        #expect(try folded.engineState() == expected.engine)
        #expect(try folded.operationIDs(matchingPrefix: String(journal.failed.idempotencyKey.prefix(6))) == expected.prefix)
        let summary = try folded.summary()
        #expect(summary.statusCounts == expected.summary.statusCounts)
        #expect(summary.oldestPending == expected.summary.oldestPending)
        #expect(summary.eventBytes == expected.summary.eventBytes)
        #expect(summary.projectionVersion == 0)
        #expect(try folded.journalEvents(of: journal.blocked) == (try folded.timeline(of: journal.blocked)).events)
        let report = try folded.verify()
        #expect(report.isClean && !report.projectionsCompared)
        #expect(try dataFileDigest(directory.url) == before, "the reader folded in memory and wrote nothing")
    }

    @Test func theEnginesOwnVerificationPassesAJournalItWroteThroughEveryStatus() async throws {
        let directory = TemporaryDirectory()
        _ = try await EveryStatusJournal.write(into: directory.url)
        let outbox = try Outbox(directory: directory.url, transport: ScriptedTransport(otherwise: .fail(.offline)),
                                configuration: OutboxConfiguration(account: "member-42", clock: ManualClock(now: fixtureStart)))
        defer { outbox.close() }
        // The opening, and the abandonment of the journal's syncing row, land on the writer's queue.
        outbox.untilWritesLanded()
        let report = try outbox.verify()
        #expect(report.isClean, "\(report.findings)")
        #expect(report.projectionsCompared)
        #expect(report.operationsChecked == 9)
        #expect(report.recordsChecked == Int(try outbox.lastSeq().rawValue))
    }

    @Test func exportedEventsCarryEachKindsFieldsAndRedactThePayloadUnlessAsked() async throws {
        let directory = TemporaryDirectory()
        let journal = try await EveryStatusJournal.write(into: directory.url)
        let reader = try JournalReader(directory: directory.url)
        defer { reader.close() }
        let events = try reader.timeline(of: journal.synced).events
        let enqueued = HistoryEntry(events[0])
        #expect(enqueued.kind == .enqueued && enqueued.operationType == "product.create")
        #expect(enqueued.payload == nil && enqueued.payloadBytes == product(1, label: "Antiseptic 500 ml").payload.count)
        #expect(enqueued.payloadHashMatches == true)
        #expect(HistoryEntry(events[0], includePayload: true).payload?.contains("Antiseptic 500 ml") == true)
        let offline = HistoryEntry(events[2])
        #expect(offline.outcome == "no_response" && offline.transportFailure == TransportRequest.Failure.offline.rawValue && offline.httpStatus == nil)
        #expect(offline.disposition == Disposition.transientFailure.rawValue && offline.nextAttemptAt == fixtureStart.addingTimeInterval(2))
        let accepted = HistoryEntry(events[6])
        #expect(accepted.outcome == "response" && accepted.httpStatus == 201 && accepted.serverRevision == "1")

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(HistoryEntry(events[1])), as: UTF8.self)
        #expect(!json.contains("null"), "absent fields are left out, never null: \(json)")
        #expect(json.contains(#""trigger":"drain""#))
    }
}
