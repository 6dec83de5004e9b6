import Foundation
@testable import Outbox
import OutboxAudit
import struct Outbox.Attachment
import OutboxCore
import OutboxCrypto
import OutboxTesting
import Testing

/// A photo taken with no signal: kept whole before the write is saved, uploaded in segments on
/// a queue of its own once the signal is back, completed by the server with the file's hash, and
/// only then is the write that names it sent.
@Suite("Attachments", .timeLimit(.minutes(10)))
struct AttachmentTests {
    /// Bytes of `size`, distinct per `seed`.
    static func photoBytes(_ size: Int, seed: UInt8 = 7) -> Data {
        Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    /// A product whose payload names `photo`.
    static func request(naming photos: [Attachment], number: Int = 1) -> OutboxRequest {
        let names = photos.map { "\"\($0.id)\"" }.joined(separator: ",")
        var request = productRequest(number)
        request.payload = Data(#"{"id":"product-\#(number)","name":"Antiseptic","photos":[\#(names)]}"#.utf8)
        return request
    }

    /// A file in a fresh temporary directory.
    static func file(_ bytes: Data, name: String = "note.jpg") throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-photo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try bytes.write(to: url)
        return url
    }

    @Test func aPhotoTakenOfflineIsKeptThenUploadedInSegmentsAndTheWriteSentOnceAfter() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.objectStore.segmentSize = 1000
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let bytes = Self.photoBytes(3_500)
        let photo = Attachment(file: try Self.file(bytes), contentType: "image/jpeg")
        #expect(outbox.canKeep(attachmentBytes: photo.size ?? 0))
        let id = try await outbox.enqueue(Self.request(naming: [photo]), attaching: [photo])

        // Kept whole, named by its hash, before anything else.
        let digest = SHA256Digest(of: bytes)
        #expect(try Data(contentsOf: outbox.files.url(of: digest)) == bytes)
        await outbox.drain()
        let waiting = try #require(try outbox.operation(id))
        #expect(waiting.status == .queued)
        #expect(waiting.waitingOn == .attachment(photo.id, landed: 0, of: 3_500))
        #expect(server.requests.allSatisfy { $0.endpoint != "/products" }, "the write is never sent before its file")

        server.setOnline(true)
        // The grant request met no network: asked again after its backoff.
        journal.clock.advance(by: 60)
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .synced)
        #expect(server.objectStore.object(photo.id) == bytes)
        #expect((1...4).allSatisfy { server.objectStore.puts(photo.id, segment: $0) == 1 }, "each segment sent once")
        let kinds = try outbox.journalEvents(of: id).map(\.kind)
        #expect(kinds == [.enqueued, .attachmentGranted, .segmentLanded, .segmentLanded, .segmentLanded, .segmentLanded,
                          .attachmentCompleted, .attemptStarted, .attemptFinished])
        let products = server.requests.filter { $0.endpoint == "/products" }
        #expect(products.count == 1)
        let completedAt = try #require(server.requests.firstIndex { $0.endpoint.hasSuffix("/complete") })
        #expect(try #require(server.requests.firstIndex { $0.endpoint == "/products" }) > completedAt)
    }

    @Test func theManifestIsInTheEnqueuedEventAndTheStateKeepsTheProgress() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let bytes = Self.photoBytes(10)
        let signature = Attachment(bytes: bytes, contentType: "image/png", name: "signature.png")
        let id = try await outbox.enqueue(Self.request(naming: [signature]), attaching: [signature])
        guard case .enqueued(let enqueued) = try #require(try outbox.journalEvents(of: id).first).body else {
            Issue.record("the first event is not enqueued")
            return
        }
        #expect(enqueued.attachments == [AttachmentManifest(id: signature.id, name: "signature.png", contentType: "image/png",
                                                            size: 10, sha256: SHA256Digest(of: bytes))])
        // Read back from the disk, after a reopen: the state and its index survive.
        outbox.close()
        let reopened = try journal.open(server: server)
        defer { reopened.close() }
        let state = try #require(try reopened.operationState(id))
        #expect(state.attachments.map(\.manifest) == enqueued.attachments)
        #expect(try reopened.verify().isClean)
    }

    @Test(arguments: [
        ("missing", "does not exist"),
        ("directory", "is a directory"),
        ("tooLarge", "at most 100 are accepted"),
        ("unnamed", "the payload does not name"),
        ("tooMany", "a write carries at most 2"),
        ("repeated", "repeats attachment id"),
        ("badType", "is not a media type"),
    ])
    func badAttachmentsAreRefusedNamingTheFixAndNothingIsWritten(_ kind: String, _ expected: String) async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer()) {
            $0.attachments.maxFileBytes = 100
            $0.attachments.maxPerWrite = 2
        }
        defer { outbox.close() }
        let folder = try Self.file(Data("x".utf8)).deletingLastPathComponent()
        let good = Attachment(bytes: Data("ok".utf8), contentType: "image/png", name: "a.png")
        var photos: [Attachment]
        var named: [Attachment]?
        switch kind {
        case "missing": photos = [Attachment(file: folder.appendingPathComponent("gone.jpg"), contentType: "image/jpeg")]
        case "directory": photos = [Attachment(file: folder, contentType: "image/jpeg")]
        case "tooLarge": photos = [Attachment(bytes: Self.photoBytes(101), contentType: "image/jpeg", name: "big.jpg")]
        case "unnamed":
            photos = [good]
            named = []
        case "tooMany": photos = (0..<3).map { _ in Attachment(bytes: Data("x".utf8), contentType: "image/png", name: "x.png") }
        case "repeated": photos = [good, Attachment(id: good.id, bytes: Data("y".utf8), contentType: "image/png", name: "b.png")]
        default: photos = [Attachment(bytes: Data("x".utf8), contentType: "jpeg", name: "x.jpg")]
        }
        let before = try outbox.store.queries.events(from: JournalSequence(rawValue: 1), limit: 10_000).count
        do {
            _ = try await outbox.enqueue(Self.request(naming: named ?? photos), attaching: photos)
            Issue.record("\(kind) was accepted")
        } catch let OutboxError.invalidRequest(field, problem) {
            #expect(field.hasPrefix("attachments"), "\(field)")
            #expect(problem.contains(expected), "\(problem)")
        }
        #expect(try outbox.store.queries.events(from: JournalSequence(rawValue: 1), limit: 10_000).count == before)
        #expect(outbox.files.listing().files.isEmpty, "no file is kept for a refused write")
    }

    @Test func aFileTheBudgetCannotHoldIsRefusedBeforeAnythingIsSaved() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer()) {
            $0.attachments.maxFileBytes = 1_000
            $0.attachments.budgetBytes = 1_500
        }
        defer { outbox.close() }
        let first = Attachment(bytes: Self.photoBytes(1_000), contentType: "image/jpeg", name: "one.jpg")
        _ = try await outbox.enqueue(Self.request(naming: [first]), attaching: [first])
        #expect(!outbox.canKeep(attachmentBytes: 1_000))
        #expect(outbox.canKeep(attachmentBytes: 500))
        let second = Attachment(bytes: Self.photoBytes(1_000, seed: 9), contentType: "image/jpeg", name: "two.jpg")
        await #expect(throws: OutboxError.storageFull(limitBytes: 1_500)) {
            try await outbox.enqueue(Self.request(naming: [second], number: 2), attaching: [second])
        }
        #expect(outbox.files.listing().files.count == 1)
    }

    @Test func aMovedFileIsTakenAndACopiedOneLeftAlone() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        let moved = try Self.file(Self.photoBytes(50))
        let copied = try Self.file(Self.photoBytes(60))
        let photos = [Attachment(file: moved, moving: true, contentType: "image/jpeg"), Attachment(file: copied, contentType: "image/jpeg")]
        _ = try await outbox.enqueue(Self.request(naming: photos), attaching: photos)
        #expect(!FileManager.default.fileExists(atPath: moved.path))
        #expect(FileManager.default.fileExists(atPath: copied.path))
        #expect(outbox.files.listing().files.count == 2)
    }

    @Test func anExpiredGrantIsAskedForAgainAndTheUploadResumesFromItsLandedSegments() async throws {
        let journal = TestJournal()
        let store = InMemoryObjectStore(now: { [clock = journal.clock] in clock.now() })
        let server = InMemoryServer(objectStore: store)
        store.segmentSize = 100
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let bytes = Self.photoBytes(450)
        let photo = Attachment(bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let id = try await outbox.enqueue(Self.request(naming: [photo]), attaching: [photo])
        // Two segments land, then the upload is cut off.
        await outbox.uploadFilesForTest(stoppingAfterSegments: 2)
        #expect(store.landedSegments(photo.id) == [1, 2])
        // Meanwhile every URL handed out expires.
        store.expireGrants()
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .synced)
        #expect(store.object(photo.id) == bytes)
        #expect(store.puts(photo.id, segment: 1) == 1 && store.puts(photo.id, segment: 2) == 1, "landed segments are not sent again")
        let grants = try outbox.journalEvents(of: id).filter { $0.kind == .attachmentGranted }.count
        #expect(grants == 2)
    }

    @Test func aGrantThatOutlivesItsLifetimeByUptimeIsNotUsed() async throws {
        let journal = TestJournal()
        let store = InMemoryObjectStore(now: { [clock = journal.clock] in clock.now() })
        let server = InMemoryServer(objectStore: store)
        store.segmentSize = 100
        store.lifetimeSeconds = 60
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let photo = Attachment(bytes: Self.photoBytes(300), contentType: "image/jpeg", name: "note.jpg")
        let id = try await outbox.enqueue(Self.request(naming: [photo]), attaching: [photo])
        await outbox.uploadFilesForTest(stoppingAfterSegments: 1)
        // The wall clock is moved back an hour, but the device's uptime runs on past the grant.
        journal.clock.advance(by: 55)
        journal.clock.set(to: journal.clock.now().addingTimeInterval(-3_600))
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(try outbox.journalEvents(of: id).filter { $0.kind == .attachmentGranted }.count == 2, "asked again by uptime, not by the wall clock")
        #expect(store.puts(photo.id, segment: 2) == 1)
    }

    @Test func aRefusedGrantHoldsTheWriteWithTheReasonKeepsTheFileAndARetryUploadsIt() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.objectStore.refuseGrants(status: 413, message: "Photos may be at most 5 MB.")
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let bytes = Self.photoBytes(200)
        let photo = Attachment(bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let id = try await outbox.enqueue(Self.request(naming: [photo]), attaching: [photo])
        await outbox.drain()
        let held = try #require(try outbox.operation(id))
        #expect(held.status == .failed)
        #expect(held.lastErrorCode == ErrorCode.attachmentRefused)
        #expect(OutboxWords.english.failure(code: held.lastErrorCode, serverMessage: held.lastServerMessage)
            == "The server refused the attached file: Photos may be at most 5 MB.")
        #expect(FileManager.default.fileExists(atPath: outbox.files.url(of: SHA256Digest(of: bytes)).path), "the file is kept")
        #expect(!server.requests.contains { $0.endpoint == "/products" })

        server.objectStore.acceptGrants()
        try await outbox.retry(id)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(server.objectStore.object(photo.id) == bytes)
    }

    @Test func aCompletionWhoseHashIsNotTheFilesHoldsTheWrite() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.objectStore.answerWrongHash()
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let photo = Attachment(bytes: Self.photoBytes(20), contentType: "image/jpeg", name: "note.jpg")
        let id = try await outbox.enqueue(Self.request(naming: [photo]), attaching: [photo])
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .failed && row.lastErrorCode == ErrorCode.attachmentMismatch)
        #expect(!server.requests.contains { $0.endpoint == "/products" })
    }

    @Test func aLostCompletionAnswerIsAskedAgainUnderItsKeyAndAnsweredTheSame() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let photo = Attachment(bytes: Self.photoBytes(20), contentType: "image/jpeg", name: "note.jpg")
        server.inject(.applyThenDropResponse, forKey: photo.id.requestKey("complete-0"))
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let id = try await outbox.enqueue(Self.request(naming: [photo]), attaching: [photo])
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .queued)
        journal.clock.advance(by: 3_600)
        await outbox.drain()
        let trail = try outbox.journalEvents(of: id).map { "\($0.kind)" }
        #expect(try outbox.operation(id)?.status == .synced, "\(trail) \(server.requests.map(\.endpoint))")
        let completions = server.requests.filter { $0.endpoint.hasSuffix("/complete") }
        #expect(completions.count == 2 && Set(completions.map { $0.headers[OutboxHeader.idempotencyKey] }).count == 1)
    }

    @Test func aMissingLocalFileHoldsItsWriteSayingSoNeverACrash() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let bytes = Self.photoBytes(20)
        let photo = Attachment(bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let id = try await outbox.enqueue(Self.request(naming: [photo]), attaching: [photo])
        try FileManager.default.removeItem(at: outbox.files.url(of: SHA256Digest(of: bytes)))
        server.setOnline(true)
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .failed && row.lastErrorCode == ErrorCode.attachmentDamaged)
        #expect(OutboxWords.english.failure(code: row.lastErrorCode, serverMessage: row.lastServerMessage) == OutboxWords.english.attachmentDamaged)
    }

    @Test func aSmallWriteOfAnotherRecordIsNotHeldUpByAPhotoThatCannotUploadYet() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.objectStore.segmentSize = 100
        server.objectStore.failNextPuts(503, 503, 503)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let photo = Attachment(bytes: Self.photoBytes(300), contentType: "image/jpeg", name: "note.jpg")
        let withPhoto = try await outbox.enqueue(Self.request(naming: [photo]), attaching: [photo])
        let plain = try await outbox.enqueue(productRequest(2))
        await outbox.drain()
        #expect(try outbox.operation(plain)?.status == .synced)
        #expect(try outbox.operation(withPhoto)?.status == .queued)
        #expect(try outbox.operation(withPhoto)?.waitingOn == .attachment(photo.id, landed: 0, of: 300))
    }

    @Test func filesGoAfterTheirWriteSettlesAndTheKeepPeriodPassesAndAStrayGoesAtOpen() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        var outbox = try journal.open(server: server) { $0.attachments.keepSeconds = 3_600 }
        let sent = Attachment(bytes: Self.photoBytes(20), contentType: "image/jpeg", name: "sent.jpg")
        let dropped = Attachment(bytes: Self.photoBytes(30), contentType: "image/jpeg", name: "dropped.jpg")
        let sentID = try await outbox.enqueue(Self.request(naming: [sent]), attaching: [sent])
        let droppedID = try await outbox.enqueue(Self.request(naming: [dropped], number: 2), attaching: [dropped])
        // A kill between keeping a file and its commit leaves a stray and a half-made copy.
        let stray = try outbox.files.keep(Attachment(bytes: Data("stray".utf8), contentType: "image/png", name: "s.png"), field: "x").manifest
        try Data("half".utf8).write(to: outbox.files.directory.appendingPathComponent(AttachmentFiles.incomingPrefix + "1"))
        try await outbox.discard(droppedID)
        server.setOnline(true)
        await outbox.drain()
        #expect(try outbox.operation(sentID)?.status == .synced)
        outbox.close()
        outbox = try journal.open(server: server) { $0.attachments.keepSeconds = 3_600 }
        let afterOpen = outbox.files.listing()
        #expect(Set(afterOpen.files.keys) == [sent.sha256(in: outbox)], "the discarded write's file and the stray go; the settled one stays its period")
        #expect(afterOpen.incoming.isEmpty)
        #expect(stray.sha256 != sent.sha256(in: outbox))
        journal.clock.advance(by: 3_601)
        outbox.close()
        outbox = try journal.open(server: server) { $0.attachments.keepSeconds = 3_600 }
        defer { outbox.close() }
        #expect(outbox.files.listing().files.isEmpty)
    }

    @Test func theSameIDSavedTwiceWithTheSameFileIsOneWrite() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer())
        defer { outbox.close() }
        let photo = Attachment(bytes: Self.photoBytes(20), contentType: "image/jpeg", name: "note.jpg")
        var request = Self.request(naming: [photo])
        request.operationID = OperationID()
        let first = try await outbox.enqueue(request, attaching: [photo])
        let second = try await outbox.enqueue(request, attaching: [photo])
        #expect(first == second)
        let other = Attachment(id: photo.id, bytes: Self.photoBytes(21), contentType: "image/jpeg", name: "note.jpg")
        await #expect(throws: OutboxError.operationIDReused(first)) { try await outbox.enqueue(request, attaching: [other]) }
    }

    @Test(arguments: [
        (200, true, UploadProtocol.Meaning.success), (201, true, .success), (401, true, .grantExpired), (403, true, .grantExpired),
        (401, false, .later), (403, false, .refused), (413, false, .refused), (404, true, .refused), (408, true, .later),
        (429, false, .later), (500, true, .later), (503, false, .later),
    ])
    func eachStatusMeansOneThing(_ status: Int, _ fromStore: Bool, _ meaning: UploadProtocol.Meaning) {
        #expect(UploadProtocol.meaning(of: status, fromStore: fromStore) == meaning)
    }

    @Test func requestKeysAreStablePerPurposeAndDistinctAcrossThem() {
        let id = AttachmentID()
        #expect(id.requestKey("grant-1") == id.requestKey("grant-1"))
        #expect(id.requestKey("grant-1") != id.requestKey("grant-2"))
        #expect(id.requestKey("complete-0") != AttachmentID().requestKey("complete-0"))
        #expect(UUID(uuidString: id.requestKey("complete-0")) != nil)
    }

    @Test func theMembersWordsSayHowFarAnUploadGot() {
        let words = OutboxWords.english
        #expect(words.upload(name: "note.jpg", landed: 3_100_000, of: 8_000_000, online: true) == "uploading note.jpg, 3.1 of 8 MB")
        #expect(words.upload(name: "note.jpg", landed: 0, of: 8_000_000, online: false) == "note.jpg waiting for internet")
        #expect(words.upload(name: "sig.png", landed: 1_000, of: 20_000, online: true) == "uploading sig.png, 1 of 20 KB")
    }
}

extension Attachment {
    /// The hash its bytes are kept under.
    func sha256(in outbox: Outbox) -> SHA256Digest {
        guard case .bytes(let data) = source else { preconditionFailure("a test's attachment from bytes") }
        return SHA256Digest(of: data)
    }
}

extension Outbox {
    /// Runs the attachments' queue alone until `segments` segments landed (an upload cut off,
    /// without killing).
    func uploadFilesForTest(stoppingAfterSegments segments: Int) async {
        await uploadSomeSegments(segments)
    }
}

@Suite("Attachments at a sign-out and in an export", .timeLimit(.minutes(10)))
struct AttachmentSignOutTests {
    @Test func aRefusedSignOutNamesTheFilesItWouldDrop() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let photo = Attachment(bytes: AttachmentTests.photoBytes(20), contentType: "image/jpeg", name: "note.jpg")
        _ = try await outbox.enqueue(AttachmentTests.request(naming: [photo]), attaching: [photo])
        do {
            try await outbox.signOut(discardPending: false)
            Issue.record("the sign-out was not refused")
        } catch OutboxError.pendingWork(_, let writes) {
            #expect(writes.first?.attachments == ["note.jpg"])
            #expect(writes.first?.description == "Products · Antiseptic 1 (New product, with note.jpg)")
        }
    }

    @Test func anExportCarriesTheFilesAndAnImportUploadsThemOnce() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let key = SealingKey.random()
        let exportURL = journal.directory.deletingLastPathComponent().appendingPathComponent("export-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: exportURL) }
        let bytes = AttachmentTests.photoBytes(3_000)
        let photo = Attachment(bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        var outbox = try journal.open(server: server)
        let id = try await outbox.enqueue(AttachmentTests.request(naming: [photo]), attaching: [photo])
        let exported = try outbox.exportPending(to: exportURL, key: key)
        #expect(exported.first?.attachments == ["note.jpg"])
        try await outbox.signOut(discardPending: true)
        outbox.close()
        try Outbox.wipeJournal(at: journal.directory)

        outbox = try journal.open(server: server)
        defer { outbox.close() }
        let report = try await outbox.importPending(from: exportURL, key: key)
        #expect(report.imported.map(\.operationID) == [id])
        server.setOnline(true)
        journal.clock.advance(by: 60)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(server.objectStore.object(photo.id) == bytes)
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }
}

@Suite("A record whose write carries a file", .timeLimit(.minutes(10)))
struct AttachmentRecordTests {
    @Test func theRecordSaysHowFarItsFileGot() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.objectStore.segmentSize = 1_000_000
        server.setOnline(false)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let photo = Attachment(bytes: AttachmentTests.photoBytes(2_500_000), contentType: "image/jpeg", name: "note.jpg")
        let key = RecordKey(business: "pharmacy-7", type: "product", id: "product-1")
        let request = AttachmentTests.request(naming: [photo])
        _ = try await outbox.enqueue(request, changing: [.put(key, request.payload)], attaching: [photo])
        let sync = try #require(try outbox.record(key)).sync
        #expect(sync.pending.first?.upload == LocalRecord.Sync.Upload(attachment: photo.id, name: "note.jpg", landed: 0, size: 2_500_000))
        #expect(OutboxWords.english.recordState(sync, online: false) == "note.jpg waiting for internet")

        server.setOnline(true)
        await outbox.uploadFilesForTest(stoppingAfterSegments: 1)
        let moving = try #require(try outbox.record(key)).sync
        #expect(OutboxWords.english.recordState(moving, online: true) == "uploading note.jpg, 1 of 2.5 MB")
    }
}

@Suite("What an upload's answer means", .timeLimit(.minutes(10)))
struct UploadAnswerTests {
    @Test func aServersInProgressAnswerIsAskedAgainAndAReusedKeyRefused() {
        let inProgress = TransportResponse(statusCode: 409, body: Data(#"{"code":"idempotency_in_progress","message":"retry shortly"}"#.utf8))
        let reused = TransportResponse(statusCode: 409, body: Data(#"{"code":"idempotency_conflict","message":"another body"}"#.utf8))
        #expect(UploadProtocol.meaning(of: inProgress, fromStore: false) == .later)
        #expect(UploadProtocol.meaning(of: reused, fromStore: false) == .refused)
        #expect(UploadProtocol.meaning(of: inProgress, fromStore: true) == .refused, "the store speaks no claims")
    }
}
