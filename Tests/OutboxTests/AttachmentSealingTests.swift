import Foundation
@testable import Outbox
import OutboxAudit
import struct Outbox.Attachment
import OutboxCore
import OutboxCrypto
import OutboxTesting
import Testing

/// With encryption at rest a photo's local copy is sealed in chunks: nothing of its bytes is on
/// the disk in plaintext, each segment is opened for the store as it is sent, and what reaches
/// the store is the photo itself.
@Suite("Attachments sealed at rest", .timeLimit(.minutes(10)))
struct AttachmentSealingTests {
    /// Bytes no chunk of ciphertext could hold by chance: a marker repeated.
    static func markedBytes(_ size: Int) -> Data {
        let marker = Array("PLAINTEXT-PHOTO-".utf8)
        return Data((0..<size).map { marker[$0 % marker.count] })
    }

    static func containsMarker(_ data: Data) -> Bool {
        data.range(of: Data("PLAINTEXT-PHOTO-".utf8)) != nil
    }

    @Test func aSealedPhotoIsKeptWithoutPlaintextAndUploadsAsItself() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.objectStore.segmentSize = 700_000
        server.setOnline(false)
        let key = SealingKey.random()
        let outbox = try journal.open(server: server) { $0.encryptionKey = key }
        defer { outbox.close() }
        // Over two chunks of the sealed format, and segments that cut chunks in the middle.
        let bytes = Self.markedBytes(2 * SealedFileFormat.chunkBytes + 12_345)
        let photo = Attachment(bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let id = try await outbox.enqueue(AttachmentTests.request(naming: [photo]), attaching: [photo])

        let digest = SHA256Digest(of: bytes)
        let kept = try #require(outbox.files.location(of: digest))
        #expect(kept.sealed && kept.url.lastPathComponent == digest.hex + ".sealed")
        let onDisk = try Data(contentsOf: kept.url)
        #expect(!Self.containsMarker(onDisk), "no plaintext of the photo on the disk")
        #expect(Int64(onDisk.count) == SealedFileFormat.sealedSize(ofPlaintext: Int64(bytes.count)))
        #expect(!FileManager.default.fileExists(atPath: outbox.files.plainURL(of: digest).path))
        #expect(try outbox.verify().isClean)
        #expect(try outbox.attachment(photo.id)?.file == .intactSealed)

        server.setOnline(true)
        journal.clock.advance(by: 60)
        await outbox.drain()
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(server.objectStore.object(photo.id) == bytes, "the store holds the photo, not its sealed form")
        #expect((1...4).allSatisfy { server.objectStore.puts(photo.id, segment: $0) == 1 })
    }

    @Test func aReaderWithoutTheKeySeesTheSealedFileButDoesNotCallItDamaged() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let key = SealingKey.random()
        let photo = Attachment(bytes: Self.markedBytes(5_000), contentType: "image/jpeg", name: "note.jpg")
        do {
            let outbox = try journal.open(server: server) { $0.encryptionKey = key }
            _ = try await outbox.enqueue(AttachmentTests.request(naming: [photo]), attaching: [photo])
            outbox.close()
        }
        do {
            let blind = try JournalReader(directory: journal.directory)
            #expect(try blind.attachment(photo.id)?.file == .sealedNotOpened)
            #expect(try blind.verify().isClean, "a sealed file of the right size is no finding for a reader without the key")
        }
        let keyed = try JournalReader(directory: journal.directory, encryptionKey: key)
        #expect(try keyed.attachment(photo.id)?.file == .intactSealed)
    }

    @Test(arguments: ["flip", "cut", "swap"])
    func aDamagedSealedFileIsNamedAndHoldsItsWrite(_ damage: String) async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let key = SealingKey.random()
        let outbox = try journal.open(server: server) { $0.encryptionKey = key }
        defer { outbox.close() }
        let bytes = Self.markedBytes(2 * SealedFileFormat.chunkBytes + 100)
        let photo = Attachment(bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let id = try await outbox.enqueue(AttachmentTests.request(naming: [photo]), attaching: [photo])
        let url = try #require(outbox.files.location(of: SHA256Digest(of: bytes))).url
        var sealed = try Data(contentsOf: url)
        let stride = SealedFileFormat.chunkBytes + SealedFileFormat.chunkOverhead
        let second = SealedFileFormat.headerBytes + stride
        switch damage {
        case "flip": sealed[second + 100] ^= 0x01
        case "cut": sealed = sealed.prefix(SealedFileFormat.headerBytes + 2 * stride)  // the last chunk gone, at a chunk's edge
        default:
            // The first two chunks swapped.
            let first = sealed[SealedFileFormat.headerBytes..<second]
            let next = sealed[second..<(second + stride)]
            sealed.replaceSubrange(SealedFileFormat.headerBytes..<(second + stride), with: next + first)
        }
        try sealed.write(to: url)
        let findings = try outbox.verify().findings
        #expect(findings.map(\.kind) == [.attachmentFileDamaged], "\(findings)")

        server.setOnline(true)
        journal.clock.advance(by: 60)
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .failed)
        #expect(row.lastErrorCode == ErrorCode.attachmentDamaged)
        #expect(server.requests.allSatisfy { $0.endpoint != "/products" }, "a write whose file is damaged is never sent")
    }

    @Test func turningEncryptionOnSealsTheFilesKeptBeforeAndARotationLeavesThemAsTheyAre() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let bytes = Self.markedBytes(30_000)
        let photo = Attachment(bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let digest = SHA256Digest(of: bytes)
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let id = try await outbox.enqueue(AttachmentTests.request(naming: [photo]), attaching: [photo])
        #expect(outbox.files.location(of: digest)?.sealed == false)

        let first = SealingKey.random()
        try await outbox.rotateEncryptionKey(to: first)
        let sealed = try #require(outbox.files.location(of: digest))
        #expect(sealed.sealed)
        #expect(!FileManager.default.fileExists(atPath: outbox.files.plainURL(of: digest).path), "the plaintext copy is gone")
        let sealedBytes = try Data(contentsOf: sealed.url)
        #expect(!Self.containsMarker(sealedBytes))

        // The files have a key of their own: a rotation re-seals it, not them.
        let second = SealingKey.random()
        try await outbox.rotateEncryptionKey(to: second)
        #expect(try Data(contentsOf: sealed.url) == sealedBytes)
        #expect(try outbox.verify().isClean)
        outbox.close()

        let reopened = try journal.open(server: server) { $0.encryptionKey = second }
        defer { reopened.close() }
        #expect(try reopened.attachment(photo.id)?.file == .intactSealed)
        server.setOnline(true)
        journal.clock.advance(by: 60)
        await reopened.drain()
        #expect(try reopened.operation(id)?.status == .synced)
        #expect(server.objectStore.object(photo.id) == bytes)
    }

    @Test func turningEncryptionOffAndOnAgainKeepsEveryFileOpenable() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let first = SealingKey.random()
        let outbox = try journal.open(server: server) { $0.encryptionKey = first }
        defer { outbox.close() }
        let before = Attachment(bytes: Self.markedBytes(20_000), contentType: "image/jpeg", name: "before.jpg")
        _ = try await outbox.enqueue(AttachmentTests.request(naming: [before], number: 1), attaching: [before])
        try await outbox.rotateEncryptionKey(to: nil)
        // Off: the files keep their key, in the clear, and new ones are sealed with it.
        let during = Attachment(bytes: Self.markedBytes(30_000), contentType: "image/jpeg", name: "during.jpg")
        _ = try await outbox.enqueue(AttachmentTests.request(naming: [during], number: 2), attaching: [during])
        #expect(try outbox.attachment(before.id)?.file == .intactSealed)
        #expect(try outbox.attachment(during.id)?.file == .intactSealed)
        try await outbox.rotateEncryptionKey(to: SealingKey.random())
        #expect(try outbox.attachment(before.id)?.file == .intactSealed)
        #expect(try outbox.attachment(during.id)?.file == .intactSealed)
        #expect(try outbox.verify().isClean)
    }

    @Test func anExportOfASealedJournalCarriesThePhotoItself() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.setOnline(false)
        let key = SealingKey.random()
        let bytes = Self.markedBytes(40_000)
        let photo = Attachment(bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let exportURL = journal.directory.deletingLastPathComponent().appendingPathComponent("export-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: exportURL) }
        var outbox = try journal.open(server: server) { $0.encryptionKey = key }
        let id = try await outbox.enqueue(AttachmentTests.request(naming: [photo]), attaching: [photo])
        let exportKey = SealingKey.random()
        _ = try outbox.exportPending(to: exportURL, key: exportKey)
        try await outbox.signOut(discardPending: true)
        outbox.close()
        try Outbox.wipeJournal(at: journal.directory)

        outbox = try journal.open(server: server)
        defer { outbox.close() }
        #expect(try await outbox.importPending(from: exportURL, key: exportKey).imported.map(\.operationID) == [id])
        server.setOnline(true)
        journal.clock.advance(by: 60)
        await outbox.drain()
        #expect(server.objectStore.object(photo.id) == bytes)
    }
}

/// What the budget for kept files counts.
@Suite("The attachments' budget", .timeLimit(.minutes(10)))
struct AttachmentBudgetTests {
    @Test func theSameWriteSavedAgainCountsItsFilesOnce() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(server: InMemoryServer()) {
            $0.attachments.budgetBytes = 15_000
            $0.attachments.maxFileBytes = 12_000
        }
        defer { outbox.close() }
        let photo = Attachment(bytes: AttachmentTests.photoBytes(10_000), contentType: "image/jpeg", name: "note.jpg")
        var request = AttachmentTests.request(naming: [photo])
        request.operationID = OperationID()
        let first = try await outbox.enqueue(request, attaching: [photo])
        #expect(!outbox.canKeep(attachmentBytes: 10_000), "a second photo would pass the budget")
        #expect(try await outbox.enqueue(request, attaching: [photo]) == first, "the double tap is the same write, not storage full")
        var another = AttachmentTests.request(naming: [photo], number: 2)
        another.operationID = OperationID()
        await #expect(throws: OutboxError.storageFull(limitBytes: 15_000)) { try await outbox.enqueue(another, attaching: [photo]) }
    }
}

/// The sealed format read back whole and in any span, and its sizes.
@Suite("The sealed file format")
struct SealedFileFormatTests {
    func sealed(_ bytes: [UInt8], key: SealingKey) throws -> [UInt8] {
        let format = SealedFileFormat(key: key)
        let header = SealedFileFormat.header()
        var out = header.bytes
        var writer = SealedFileWriter(format: format, fileID: header.fileID) { out.append(contentsOf: $0) }
        // Handed over in pieces that do not line up with chunks.
        var at = 0
        while at < bytes.count {
            let take = min(300_001, bytes.count - at)
            try bytes[at..<(at + take)].withUnsafeBytes { try writer.append($0) }
            at += take
        }
        try writer.finish()
        return out
    }

    @discardableResult
    func withFile<R>(_ bytes: [UInt8], _ body: (Int32) throws -> R) throws -> R {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sealed-\(UUID().uuidString)")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let descriptor = open(url.path, O_RDONLY)
        defer { close(descriptor) }
        return try body(descriptor)
    }

    @Test(arguments: [0, 1, SealedFileFormat.chunkBytes - 1, SealedFileFormat.chunkBytes, SealedFileFormat.chunkBytes + 1,
                      3 * SealedFileFormat.chunkBytes + 777])
    func everySpanReadsBackAsWritten(_ size: Int) throws {
        let key = SealingKey.random()
        let plain = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let sealed = try sealed(plain, key: key)
        #expect(Int64(sealed.count) == SealedFileFormat.sealedSize(ofPlaintext: Int64(size)))
        #expect(SealedFileFormat.plaintextSize(ofSealed: Int64(sealed.count), chunkBytes: SealedFileFormat.chunkBytes) == Int64(size))
        try withFile(sealed) { descriptor in
            let reader = try SealedFileReader(descriptor, format: SealedFileFormat(key: key))
            var whole: [UInt8] = []
            try reader.readAll { whole.append(contentsOf: $0) }
            #expect(whole == plain)
            let spans = [(0, min(size, 10)), (size / 3, size / 3), (max(0, size - 5), min(size, 5))]
            for (offset, length) in spans {
                #expect(try reader.read(offset: Int64(offset), length: length) == Data(plain[offset..<(offset + length)]))
            }
            #expect(throws: AttachmentFileProblem.self) { try reader.read(offset: Int64(size), length: 1) }
        }
    }

    @Test func anotherKeyOpensNothing() throws {
        let sealed = try sealed(Array(repeating: 9, count: 5_000), key: SealingKey.random())
        try withFile(sealed) { descriptor in
            let reader = try SealedFileReader(descriptor, format: SealedFileFormat(key: SealingKey.random()))
            #expect(throws: AttachmentFileProblem.self) { try reader.readAll { _ in } }
        }
        try withFile(sealed) { descriptor in
            #expect(throws: AttachmentFileProblem.sealedWithoutKey) { try SealedFileReader(descriptor, format: nil) }
        }
    }
}

/// The bytes of the segment in flight move what the member sees, without a commit per chunk.
@Suite("An upload's progress in flight", .timeLimit(.minutes(10)))
struct UploadProgressTests {
    /// Reaches `server`, but sends the first segment only halfway (telling its progress) and
    /// holds it there until the test lets it go.
    final class HalfwayTransport: OutboxTransport {
        let server: InMemoryServer
        let reached = AsyncStream.makeStream(of: Void.self)
        let release = AsyncStream.makeStream(of: Void.self)
        let halfway: Int64

        init(server: InMemoryServer, halfway: Int64) {
            self.server = server
            self.halfway = halfway
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            try await server.send(request)
        }

        func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
            if segment.offset == 0 {
                segment.progress(halfway / 2)
                segment.progress(halfway)
                reached.continuation.yield()
                var releases = release.stream.makeAsyncIterator()
                _ = await releases.next()
            }
            return try await server.upload(segment)
        }
    }

    @Test func theRowAndTheRecordMoveWithTheSegmentInFlightAndObservationsHearIt() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.objectStore.segmentSize = 1_000_000
        let transport = HalfwayTransport(server: server, halfway: 600_000)
        let outbox = try journal.open(server: transport)
        defer { outbox.close() }
        let photo = Attachment(bytes: AttachmentTests.photoBytes(2_500_000), contentType: "image/jpeg", name: "note.jpg")
        let key = RecordKey(business: "pharmacy-7", type: "product", id: "product-1")
        let request = AttachmentTests.request(naming: [photo])
        let id = try await outbox.enqueue(request, changing: [.put(key, request.payload)], attaching: [photo])
        var rows = outbox.observe(.operation(id)).makeAsyncIterator()
        #expect(await rows.next()??.waitingOn == .attachment(photo.id, landed: 0, of: 2_500_000))

        let uploading = Task { await outbox.uploadFilesForTest(stoppingAfterSegments: 1) }
        var reached = transport.reached.stream.makeAsyncIterator()
        _ = await reached.next()
        // Halfway through segment 1, nothing journaled yet.
        #expect(try outbox.journalEvents(of: id).map(\.kind) == [.enqueued, .attachmentGranted])
        #expect(try outbox.operation(id)?.waitingOn == .attachment(photo.id, landed: 600_000, of: 2_500_000))
        let sync = try #require(try outbox.record(key)).sync
        #expect(OutboxWords.english.recordState(sync, online: true) == "uploading note.jpg, 0.6 of 2.5 MB")
        // The observation hears the step with no commit.
        var seen: Int64 = 0
        while seen < 600_000, let row = await rows.next() {
            if case .attachment(_, let landed, _)? = row?.waitingOn { seen = landed }
        }
        #expect(seen == 600_000)

        transport.release.continuation.yield()
        await uploading.value
        // Landed: counted once, as a landed segment.
        #expect(try outbox.operation(id)?.waitingOn == .attachment(photo.id, landed: 1_000_000, of: 2_500_000))
    }
}
