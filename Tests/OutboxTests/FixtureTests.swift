import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage
import OutboxTesting
import Synchronization
import Testing

/// The fixture journals committed under `Tests/Fixtures/` open, migrate and keep every pending
/// row with its bytes, its key and its attempt count: in this version and every later one.
@Suite("Journals written by earlier versions", .timeLimit(.minutes(10)))
struct FixtureTests {
    /// Rewrites the fixtures: `OUTBOX_WRITE_FIXTURES=1 swift test --filter writeTheFixtures`. Run
    /// once per format or layout version, and commit the result beside the older ones.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["OUTBOX_WRITE_FIXTURES"] != nil))
    func writeTheFixtures() async throws {
        let version = "format\(RecordCodec.formatVersion)-layout\(JournalSchema.projectionVersion)"
        for encrypted in [false, true] {
            let target = Fixtures.directory.appendingPathComponent("\(version)-\(encrypted ? "encrypted" : "plain")")
            let manifest = try await Fixtures.write(to: target, encrypted: encrypted)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(manifest).write(to: target.appendingPathComponent("manifest.json"))
        }
    }

    @Test func thereAreFixturesToOpen() throws {
        #expect(try Fixtures.all().count >= 2)
    }

    @Test func everyFixtureOpensAndKeepsEveryPendingRow() async throws {
        for fixture in try Fixtures.all() {
            let manifest = try Fixtures.manifest(of: fixture)
            let copy = try Fixtures.copy(fixture)
            defer { try? FileManager.default.removeItem(at: copy) }
            // A server that accepts everything: what is checked is what is sent, and an edit of a
            // record this server never saw must not hold its lane.
            let server = ScriptedTransport(otherwise: .respond(.json(201, #"{"revision":1}"#)))
            var configuration = OutboxConfiguration(
                account: manifest.account, clock: ManualClock(now: Date(timeIntervalSince1970: 1_900_000_000)),
                encryptionKey: manifest.key
            )
            // The fixtures were written years before this clock: what is checked here is their
            // bytes, so their claims are taken to outlive the gap (ClaimRetentionTests judge age).
            configuration.claimRetentionSeconds = 100 * 365 * 86_400
            let outbox = try Outbox(directory: copy, transport: server, configuration: configuration)
            defer { outbox.close() }
            // The opening, and the abandonment of a fixture's syncing rows, land on the writer's queue.
            outbox.untilWritesLanded()
            let name = fixture.lastPathComponent
            #expect(try outbox.verify().isClean, "\(name)")
            #expect(try outbox.ledger(LedgerQuery(limit: .max)).entries.count == manifest.operations.count, "\(name)")
            #expect(try outbox.engineState().isPaused == manifest.workerPaused, "\(name)")

            var pending: [Fixtures.Manifest.Operation] = []
            for expected in manifest.operations {
                let row = try #require(try outbox.operation(expected.id), "\(name): \(expected.id) is gone")
                #expect(row.attemptCount == expected.attemptCount, "\(name)")
                // An attempt the writing process never saw end is abandoned at open: queued again.
                #expect(row.status == (expected.status == .syncing ? .queued : expected.status), "\(name)")
                if row.compactedAt != nil {
                    // A compaction before format 2 kept the ledger row only, and says so; later
                    // ones keep everything but the payload.
                    #expect(row.state.keptRequest == (manifest.formatVersion >= 2), "\(name)")
                    #expect(row.state.keptRequest ? row.request.endpoint == expected.endpoint : row.request.endpoint.isEmpty)
                    continue
                }
                #expect(row.request.payload.base64EncodedString() == expected.payloadBase64, "\(name): the bytes changed")
                #expect(row.request.endpoint == expected.endpoint && row.request.payloadVersion == expected.payloadVersion)
                if row.status == .queued { pending.append(expected) }
            }
            #expect(!pending.isEmpty, "\(name) holds pending rows")
            // Format 3: every record reads as it was written, local-only ones too.
            for record in manifest.records ?? [] {
                let key = try #require(RecordKey(path: record.key))
                let policy = record.localOnly ? OutboxConfiguration.RecordTypePolicy.localOnly : OutboxConfiguration.RecordTypePolicy()
                #expect(try outbox.store.queries.record(key, policy: policy)?.value?.base64EncodedString() == record.valueBase64, "\(name): \(key)")
            }

            // They drain: each sent byte for byte under its own key, with its payload's version.
            try await outbox.resumeSession()
            for _ in 0..<3 { await outbox.drain() }
            for expected in pending {
                let sent = try #require(server.requests.first { $0.headers["Idempotency-Key"] == expected.id.idempotencyKey }, "\(name)")
                #expect(sent.body.base64EncodedString() == expected.payloadBase64)
                #expect(sent.headers["Outbox-Payload-Version"] == String(expected.payloadVersion))
            }
        }
    }

    @Test func anOlderProjectionLayoutMigratesAndACrashMidwayLeavesItOpenable() async throws {
        for fixture in try Fixtures.all() {
            let manifest = try Fixtures.manifest(of: fixture)
            for failingCommit in 1...3 {
                let copy = try Fixtures.copy(fixture)
                defer { try? FileManager.default.removeItem(at: copy) }
                try setMeta(copy, "projection-version", UInt32(0).bigEndianBytes)
                let commits = Atomic<Int>(0)
                let hook = LMDBFaultHook { call in
                    (call == .commit || call == .commitWithoutFlush) && commits.add(1, ordering: .relaxed).newValue == failingCommit ? LMDBError.io : nil
                }
                let configuration = OutboxConfiguration(account: manifest.account, clock: Fixtures.openingClock(), encryptionKey: manifest.key)
                // The migration (or what follows it at open) dies at this commit...
                if let opened = try? Outbox(directory: copy, transport: InMemoryServer(), configuration: configuration, faultHook: hook) {
                    opened.close()
                }
                // ...and the journal opens all the same, every row intact.
                let outbox = try Outbox(directory: copy, transport: InMemoryServer(), configuration: configuration)
                defer { outbox.close() }
                #expect(try outbox.verify().isClean, "\(fixture.lastPathComponent), commit \(failingCommit)")
                for expected in manifest.operations {
                    #expect(try outbox.operation(expected.id)?.attemptCount == expected.attemptCount)
                }
            }
        }
    }

    @Test func aReaderOpensEveryFixtureAsItIsAndFoldsAnOlderLayoutWithoutWriting() throws {
        for fixture in try Fixtures.all() {
            let manifest = try Fixtures.manifest(of: fixture)
            let copy = try Fixtures.copy(fixture)
            defer { try? FileManager.default.removeItem(at: copy) }
            let before = try Data(contentsOf: copy.appendingPathComponent("data.mdb"))
            let reader = try JournalReader(directory: copy, encryptionKey: manifest.key)
            let name = fixture.lastPathComponent
            #expect(reader.projectionsAreCurrent == (manifest.projectionVersion == Int(JournalSchema.projectionVersion)), "\(name)")
            for expected in manifest.operations {
                #expect(try reader.operation(expected.id)?.attemptCount == expected.attemptCount, "\(name)")
            }
            #expect(try reader.ledger(LedgerQuery(limit: .max)).entries.count == manifest.operations.count, "\(name)")
            #expect(try reader.verify().isClean, "\(name)")
            reader.close()
            #expect(try Data(contentsOf: copy.appendingPathComponent("data.mdb")) == before, "\(name): the reader wrote")
        }
    }

    @Test func theDatabasesALayoutRetiredAreEmptiedByTheMigration() throws {
        var emptied = 0
        for fixture in try Fixtures.all() {
            let manifest = try Fixtures.manifest(of: fixture)
            let copy = try Fixtures.copy(fixture)
            defer { try? FileManager.default.removeItem(at: copy) }
            let before = try retiredRows(copy)
            let outbox = try Outbox(directory: copy, transport: InMemoryServer(), configuration: OutboxConfiguration(
                account: manifest.account, clock: Fixtures.openingClock(), encryptionKey: manifest.key
            ))
            // Each history is read from its state now, and still lists every event.
            for expected in manifest.operations where try outbox.operation(expected.id)?.compactedAt == nil {
                #expect(try outbox.journalEvents(of: expected.id).first?.kind == .enqueued, "\(fixture.lastPathComponent)")
            }
            outbox.close()
            #expect(try retiredRows(copy) == 0, "\(fixture.lastPathComponent)")
            if before > 0 { emptied += 1 }
        }
        #expect(emptied > 0, "no fixture held a retired database to empty")
    }

    /// The rows left in databases earlier layouts kept and this one does not.
    private func retiredRows(_ directory: URL) throws -> Int {
        let environment = try LMDBEnvironment.open(directory: directory)
        defer { environment.close() }
        var rows = 0
        for name in JournalSchema.retiredDatabases {
            guard let database = try environment.openExistingDatabase(name) else { continue }
            rows += try environment.read { txn in try txn.count(database) }
        }
        return rows
    }

    @Test func aJournalOfANewerFormatIsRefusedWithBothVersionsNamed() throws {
        let fixture = try #require(try Fixtures.all().first)
        let manifest = try Fixtures.manifest(of: fixture)
        let copy = try Fixtures.copy(fixture)
        defer { try? FileManager.default.removeItem(at: copy) }
        try setMeta(copy, "format-version", UInt32(RecordCodec.formatVersion + 1).bigEndianBytes)
        let refusal = OutboxError.newerFormat(found: RecordCodec.formatVersion + 1, supported: RecordCodec.formatVersion)
        #expect(throws: refusal) {
            _ = try Outbox(directory: copy, transport: InMemoryServer(), configuration: OutboxConfiguration(account: manifest.account, clock: Fixtures.openingClock(), encryptionKey: manifest.key))
        }
        #expect(throws: refusal) { _ = try JournalReader(directory: copy) }
        #expect(refusal.description.contains("format version \(RecordCodec.formatVersion + 1)")
            && refusal.description.contains("up to version \(RecordCodec.formatVersion)"))
    }

    private func setMeta(_ directory: URL, _ key: String, _ value: [UInt8]) throws {
        let environment = try LMDBEnvironment.open(directory: directory)
        defer { environment.close() }
        let meta = try environment.openDatabase("meta")
        try environment.write { txn in try txn.put(meta, key: Array(key.utf8), value: value) }
    }
}
