import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage
import OutboxTesting
import Synchronization
import Testing

/// A migration to this projection layout that cannot get room leaves the journal as the engine
/// of its own layout wrote it, and says so; with room, the next open migrates it.
@Suite("A migration without room", .timeLimit(.minutes(10)))
struct MigrationRoomTests {
    @Test func aMigrationIntoAJournalWithNoRoomLeftFailsWithStorageFullAndOpensLaterWithRoom() async throws {
        for fixture in try olderLayouts() {
            let manifest = try Fixtures.manifest(of: fixture)
            let copy = try Fixtures.copy(fixture)
            defer { try? FileManager.default.removeItem(at: copy) }
            let full = try fillTheMap(copy)
            let before = try OldLayout.read(copy)

            #expect(throws: OutboxError.storageFull(limitBytes: full)) {
                _ = try JournalStore.open(directory: copy, options: JournalStore.Options(
                    initialMapSizeBytes: full, maxMapSizeBytes: full, sealingKey: manifest.key, account: manifest.account))
            }
            let after = try OldLayout.read(copy)
            #expect(after == before, "\(fixture.lastPathComponent): the old layout changed")
            // Nothing of the new layout stays (a layout kept in `state` keeps its own rows there).
            #expect(after.stateRows == 0 || manifest.projectionVersion >= Int(JournalSchema.firstLayoutInState))

            try expectItMigratesWithRoom(copy, manifest, fixture)
        }
    }

    @Test func aMigrationThatRunsOutOfRoomMidwayClearsWhatItWroteAndLeavesTheOldLayout() async throws {
        for fixture in try olderLayouts() {
            let manifest = try Fixtures.manifest(of: fixture)
            for failingCommit in 2...4 {
                let copy = try Fixtures.copy(fixture)
                defer { try? FileManager.default.removeItem(at: copy) }
                let before = try OldLayout.read(copy)
                let commits = Atomic<Int>(0)
                // The disk fills at this commit of the migration, written in steps of 8 rows.
                let hook = LMDBFaultHook { call in
                    call == .commit && commits.add(1, ordering: .relaxed).newValue == failingCommit ? LMDBError(rawValue: ENOSPC) : nil
                }
                var options = JournalStore.Options(faultHook: hook, sealingKey: manifest.key, account: manifest.account)
                options.rebuildTuning = JournalStore.RebuildTuning(chunk: 8, shardingThreshold: 0, shards: 1)
                #expect(throws: OutboxError.storageFull(limitBytes: options.maxMapSizeBytes, errno: ENOSPC)) {
                    _ = try JournalStore.open(directory: copy, options: options)
                }
                #expect(commits.load(ordering: .relaxed) > failingCommit, "the migration wrote nothing it had to clear")
                let after = try OldLayout.read(copy)
                if manifest.projectionVersion >= Int(JournalSchema.firstLayoutInState) {
                    // That layout kept its projections in `state`, which the migration rewrites:
                    // they are gone with their version, so an engine of either layout rebuilds
                    // them from the events at its next open; nothing else changed.
                    var expected = before
                    (expected.projectionVersion, expected.stateRows) = (nil, 0)
                    #expect(after == expected, "\(fixture.lastPathComponent), commit \(failingCommit)")
                } else {
                    #expect(after == before, "\(fixture.lastPathComponent), commit \(failingCommit): the old layout changed")
                }
                #expect(after.stateRows == 0, "what the migration wrote of `state` is still there")

                try expectItMigratesWithRoom(copy, manifest, fixture)
            }
        }
    }

    // MARK: Support

    /// The fixtures of every layout before this one.
    private func olderLayouts() throws -> [URL] {
        let older = try Fixtures.all().filter { try Fixtures.manifest(of: $0).projectionVersion < JournalSchema.projectionVersion }
        #expect(!older.isEmpty, "no fixture of an earlier layout")
        return older
    }

    /// Opens the journal as an engine with room does, and checks it migrated whole.
    private func expectItMigratesWithRoom(_ copy: URL, _ manifest: Fixtures.Manifest, _ fixture: URL) throws {
        let outbox = try Outbox(directory: copy, transport: InMemoryServer(), configuration: OutboxConfiguration(
            account: manifest.account, clock: Fixtures.openingClock(), encryptionKey: manifest.key))
        #expect(try outbox.verify().isClean, "\(fixture.lastPathComponent)")
        for expected in manifest.operations {
            #expect(try outbox.operation(expected.id)?.attemptCount == expected.attemptCount, "\(fixture.lastPathComponent)")
        }
        outbox.close()
        let migrated = try OldLayout.read(copy)
        #expect(migrated.projectionVersion == JournalSchema.projectionVersion.bigEndianBytes)
        #expect(migrated.oldRows.values.allSatisfy { $0 == 0 } && migrated.oldEngineState == nil)
        #expect(migrated.stateRows > manifest.operations.count)
    }

    /// Fills the map of the journal in `directory` with rows of a database of its own, in one
    /// transaction holding as many as fit, so that a map of that size has no room left even in
    /// the pages earlier transactions freed.
    /// - Returns: the map's size.
    private func fillTheMap(_ directory: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("data.mdb").path)
        let size = try #require(attributes[.size] as? Int)
        let environment = try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(
            initialMapSizeBytes: size, maxMapSizeBytes: size))
        defer { environment.close() }
        let filler = try environment.openDatabase("filler")
        func write(_ rows: Int, keep: Bool) throws -> Bool {
            struct Fits: Error {}
            do {
                try environment.write { txn in
                    for key in 0..<UInt64(rows) { try txn.put(filler, key: key.bigEndianBytes, value: [UInt8](repeating: 0, count: 100)) }
                    if !keep { throw Fits() }
                }
                return true
            } catch is Fits {
                return true
            } catch let error as LMDBError where error == .mapFull {
                return false
            }
        }
        // The most rows one transaction takes, found by trying (each try aborted), then written:
        // its commit needs a few pages more, so a few rows less may be what commits.
        var (fits, fails) = (0, size / 100 + 1)
        #expect(try !write(fails, keep: false))
        while fails - fits > 1 {
            let middle = (fits + fails) / 2
            if try write(middle, keep: false) { fits = middle } else { fails = middle }
        }
        while fits > 0, try !write(fits, keep: true) { fits -= 1 }
        #expect(fits > 0, "the map had no room to fill")
        return environment.mapSizeBytes
    }
}

/// What an earlier layout stored, read raw: the projection version, each of its databases' row
/// count, the engine state kept in `meta`, and the rows of this layout's `state`.
private struct OldLayout: Equatable {
    var projectionVersion: [UInt8]?
    var oldRows: [String: Int]
    var oldEngineState: [UInt8]?
    var stateRows: Int

    static func read(_ directory: URL) throws -> OldLayout {
        let environment = try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(readOnly: true))
        defer { environment.close() }
        let meta = try #require(try environment.openExistingDatabase("meta"))
        var rows: [String: Int] = [:]
        for name in JournalSchema.retiredDatabases {
            guard let database = try environment.openExistingDatabase(name) else { continue }
            rows[name] = try environment.read { txn in try txn.count(database) }
        }
        let state = try environment.openExistingDatabase(JournalSchema.stateDatabase)
        return try environment.read { txn in
            OldLayout(
                projectionVersion: try txn.get(meta, key: Array(JournalSchema.MetaKey.projectionVersion.utf8)),
                oldRows: rows,
                oldEngineState: try txn.get(meta, key: Array(JournalSchema.MetaKey.retiredEngineState.utf8)),
                stateRows: try state.map { try txn.count($0) } ?? 0
            )
        }
    }
}
