import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCrypto
import OutboxStorage
import OutboxTesting
import Testing

/// Every key the engine composes from a request fits LMDB's key limit, and no two requests
/// compose one key: the request's fields are bounded by validation, a lane's parts are
/// length-prefixed, and a lane is compared byte for byte.
@Suite("Keys the engine composes")
struct KeyBoundsTests {
    /// Text of exactly `bytes` UTF-8 bytes, mostly two-byte characters, so that counting
    /// characters instead of bytes would go wrong.
    static func text(bytes: Int) -> String {
        String(repeating: "é", count: bytes / 2) + (bytes % 2 == 1 ? "x" : "")
    }

    /// A record key with every part at its bound.
    static func keyAtTheBounds() -> RecordKey {
        RecordKey(business: text(bytes: RecordKey.maxBusinessBytes), type: text(bytes: RecordKey.maxTypeBytes), id: text(bytes: RecordKey.maxIDBytes))
    }

    /// A request with every field that enters a key at its bound.
    static func requestAtTheBounds() -> OutboxRequest {
        var request = productRequest(1, entityID: text(bytes: OutboxRequest.maxEntityIDBytes))
        request.businessID = text(bytes: OutboxRequest.maxBusinessIDBytes)
        request.operationType = String(repeating: "t", count: OutboxRequest.maxOperationTypeBytes)
        request.category = text(bytes: OutboxRequest.maxCategoryBytes)
        request.entityLabel = text(bytes: OutboxRequest.maxFieldBytes)
        request.summary = text(bytes: OutboxRequest.maxFieldBytes)
        return request
    }

    @Test func everyIndexKeyOfAStateAtTheBoundsFitsLMDBsLimitInEveryStatus() throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let limit = outbox.store.environment.maxKeyBytes
        #expect(limit >= 511)
        let request = Self.requestAtTheBounds()
        try request.validate()
        for entityID in [request.entityID, nil] {
            var sample = request
            sample.entityID = entityID
            // A write of a record at its bounds too: its key enters the record indexes.
            let record = Self.keyAtTheBounds()
            let file = AttachmentManifest(id: AttachmentID(), name: "note.jpg", contentType: "image/jpeg", size: 1, sha256: SHA256Digest(of: Data()))
            let enqueued = Enqueued(request: sample, requestHash: SHA256Digest(of: sample.payload), account: "member-42",
                                    changes: [RecordWrite(key: record, value: Data("{}".utf8), schemaVersion: 1)], attachments: [file])
            var state = OperationState(id: OperationID(), seq: JournalSequence(rawValue: .max), recordedAt: Date(timeIntervalSinceReferenceDate: 786_000_000), enqueued: enqueued)
            state.latestSeq = JournalSequence(rawValue: .max)
            state.awaitingServerValue = [record]
            state.rolledBackSeq = JournalSequence(rawValue: .max)
            state.decision = .serverKept
            state.decidedAt = Date.distantFuture
            var indexesSeen = Set<String>()
            for status in OutboxStatus.allCases {
                state.status = status
                state.nextAttemptAt = status == .queued ? Date.distantFuture : nil
                let footprint = Projection.footprint(of: state)
                for index in Projection.Index.allCases {
                    for key in footprint.keys(in: index) {
                        // Each index's one-byte prefix in `state` comes before its key.
                        #expect(1 + key.count <= limit, "\(index) in \(status): \(1 + key.count) bytes")
                        indexesSeen.insert("\(index)")
                    }
                }
            }
            #expect(indexesSeen.count == Projection.Index.allCases.count, "an index was never walked: \(indexesSeen)")
            // The record store's keys: a table's prefix, then the record.
            #expect(1 + JournalCodec.RecordKeyCodec.bytes(record).count <= limit)
        }
        // The longest lane and Sync tab keys, as laid out.
        let lane = JournalCodec.LaneKey.bytes((Lane(businessID: request.businessID, entityID: request.entityID, operation: OperationID()), JournalSequence(rawValue: 1)))
        #expect(1 + lane.count == 1 + 1 + 1 + 128 + 1 + 255 + 8)
        let tab = JournalCodec.TabKey.bytes((.waiting, request.category, JournalSequence(rawValue: 1)))
        #expect(1 + tab.count == 1 + 1 + 255 + 1 + 8)
    }

    @Test func aWriteWithEveryFieldAtItsBoundIsJournaledSentAndSettled() async throws {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(
            .respond(TransportResponse.json(503, #"{"code":"unavailable","message":"later"}"#)),
            .respond(TransportResponse.json(412, #"{"code":"revision_conflict","message":"moved","server_revision":"3"}"#))
        )
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open {
            $0.operationPolicies = [String(repeating: "t", count: OutboxRequest.maxOperationTypeBytes): .idempotent]
        }
        defer { outbox.close() }
        var request = Self.requestAtTheBounds()
        request.baseRevision = "2"
        let id = try await outbox.enqueue(request)
        // Queued (schedule, lanes, the Sync tab), then retried, then conflicted (its own card).
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .queued)
        journal.clock.advance(by: 3)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .conflicted)
        try await outbox.discard(id)
        #expect(try outbox.operation(id)?.status == .discarded)
        #expect(try outbox.verify().isClean)
        #expect(try outbox.store.compareProjectionsWithRebuild().isEmpty)
    }

    /// One byte over each bound is refused, naming the field, and nothing is journaled.
    @Test(arguments: ["businessID", "operationType", "entityID", "category"])
    func oneByteOverABoundIsRefusedNamingTheField(_ field: String) async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        var request = Self.requestAtTheBounds()
        switch field {
        case "businessID": request.businessID = Self.text(bytes: OutboxRequest.maxBusinessIDBytes + 1)
        case "operationType": request.operationType = String(repeating: "t", count: OutboxRequest.maxOperationTypeBytes + 1)
        case "entityID": request.entityID = Self.text(bytes: OutboxRequest.maxEntityIDBytes + 1)
        default: request.category = Self.text(bytes: OutboxRequest.maxCategoryBytes + 1)
        }
        let before = try outbox.lastSeq()
        await #expect {
            _ = try await outbox.enqueue(request)
        } throws: { error in
            guard case OutboxError.invalidRequest(let named, let problem) = error else { return false }
            return named == field && problem.contains("over the limit")
        }
        #expect(try outbox.lastSeq() == before)
    }

    @Test func writesWhoseBusinessAndEntityJoinToTheSameTextAreInTwoLanes() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        var first = productRequest(1, entityID: "c")
        first.businessID = "a/b"
        var second = productRequest(2, entityID: "b/c")
        second.businessID = "a"
        let firstID = try await outbox.enqueue(first)
        let secondID = try await outbox.enqueue(second)
        #expect(try outbox.operation(firstID)?.waitingOn == nil)
        #expect(try outbox.operation(secondID)?.waitingOn == nil, "an unrelated write waited behind the first")
        #expect(try outbox.laneHead(Lane(businessID: "a", entityID: "b/c", operation: secondID)) == secondID)
    }

    @Test func businessIDsThatAreOneTextInNFCAndNFDAreTwoLanesInThePassToo() {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed, "Swift calls them equal")
        let one = Lane(businessID: composed, entityID: "p-1", operation: OperationID())
        let other = Lane(businessID: decomposed, entityID: "p-1", operation: OperationID())
        #expect(one != other)
        var plan = PassPlan()
        plan.add([
            PassPlan.Candidate(id: OperationID(), lane: one, firstSeq: JournalSequence(rawValue: 1)),
            PassPlan.Candidate(id: OperationID(), lane: other, firstSeq: JournalSequence(rawValue: 2)),
        ])
        // Two lanes: both may be in flight at once.
        #expect(plan.next()?.lane == one)
        #expect(plan.next()?.lane == other)
    }

    @Test func categoriesThatAreOneTextInNFCAndNFDAreTwoCardsEachCountingItsOwnRows() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.enqueue(productRequest(1, category: "Caf\u{E9}"))
        _ = try await outbox.enqueue(productRequest(2, category: "Cafe\u{301}"))
        _ = try await outbox.enqueue(productRequest(3, category: "Cafe\u{301}"))
        let tab = try outbox.syncTab(isOnline: false)
        #expect(tab.cards.count == 2)
        for card in tab.cards {
            #expect(card.count == card.rows.count, "\(Array(card.category.utf8)): the count covers another card's rows")
        }
        #expect(tab.cards.map(\.count).sorted() == [1, 2])
        #expect(tab.totalCount == 3)
        #expect(try outbox.verify().isClean)
    }

    @Test func anAccountNamedInNFDIsNotTheJournalsAccountNamedInNFC() throws {
        let journal = TestJournal(account: "jos\u{E9}")
        try journal.open().close()
        #expect(throws: OutboxError.self) {
            try Outbox(directory: journal.directory, transport: journal.transport,
                       configuration: OutboxConfiguration(account: "jose\u{301}", clock: journal.clock)).close()
        }
        #expect(SessionObservation(signedIn: "jose\u{301}", journalAccount: "jos\u{E9}") == .otherAccount)
        #expect(SessionObservation(signedIn: "jos\u{E9}", journalAccount: "jos\u{E9}") == .signedIn)
        #expect(SessionObservation(signedIn: nil, journalAccount: "jos\u{E9}") == .signedOut)
    }
}
