import Foundation
@testable import Outbox
import OutboxAudit
import OutboxStorage
import TestHarness
import OutboxTesting
import Synchronization
import Testing

/// A journal of a few hundred events, closed: the material the damage tests cut and bend.
private func writtenJournal(operations: Int = 150, key: SealingKey? = nil) async throws -> (TestJournal, [OperationID]) {
    let journal = TestJournal()
    let server = InMemoryServer()
    let outbox = try journal.open(server: server) { $0.encryptionKey = key }
    var ids: [OperationID] = []
    for number in 0..<operations {
        ids.append(try await outbox.enqueue(productRequest(number, entityID: "shelf-\(number % 5)")))
        // The first half syncs; the rest stays queued: pending work the damage may take.
        if number == operations / 2 { await outbox.drain() }
    }
    outbox.close()
    return (journal, ids)
}

private func dataFile(_ journal: TestJournal) -> URL {
    journal.directory.appendingPathComponent("data.mdb")
}

/// Rewrites `count` bytes of the file at `offset`.
private func overwrite(_ url: URL, at offset: Int, with bytes: [UInt8]) throws {
    let handle = try FileHandle(forUpdating: url)
    defer { try? handle.close() }
    try handle.seek(toOffset: UInt64(offset))
    handle.write(Data(bytes))
}

private func littleEndian(_ value: UInt64) -> [UInt8] {
    withUnsafeBytes(of: value.littleEndian) { Array($0) }
}

@Suite("Opening a damaged journal file")
struct DamagedFileTests {
    @Test func aJournalCutShortAt64KiBIsRefusedNamingWhatIsWrong() async throws {
        let (journal, _) = try await writtenJournal()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: dataFile(journal).path)[.size] as? Int)
        #expect(size > 64 << 10, "the journal outgrows 64 KiB")
        try FileHandle(forUpdating: dataFile(journal)).truncate(atOffset: 64 << 10)

        #expect {
            _ = try journal.open()
        } throws: { error in
            guard case OutboxError.journalDamaged(let path, let reason) = error else { return false }
            return path == journal.directory.path && reason.contains("65536 bytes") && reason.contains("cut short")
        }
        #expect(throws: OutboxError.self) { _ = try JournalReader(directory: journal.directory) }
        #expect(FileManager.default.fileExists(atPath: dataFile(journal).path), "the damaged file stays")
    }

    @Test func aJournalCutAtEveryPageBoundaryIsRefusedAndWholeItOpens() async throws {
        let (journal, ids) = try await writtenJournal(operations: 60)
        let original = try Data(contentsOf: dataFile(journal))
        let pageSize = 4096
        let header = try #require(try LMDBDataFile.check(path: dataFile(journal).path))
        var refusals = 0
        // From one page: a data file of zero bytes holds nothing, and the engine replaces it
        // (``CreatingJournalTests``).
        for pages in 1..<(header.usedBytes / pageSize) {
            try original.prefix(pages * pageSize).write(to: dataFile(journal))
            do {
                let outbox = try journal.open()
                outbox.close()
                Issue.record("a journal cut to \(pages) of \(header.usedBytes / pageSize) pages opened")
            } catch OutboxError.journalDamaged, OutboxError.notAJournal {
                refusals += 1
            }
            try? FileManager.default.removeItem(at: journal.directory.appendingPathComponent("lock.mdb"))
        }
        #expect(refusals == header.usedBytes / pageSize - 1)
        try original.write(to: dataFile(journal))
        let outbox = try journal.open()
        defer { outbox.close() }
        #expect(try ids.allSatisfy { try outbox.operation($0) != nil })
    }

    @Test func bentMetaPagesAreRefusedBeforeLMDBReadsThem() async throws {
        let (journal, _) = try await writtenJournal(operations: 20)
        let original = try Data(contentsOf: dataFile(journal))
        let cases: [(name: String, offset: Int, bytes: [UInt8], expect: (OutboxError) -> Bool)] = [
            ("magic", 16, [0, 0, 0, 0], { if case .notAJournal = $0 { true } else { false } }),
            ("last page, both metas", 136, littleEndian(1 << 40), { if case .journalDamaged = $0 { true } else { false } }),
            ("main root, both metas", 128, littleEndian(1 << 30), { if case .journalDamaged = $0 { true } else { false } }),
        ]
        for damage in cases {
            try original.write(to: dataFile(journal))
            try overwrite(dataFile(journal), at: damage.offset, with: damage.bytes)
            if damage.name.hasSuffix("both metas") {
                try overwrite(dataFile(journal), at: 4096 + damage.offset, with: damage.bytes)
            }
            #expect("\(damage.name)") {
                _ = try journal.open()
            } throws: { error in
                (error as? OutboxError).map(damage.expect) ?? false
            }
        }
    }

    @Test func theCheckReadsWhatLMDBReportsOfTheFile() async throws {
        let (journal, _) = try await writtenJournal(operations: 40)
        let header = try #require(try LMDBDataFile.check(path: dataFile(journal).path))
        let environment = try LMDBEnvironment.open(directory: journal.directory, options: .init(readOnly: true))
        defer { environment.close() }
        let info = try environment.info()
        #expect(header.usedBytes == info.usedBytes)
        #expect(header.pageSizeBytes == info.pageSizeBytes)
        #expect(Int(header.transactionID) == info.lastTransactionID)
    }
}

@Suite("Moving a damaged journal aside")
struct MovingAsideTests {
    @Test func theReportCountsWhatWasWaitingAndANewJournalStartsEmpty() async throws {
        let (journal, ids) = try await writtenJournal(operations: 40)
        let before: [OperationID: OutboxStatus] = try {
            let reader = try JournalReader(directory: journal.directory)
            defer { reader.close() }
            return try Dictionary(uniqueKeysWithValues: ids.map { ($0, try #require(try reader.operation($0)).status) })
        }()
        // A bent root: every page is still there, but LMDB must not be trusted with the file.
        try overwrite(dataFile(journal), at: 128, with: littleEndian(1 << 30))
        try overwrite(dataFile(journal), at: 4096 + 128, with: littleEndian(1 << 30))
        let damaged = try Data(contentsOf: dataFile(journal))
        #expect(throws: OutboxError.self) { _ = try journal.open() }

        let report = try Outbox.moveAsideDamagedJournal(at: journal.directory)
        let pending = before.filter { !$0.value.isTerminal }
        #expect(pending.count > 0 && pending.count < ids.count)
        #expect(Set(report.pendingOperations.map(\.id)) == Set(pending.keys))
        #expect(report.operationCount == ids.count)
        #expect(report.damagedRecords == 0)
        for (number, id) in ids.enumerated() {
            guard let recovered = report.pendingOperations.first(where: { $0.id == id }) else { continue }
            #expect(recovered.status == before[id])
            #expect(recovered.request == productRequest(number, entityID: "shelf-\(number % 5)"))
        }
        #expect(try Data(contentsOf: report.movedTo.appendingPathComponent("data.mdb")) == damaged, "kept as it was")
        #expect(report.movedTo.deletingLastPathComponent().path == journal.directory.deletingLastPathComponent().path)
        defer { try? FileManager.default.removeItem(at: report.movedTo) }

        let fresh = try journal.open()
        defer { fresh.close() }
        #expect(try fresh.ledger().entries.isEmpty)
    }

    @Test func aJournalCutShortReportsWhatItsPagesStillHold() async throws {
        let (journal, ids) = try await writtenJournal()
        try FileHandle(forUpdating: dataFile(journal)).truncate(atOffset: 64 << 10)
        let report = try Outbox.moveAsideDamagedJournal(at: journal.directory)
        defer { try? FileManager.default.removeItem(at: report.movedTo) }
        #expect(report.eventsRead > 0)
        #expect(report.operationCount <= ids.count)
        #expect(report.pendingOperations.allSatisfy { ids.contains($0.id) })
    }

    @Test func sealedRequestsOpenOnlyWithTheKey() async throws {
        let key = try SealingKey(bytes: Array(repeating: 7, count: 32))
        let (journal, _) = try await writtenJournal(operations: 10, key: key)
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-copy-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: journal.directory, to: copy)
        defer { try? FileManager.default.removeItem(at: copy) }

        let withKey = try Outbox.moveAsideDamagedJournal(at: journal.directory, encryptionKey: key)
        defer { try? FileManager.default.removeItem(at: withKey.movedTo) }
        #expect(!withKey.pendingOperations.isEmpty)
        #expect(withKey.pendingOperations.allSatisfy { $0.request?.entityLabel.hasPrefix("Antiseptic") == true })

        let withoutKey = try Outbox.moveAsideDamagedJournal(at: copy)
        defer { try? FileManager.default.removeItem(at: withoutKey.movedTo) }
        #expect(withoutKey.pendingOperations.map(\.id) == withKey.pendingOperations.map(\.id))
        #expect(withoutKey.pendingOperations.allSatisfy { $0.request == nil })
    }

    @Test func anOpenJournalIsNotMoved() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        #expect(throws: OutboxError.alreadyOpen(path: journal.directory.standardizedFileURL.resolvingSymlinksInPath().path)) {
            _ = try Outbox.moveAsideDamagedJournal(at: journal.directory)
        }
        #expect(try outbox.ledger().entries.isEmpty)
    }
}

@Suite("Creating a journal")
struct CreatingJournalTests {
    @Test func aCreationKilledMidwayIsClearedAtTheNextOpen() async throws {
        let journal = TestJournal()
        let staging = journal.directory.appendingPathComponent(".creating")
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        try Data(repeating: 0xAB, count: 8192).write(to: staging.appendingPathComponent("data.mdb"))
        #expect {
            _ = try JournalReader(directory: journal.directory)
        } throws: { error in
            guard case OutboxError.notAJournal(_, let reason) = error else { return false }
            return reason.contains("creation was interrupted")
        }

        let outbox = try journal.open()
        let id = try await outbox.enqueue(productRequest(1))
        outbox.close()
        #expect(!FileManager.default.fileExists(atPath: staging.path))
        let reader = try JournalReader(directory: journal.directory)
        defer { reader.close() }
        #expect(try reader.operation(id)?.status == .queued)
    }

    @Test func anEmptyDataFileLeftByAnOlderEngineIsReplaced() async throws {
        let journal = TestJournal()
        try FileManager.default.createDirectory(at: journal.directory, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: dataFile(journal).path, contents: Data()))
        #expect(throws: OutboxError.self) { _ = try JournalReader(directory: journal.directory) }
        let outbox = try journal.open()
        defer { outbox.close() }
        _ = try await outbox.enqueue(productRequest(1))
        #expect(try outbox.ledger().entries.count == 1)
    }

    @Test func aCreationThatFailsLeavesNothingBehind() throws {
        let journal = TestJournal()
        #expect(throws: OutboxError.storageFull(limitBytes: 1 << 30, errno: ENOSPC)) {
            _ = try Outbox(directory: journal.directory, transport: journal.transport, configuration: journal.configuration(),
                           faultHook: LMDBFaultHook { $0 == .commit ? .noSpace : nil })
        }
        #expect(!FileManager.default.fileExists(atPath: dataFile(journal).path))
        #expect(!FileManager.default.fileExists(atPath: journal.directory.appendingPathComponent(".creating").path))
        #expect(throws: OutboxError.self) { _ = try JournalReader(directory: journal.directory) }
    }

    @Test(arguments: [64 << 10, 65_537, 100_000, (1 << 20) + 3, 4 << 20])
    func everyStartingSizeFromTheMinimumWorks(_ bytes: Int) async throws {
        let journal = TestJournal()
        let outbox = try journal.open { $0.initialJournalBytes = bytes }
        var ids: [OperationID] = []
        for number in 0..<40 { ids.append(try await outbox.enqueue(productRequest(number))) }
        outbox.close()
        let reopened = try journal.open { $0.initialJournalBytes = bytes }
        defer { reopened.close() }
        #expect(try reopened.ledger().entries.map(\.operationID) == ids)
    }
}

@Suite("The configuration is checked at open")
struct ConfigurationCheckTests {
    static let cases: [(field: String, change: @Sendable (inout OutboxConfiguration) -> Void)] = [
        ("account", { $0.account = "" }),
        ("maxConcurrentLanes", { $0.maxConcurrentLanes = 0 }),
        ("maxConcurrentLanes", { $0.maxConcurrentLanes = -3 }),
        ("maxConcurrentLanes", { $0.maxConcurrentLanes = 100_000 }),
        ("maxJournalBytes", { $0.maxJournalBytes = 0 }),
        ("maxJournalBytes", { $0.maxJournalBytes = 3 }),
        ("maxJournalBytes", { $0.maxJournalBytes = -1 }),
        ("initialJournalBytes", { $0.initialJournalBytes = 0 }),
        ("initialJournalBytes", { $0.initialJournalBytes = -4096 }),
        ("initialJournalBytes", { $0.initialJournalBytes = 32 << 10 }),
        ("maxPayloadBytes", { $0.maxPayloadBytes = 0 }),
        ("retryPolicy.initialDelaySeconds", { $0.retryPolicy = OperationTypePolicy.RetryPolicy(initialDelaySeconds: 0, multiplier: 2, maxDelaySeconds: 300) }),
        ("retryPolicy.multiplier", { $0.retryPolicy = OperationTypePolicy.RetryPolicy(initialDelaySeconds: 2, multiplier: 0.5, maxDelaySeconds: 300) }),
        ("retryPolicy.maxDelaySeconds", { $0.retryPolicy = OperationTypePolicy.RetryPolicy(initialDelaySeconds: 2, multiplier: 2, maxDelaySeconds: 1) }),
        ("retryPolicy.jitterFraction", { $0.retryPolicy = OperationTypePolicy.RetryPolicy.standard.jittered(2) }),
        ("retryPolicy.initialDelaySeconds", { $0.retryPolicy = OperationTypePolicy.RetryPolicy(initialDelaySeconds: .nan, multiplier: 2, maxDelaySeconds: 300) }),
        ("compaction.maxEvents", { $0.compaction = OutboxConfiguration.CompactionPolicy(maxEvents: 0, keepSettledSeconds: 0) }),
        ("compaction.keepSettledSeconds", { $0.compaction = OutboxConfiguration.CompactionPolicy(maxEvents: 10, keepSettledSeconds: -1) }),
        ("operationPolicies", { $0.operationPolicies = ["": .onlineOnly] }),
    ]

    @Test(arguments: 0..<cases.count)
    func aValueOutOfRangeThrowsNamingItsFieldAndNothingIsCreated(_ index: Int) {
        let journal = TestJournal()
        #expect {
            _ = try journal.open(Self.cases[index].change)
        } throws: { error in
            guard case OutboxError.invalidConfiguration(let field, let problem) = error else { return false }
            return field == Self.cases[index].field && !problem.isEmpty
        }
        #expect(!FileManager.default.fileExists(atPath: journal.directory.path))
    }
}

@Suite("A full disk")
struct FullDiskTests {
    @Test(arguments: [LMDBError.noSpace, .quotaExceeded, .fileTooLarge])
    func everyNoRoomAnswerIsStorageFullCarryingItsErrno(_ failure: LMDBError) async throws {
        let journal = TestJournal()
        let full = Mutex(false)
        let outbox = try Outbox(directory: journal.directory, transport: journal.transport, configuration: journal.configuration(),
                                faultHook: LMDBFaultHook { call in call == .commit && full.withLock { $0 } ? failure : nil })
        defer { outbox.close() }
        let kept = try await outbox.enqueue(productRequest(1))
        full.withLock { $0 = true }
        await #expect(throws: OutboxError.storageFull(limitBytes: 1 << 30, errno: failure.rawValue)) {
            _ = try await outbox.enqueue(productRequest(2))
        }
        #expect(try outbox.ledger().entries.map(\.operationID) == [kept])
    }

    @Test func anIOErrorIsStorageFullOnlyWhenTheFileSystemShowsNoRoom() {
        let path = FileManager.default.temporaryDirectory.path
        #expect(OutboxError(storage: LMDBError.io, limitBytes: 10, path: path, availableBytes: { _ in 4096 })
            == .storageFull(limitBytes: 10, errno: EIO))
        #expect(OutboxError(storage: LMDBError.io, limitBytes: 10, path: path, availableBytes: { _ in 1 << 30 })
            == .storage(code: EIO, message: LMDBError.io.description))
        #expect(OutboxError(storage: LMDBError.io, limitBytes: 10, path: nil) == .storage(code: EIO, message: LMDBError.io.description))
    }

    @Test func anIOErrorAtTheFileSizeLimitIsStorageFullWithEFBIG() {
        let path = FileManager.default.temporaryDirectory.path
        // LMDB reports a write cut short at RLIMIT_FSIZE as EIO: the data file at the limit says which.
        #expect(OutboxError(storage: LMDBError.io, limitBytes: 10, path: path, availableBytes: { _ in 1 << 30 }, atFileSizeLimit: { _ in true })
            == .storageFull(limitBytes: 10, errno: EFBIG))
        #expect(OutboxError(storage: LMDBError.io, limitBytes: 10, path: path, availableBytes: { _ in 1 << 30 }, atFileSizeLimit: { _ in false })
            == .storage(code: EIO, message: LMDBError.io.description))
    }

    @Test func aFullDiskOpensServesReadsAndHoldsAnInterruptedAttemptUntilThereIsRoom() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        // The process ends while the attempt is in flight: the request never reached the server.
        let id = try await journal.interruptAnAttempt(on: server, applied: false)

        // The disk is full now: every commit fails for want of room, flushed or not.
        let counting = ScriptedTransport(otherwise: .handle { try await server.send($0) })
        let full = try Outbox(directory: journal.directory, transport: counting, configuration: journal.configuration(),
                              faultHook: LMDBFaultHook { $0 == .commit || $0 == .commitWithoutFlush ? .noSpace : nil })
        #expect(try full.operation(id)?.status == .syncing, "its abandonment is not recorded yet")
        #expect(try full.syncTab(isOnline: true).totalCount == 1)
        await full.drain()
        #expect(counting.requests.isEmpty, "a row whose abandonment is not recorded is held, not sent")
        await #expect(throws: OutboxError.storageFull(limitBytes: 1 << 30, errno: ENOSPC)) {
            _ = try await full.enqueue(productRequest(2))
        }
        full.close()

        // Room again: the abandonment lands, and the row is sent once.
        let roomy = try journal.open(server: counting)
        defer { roomy.close() }
        await roomy.drain()
        #expect(try roomy.operation(id)?.status == .synced)
        #expect(counting.requests.count == 1)
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }
}

/// Runs what follows it as another user: nothing when not root, `setpriv` to `nobody` when root
/// (root reads every file whatever its mode); `nil` when root has no `setpriv`.
private let asAnotherUser: [String]? = {
    guard getuid() == 0 else { return [] }
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
    return setpriv.map { [$0, "--reuid=65534", "--regid=65534", "--clear-groups"] }
}()

@Suite("A journal this user may not read", .enabled(if: asAnotherUser != nil, "running as root needs setpriv to run as another user"))
struct UnreadableJournalTests {
    /// The child's one line on opening the journal at `directory` read-only, as another user.
    private func openAsAnotherUser(_ directory: URL) throws -> String {
        let process = try ChildProcess("outbox-test-child", ["open-reader", directory.path], through: asAnotherUser ?? [])
        let line = try process.readLine()
        _ = process.wait()
        return line
    }

    /// A journal others may enter and read, but for what a test takes away.
    private func readableJournal() async throws -> TestJournal {
        let (journal, _) = try await writtenJournal(operations: 3)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: journal.directory.path)
        for name in ["data.mdb", "lock.mdb"] {
            let path = journal.directory.appendingPathComponent(name).path
            if FileManager.default.fileExists(atPath: path) {
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            }
        }
        return journal
    }

    @Test func anUnreadableDataFileIsNamedInAPermissionError() async throws {
        let journal = try await readableJournal()
        #expect(try openAsAnotherUser(journal.directory) == "opened", "readable, it opens (without LMDB's lock file if need be)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: dataFile(journal).path)
        let line = try openAsAnotherUser(journal.directory)
        #expect(line == "refused: \(OutboxError.permissionDenied(path: dataFile(journal).path))", "\(line)")
    }

    @Test func aDirectoryThisUserMayNotEnterIsNamedInAPermissionError() async throws {
        let journal = try await readableJournal()
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: journal.directory.path)
        let line = try openAsAnotherUser(journal.directory)
        #expect(line == "refused: \(OutboxError.permissionDenied(path: journal.directory.path))", "\(line)")
    }
}

@Suite("Stored bytes that do not decode")
struct UndecodableBytesTests {
    @Test func aProjectionValueThatDoesNotDecodeIsAProjectionErrorNotAStorageOne() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let id = try await outbox.enqueue(productRequest(1))
        let schema = outbox.store.schema
        let state = try #require(try outbox.operationState(id))
        // A flipped length: the status index now holds 3 bytes where an operation id takes 16.
        try outbox.store.environment.write { txn in
            let key = JournalCodec.StatusKey.bytes((state.status, state.firstSeq))
            try key.withUnsafeBytes { key in
                try [UInt8](repeating: 7, count: 3).withUnsafeBytes { value in
                    try txn.put(schema.byStatus, encodedKey: key, encodedValue: value)
                }
            }
        }
        #expect {
            _ = try outbox.ledger()
        } throws: { error in
            guard case OutboxError.projectionCorrupt(let reason) = error else { return false }
            return reason.contains("by-status") && reason.contains("16")
        }
    }
}
