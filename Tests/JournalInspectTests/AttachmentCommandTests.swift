import Foundation
import JournalInspect
@testable import Outbox
import OutboxAudit
import struct Outbox.Attachment
import OutboxTesting
import TestHarness
import Testing

/// `attachment <id>`, `verify` and the report on journals whose writes carry photos, written
/// through the engine against the in-memory server and object store: each test reads what the
/// tool prints of a photo that went, one half uploaded, one refused, one whose file is gone or
/// damaged.
@Suite("attachment: the proof of a file, its file checked", .hangGuard)
struct AttachmentCommandTests {
    static let photoID = AttachmentID("8F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8")!

    /// Bytes of `size`, distinct per `seed`.
    static func photoBytes(_ size: Int, seed: UInt8 = 7) -> Data {
        Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    /// A product whose payload names `photo`.
    static func request(naming photo: Attachment, number: Int = 1) -> OutboxRequest {
        var request = product(number)
        request.payload = Data(#"{"id":"product-\#(number)","name":"Antiseptic \#(number)","photo":"\#(photo.id)"}"#.utf8)
        return request
    }

    /// An engine on a fresh journal, its clock at the fixtures' start, uploads in segments of 100 bytes.
    final class PhotoJournal {
        let directory = TemporaryDirectory("journal-inspect-attachment")
        let clock = ManualClock(now: fixtureStart)
        let server: InMemoryServer
        private(set) var outbox: Outbox

        init(online: Bool = true) throws {
            let clock = self.clock
            server = InMemoryServer(objectStore: InMemoryObjectStore(now: { clock.now() }))
            server.objectStore.segmentSize = 100
            server.setOnline(online)
            outbox = try Self.open(directory.url, server, clock)
        }

        private static func open(_ directory: URL, _ server: InMemoryServer, _ clock: ManualClock) throws -> Outbox {
            try Outbox(directory: directory, transport: server, configuration: OutboxConfiguration(
                account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash, appVersion: "2.3.1"))
        }

        /// Closes the engine and opens it again: a drain started its worker, which would run a
        /// pass at each save; the reopened one runs only what the test runs.
        func reopen() throws {
            outbox.close()
            outbox = try Self.open(directory.url, server, clock)
        }

        var path: String { directory.url.path }

        /// Saves a write carrying `photo`.
        func save(_ photo: Attachment, number: Int = 1) async throws -> OperationID {
            try await outbox.enqueue(AttachmentCommandTests.request(naming: photo, number: number), attaching: [photo])
        }

        /// Runs the attachments' queue alone until `segments` segments landed: an upload cut off.
        func upload(stoppingAfterSegments segments: Int) async {
            let landed: @Sendable () -> Int = { [store = outbox.store] in
                (try? store.queries.events(from: JournalSequence(rawValue: 1), limit: 10_000).filter { $0.kind == .segmentLanded }.count) ?? 0
            }
            _ = await outbox.replayPass.uploads.run { landed() >= segments }
        }

        /// The kept file of `bytes`.
        func fileURL(_ bytes: Data) -> URL {
            outbox.files.url(of: SHA256Digest(of: bytes))
        }
    }

    static func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    // MARK: attachment <id>

    @Test func aPhotoThatWentIsProvedFromItsManifestToTheObjectAndItsWrite() async throws {
        let journal = try PhotoJournal()
        let bytes = Self.photoBytes(450)
        let photo = Attachment(id: Self.photoID, bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let id = try await journal.save(photo)
        await journal.outbox.drain()
        #expect(try journal.outbox.operation(id)?.status == .synced)
        let seq = try #require(try journal.outbox.operationState(id)).firstSeq
        journal.outbox.close()

        let run = inspect([journal.path, "attachment", "8f1c2a3b"])
        #expect(run.code == .success && run.errors.isEmpty, "\(run.errors)")
        let lines = Self.lines(run.output)
        let hex = SHA256Digest(of: bytes).hex
        let short = EventText.shortID(id)
        for line in [
            "Attachment  8F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8",
            "Name        note.jpg",
            "Type        image/jpeg",
            "Size        450 bytes",
            "SHA-256     \(hex)",
            "Write       \(short) \"Antiseptic 1\" (product.create), synced, 1 attempt; saved 2027-01-15T08:00:00Z, seq \(seq)",
            "File        attachments/\(hex): present, 450 bytes, hashing to its manifest's SHA-256",
            "Upload      completed: object memory://objects/8F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8, 450 bytes, SHA-256 \(hex): matches the file",
            "Verdict: completed as memory://objects/8F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8 on 2027-01-15T08:00:00Z; its write synced on attempt 1",
        ] {
            #expect(lines.contains(line), "missing line: \(line)\n\(run.output)")
        }
        // Every grant, every segment with its ETag, the completion: in journal order.
        let grants = lines.filter { $0.contains("attachmentGranted") }
        #expect(grants.count == 1 && grants[0].hasSuffix("5 segments of 100 bytes, URLs good for 15 min by the server (URLs and signatures are never journaled)"),
                "\(grants)")
        let segments = lines.filter { $0.contains(" segmentLanded ") }
        #expect(segments.count == 5)
        for (index, line) in segments.enumerated() {
            let etag = String(SHA256Digest(of: bytes[(index * 100)..<min(450, index * 100 + 100)]).hex.prefix(32))
            #expect(line.hasSuffix("segment \(index + 1): \(index == 4 ? 50 : 100) bytes, ETag \(etag)"), "\(line)")
        }
        #expect(lines.contains { $0.contains("attachmentCompleted") && $0.hasSuffix("SHA-256 \(hex), matches the file") })
        #expect(lines.contains { $0.contains("attemptFinished") && $0.contains("its write: attempt 1: 201 -> accepted") })
        #expect(!run.output.contains("sig="), "no signed URL is ever printed")

        // The whole id, with hyphens or without, names it too.
        #expect(inspect([journal.path, "attachment", "8F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8"]).output == run.output)
        #expect(inspect([journal.path, "attachment", "8f1c2a3b4d5e"]).output == run.output)
    }

    @Test func theJSONHasStableFieldsForEachPartOfTheProof() async throws {
        let journal = try PhotoJournal()
        let bytes = Self.photoBytes(450)
        let photo = Attachment(id: Self.photoID, bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let id = try await journal.save(photo)
        await journal.outbox.drain()
        journal.outbox.close()

        let run = inspect([journal.path, "attachment", "8F1C", "--json"])
        #expect(run.code == .success, "\(run.errors)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        #expect(json["attachmentID"] as? String == "8F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8")
        #expect(json["name"] as? String == "note.jpg" && json["contentType"] as? String == "image/jpeg")
        #expect(json["size"] as? Int == 450 && json["sha256"] as? String == SHA256Digest(of: bytes).hex)
        #expect(json["state"] as? String == "completed")
        #expect(json["segmentSize"] as? Int == 100 && json["segmentCount"] as? Int == 5)
        #expect(json["landedSegments"] as? Int == 5 && json["landedBytes"] as? Int == 450)
        let write = try #require(json["write"] as? [String: Any])
        #expect(write["operationID"] as? String == id.idempotencyKey && write["status"] as? String == "synced" && write["attempts"] as? Int == 1)
        let file = try #require(json["file"] as? [String: Any])
        #expect(file["state"] as? String == "intact" && file["needed"] as? Bool == false && file["problem"] == nil)
        #expect(file["path"] as? String == "attachments/\(SHA256Digest(of: bytes).hex)")
        let grants = try #require(json["grants"] as? [[String: Any]])
        #expect(grants.count == 1 && grants[0]["segmentCount"] as? Int == 5 && grants[0]["lifetimeSeconds"] as? Double == 900)
        #expect(grants[0]["recordedAt"] as? String == "2027-01-15T08:00:00Z")
        #expect(Set(grants[0].keys) == ["seq", "recordedAt", "segmentSize", "segmentCount", "lifetimeSeconds"], "never a URL")
        let segments = try #require(json["segments"] as? [[String: Any]])
        #expect(segments.map { $0["number"] as? Int } == [1, 2, 3, 4, 5])
        #expect(segments.map { $0["bytes"] as? Int } == [100, 100, 100, 100, 50])
        #expect(segments.allSatisfy { ($0["etag"] as? String)?.count == 32 })
        let completion = try #require(json["completion"] as? [String: Any])
        #expect(completion["object"] as? String == "memory://objects/8F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8")
        #expect(completion["matchesFile"] as? Bool == true && completion["bytes"] as? Int == 450)
        #expect((json["refusals"] as? [Any])?.isEmpty == true)
        #expect((json["verdict"] as? String)?.hasPrefix("completed as memory://objects/") == true)
    }

    @Test func anUploadCutOffSaysHowManySegmentsLanded() async throws {
        let journal = try PhotoJournal()
        let photo = Attachment(id: Self.photoID, bytes: Self.photoBytes(450), contentType: "image/jpeg", name: "note.jpg")
        _ = try await journal.save(photo)
        await journal.upload(stoppingAfterSegments: 2)
        journal.outbox.close()

        let run = inspect([journal.path, "attachment", "8f1c2a3b"])
        #expect(run.code == .success, "\(run.errors)")
        let lines = Self.lines(run.output)
        #expect(lines.contains("Upload      2 of 5 segments of 100 bytes landed (200 of 450 bytes), 1 grant"), "\(run.output)")
        #expect(lines.contains("Verdict: uploading: 2 of 5 segments landed (200 of 450 bytes); its write waits for it; nothing was "
            + "journaled since 2027-01-15T08:00:00Z (2 h ago): the app has not run since, or had no connection; the upload goes on "
            + "from segment 3 when it runs online (the landed ones are not sent again)"), "\(run.output)")
        // Counted to a now just after the last event, the upload is simply under way.
        let fresh = inspect([journal.path, "attachment", "8f1c2a3b"], now: fixtureStart.addingTimeInterval(30))
        #expect(Self.lines(fresh.output).contains("Verdict: uploading: 2 of 5 segments landed (200 of 450 bytes); its write waits for it"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(inspect([journal.path, "attachment", "8f1c", "--json"]).output.utf8))
            as? [String: Any])
        #expect(json["state"] as? String == "uploading" && json["completion"] == nil && json["landedSegments"] as? Int == 2)
    }

    @Test func theVerdictSaysMegabytesAsTheMemberReadsThem() {
        #expect(AttachmentText.sizes(2_400_000, of: 4_000_000) == "2.4 of 4.0 MB")
        #expect(AttachmentText.sizes(0, of: 20_000) == "0.0 of 20.0 KB")
        #expect(AttachmentText.sizes(200, of: 450) == "200 of 450 bytes")
        #expect(AttachmentText.size(4_000_000) == "4000000 bytes (4.0 MB)")
    }

    @Test func aRefusedPhotoSaysWhoRefusedItAndWhatFreesTheWrite() async throws {
        let journal = try PhotoJournal()
        journal.server.objectStore.refuseGrants(status: 413, message: "Photos may be at most 5 MB.")
        let photo = Attachment(id: Self.photoID, bytes: Self.photoBytes(450), contentType: "image/jpeg", name: "note.jpg")
        let id = try await journal.save(photo)
        await journal.outbox.drain()
        #expect(try journal.outbox.operation(id)?.status == .failed)
        journal.outbox.close()

        let run = inspect([journal.path, "attachment", "8f1c2a3b"])
        #expect(run.code == .success, "\(run.errors)")
        let lines = Self.lines(run.output)
        #expect(lines.contains("Verdict: refused: 413 attachment_refused: \"Photos may be at most 5 MB.\"; its write is failed "
            + "(attachment_refused), its file kept: a retry uploads it again, a discard drops the write"), "\(run.output)")
        #expect(lines.contains { $0.contains("attachmentRefused") && $0.hasSuffix("413 attachment_refused: \"Photos may be at most 5 MB.\"; its write is held, the file kept") })
        let json = try #require(try JSONSerialization.jsonObject(with: Data(inspect([journal.path, "attachment", "8f1c", "--json"]).output.utf8))
            as? [String: Any])
        let refusals = try #require(json["refusals"] as? [[String: Any]])
        #expect(json["state"] as? String == "refused")
        #expect(refusals.count == 1 && refusals[0]["httpStatus"] as? Int == 413 && refusals[0]["errorCode"] as? String == "attachment_refused"
            && refusals[0]["errorMessage"] as? String == "Photos may be at most 5 MB.")

        // The write's own verdict names the file and the refusal, not an attempt it never made.
        let timeline = inspect([journal.path, "timeline", EventText.shortID(id)])
        #expect(timeline.output.contains("Verdict: failed, never sent: its file note.jpg (8F1C2A3B) was refused: 413 (attachment_refused: "
            + "\"Photos may be at most 5 MB.\"); the file is kept: a retry uploads it again, a discard drops the write"), "\(timeline.output)")
    }

    @Test func theWritesTimelineShowsTheManifestReadablyAndItsUploadRows() async throws {
        let journal = try PhotoJournal()
        let bytes = Self.photoBytes(450)
        let photo = Attachment(id: Self.photoID, bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let id = try await journal.save(photo)
        await journal.outbox.drain()
        journal.outbox.close()

        let run = inspect([journal.path, "timeline", EventText.shortID(id)])
        #expect(run.code == .success, "\(run.errors)")
        let lines = Self.lines(run.output)
        let enqueued = try #require(lines.firstIndex { $0.contains(" enqueued ") })
        #expect(lines[enqueued].contains("saved, \(Self.request(naming: photo).payload.count) bytes, 1 file attached (below)"))
        #expect(lines[enqueued + 1].trimmingCharacters(in: .whitespaces) == "note: attaches note.jpg: image/jpeg, 450 bytes, SHA-256 "
            + "\(SHA256Digest(of: bytes).hex); attachment 8F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8 ('attachment 8F1C2A3B' proves its upload)")
        #expect(lines.filter { $0.contains(" segmentLanded ") }.count == 5)
        #expect(lines.contains { $0.contains(" attachmentCompleted ") })
        #expect(lines.contains("Verdict: synced on attempt 1, less than 1 s after it was saved") || lines.contains { $0.hasPrefix("Verdict: synced on attempt 1") })
    }

    @Test func theCommandLineNamesOneAttachment() {
        #expect(CommandLineParser.parse(["j", "attachment", "8f1c-2a3b", "--json"])
            == .success(.run(journal: "j", command: .attachment(AttachmentOptions(id: "8f1c-2a3b")), json: true)))
        guard case .failure(let extra) = CommandLineParser.parse(["j", "attachment", "8f1c", "9a2b"]) else {
            Issue.record("two ids parsed")
            return
        }
        #expect(extra.message == "unexpected argument '9a2b' for attachment" && extra.command == .attachment)
        guard case .failure(let none) = CommandLineParser.parse(["j", "attachment"]) else {
            Issue.record("no id parsed")
            return
        }
        #expect(none.message.hasPrefix("attachment needs an attachment id"))
    }

    @Test func anUnknownOrAmbiguousIDIsAUsageErrorNamingWhatToDo() async throws {
        let journal = try PhotoJournal(online: false)
        let first = Attachment(id: AttachmentID("8F1C2A3B-0000-4000-8000-000000000001")!, bytes: Self.photoBytes(10), contentType: "image/png",
                               name: "one.png")
        let second = Attachment(id: AttachmentID("8F1C2A3B-0000-4000-8000-000000000002")!, bytes: Self.photoBytes(20, seed: 3),
                                contentType: "image/png", name: "two.png")
        _ = try await journal.save(first)
        _ = try await journal.save(second, number: 2)
        journal.outbox.close()

        let unknown = inspect([journal.path, "attachment", "abcdef"])
        #expect(unknown.code == .usage && unknown.output.isEmpty)
        #expect(unknown.errors.contains("no attachment's id starts with 'abcdef' in this journal"), "\(unknown.errors)")
        let ambiguous = inspect([journal.path, "attachment", "8f1c2a3b"])
        #expect(ambiguous.code == .usage)
        #expect(ambiguous.errors.contains("'8f1c2a3b' starts 2 attachments' ids; give more characters"))
        #expect(ambiguous.errors.contains("one.png") && ambiguous.errors.contains("two.png"))
        #expect(inspect([journal.path, "attachment", "8F1C2A3B-0000-4000-8000-000000000002"]).output.contains("Name        two.png"))
        let bad = inspect([journal.path, "attachment", "note.jpg"])
        #expect(bad.code == .usage && bad.errors.contains("is not an attachment id"))
        #expect(inspect([journal.path, "attachment"]).code == .usage)
    }

    // MARK: The local file

    @Test func aMissingFileIsNamedByAttachmentAndAFindingOfVerify() async throws {
        let journal = try PhotoJournal(online: false)
        let bytes = Self.photoBytes(450)
        let photo = Attachment(id: Self.photoID, bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        let id = try await journal.save(photo)
        try FileManager.default.removeItem(at: journal.fileURL(bytes))
        // The engine, holding the journal open, finds it too.
        let live = try journal.outbox.verify()
        #expect(live.findings.map(\.kind) == [.attachmentFileMissing], "\(live.findings)")
        #expect(live.attachmentFilesChecked == 1)
        let proof = try #require(try journal.outbox.attachment(Self.photoID))
        #expect(proof.file == .missing && proof.needsFile && proof.operationID == id && proof.landedBytes == 0)
        #expect(try journal.outbox.attachmentIDs(matchingPrefix: "8f1c-2a3b") == [Self.photoID])
        #expect(try journal.outbox.attachments().map(\.manifest.name) == ["note.jpg"])
        journal.outbox.close()

        let reader = try JournalReader(directory: journal.directory.url)
        let report = try reader.verify()
        reader.close()
        let finding = try #require(report.findings.first)
        #expect(report.findings.count == 1 && !report.isClean)
        #expect(finding.kind == .attachmentFileMissing && finding.operationID == id)
        #expect(finding.message == "attachment 8F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8 (note.jpg, 450 bytes): its file attachments/"
            + "\(SHA256Digest(of: bytes).hex) is missing; it cannot be uploaded, so its write cannot be sent")

        let verify = inspect([journal.path, "verify"])
        #expect(verify.code == .findings)
        #expect(verify.output.contains("attachment_file_missing") && verify.output.contains("1 finding:"), "\(verify.output)")
        let verifyJSON = try #require(try JSONSerialization.jsonObject(with: Data(inspect([journal.path, "verify", "--json"]).output.utf8))
            as? [String: Any])
        #expect(verifyJSON["clean"] as? Bool == false && verifyJSON["attachmentFilesChecked"] as? Int == 1)

        let run = inspect([journal.path, "attachment", "8f1c"])
        #expect(run.code == .success, "\(run.errors)")
        let lines = Self.lines(run.output)
        #expect(lines.contains("File        attachments/\(SHA256Digest(of: bytes).hex): MISSING: its write (queued) still needs it; it "
            + "cannot be uploaded, so its write cannot be sent"), "\(run.output)")
        #expect(lines.contains("Verdict: cannot be uploaded: its file is missing on the device; its write is queued, not sent yet, and the "
            + "next upload refuses it (attachment_damaged): the member attaches it again in a new write"), "\(run.output)")
    }

    @Test func aDamagedFileIsNamedNeverACrash() async throws {
        let journal = try PhotoJournal(online: false)
        let bytes = Self.photoBytes(450)
        let photo = Attachment(id: Self.photoID, bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        _ = try await journal.save(photo)
        // Same size, other bytes: only hashing tells.
        try Self.photoBytes(450, seed: 99).write(to: journal.fileURL(bytes))
        journal.outbox.close()

        let verify = inspect([journal.path, "verify"])
        #expect(verify.code == .findings)
        #expect(verify.output.contains("attachment_file_damaged"))
        #expect(verify.output.contains("is damaged: its bytes no longer hash to its manifest's SHA-256"), "\(verify.output)")
        let run = inspect([journal.path, "attachment", "8f1c"])
        #expect(run.output.contains("DAMAGED: its bytes no longer hash to its manifest's SHA-256"), "\(run.output)")
        #expect(run.output.contains("Verdict: cannot be uploaded: its file is damaged on the device (its bytes no longer hash"))

        // A directory where the file should be, and a file cut short: named alike.
        try FileManager.default.removeItem(at: journal.fileURL(bytes))
        try Data(bytes.prefix(10)).write(to: journal.fileURL(bytes))
        #expect(inspect([journal.path, "attachment", "8f1c"]).output.contains("DAMAGED: it holds 10 bytes, its manifest 450"))
        try FileManager.default.removeItem(at: journal.fileURL(bytes))
        try FileManager.default.createDirectory(at: journal.fileURL(bytes), withIntermediateDirectories: false)
        let directory = inspect([journal.path, "verify"])
        #expect(directory.code == .findings && directory.output.contains("attachment_file_damaged"), "\(directory.output)")
    }

    @Test func aSettledWritesFileMayBeGoneAndVerifyStaysClean() async throws {
        let journal = try PhotoJournal()
        let bytes = Self.photoBytes(450)
        let photo = Attachment(id: Self.photoID, bytes: bytes, contentType: "image/jpeg", name: "note.jpg")
        _ = try await journal.save(photo)
        await journal.outbox.drain()
        journal.outbox.close()
        try FileManager.default.removeItem(at: journal.fileURL(bytes))

        let verify = inspect([journal.path, "verify"])
        #expect(verify.code == .success, "\(verify.output)")
        // Past the keep period (7 days by default), the file is gone by the rule.
        let later = inspect([journal.path, "attachment", "8f1c", "--now", "2027-01-23T08:00:00Z"])
        #expect(later.output.contains("gone: its write settled (synced) on 2027-01-15T08:00:00Z; the engine removes a settled write's "
            + "files once its keep period has passed (7 d by default), when it next opens"), "\(later.output)")
        #expect(later.output.contains("Verdict: completed as memory://objects/"))
        // Within it, the file should still be there: the words say what may have happened.
        let sooner = inspect([journal.path, "attachment", "8f1c", "--now", "2027-01-16T08:00:00Z"])
        #expect(sooner.output.contains("gone, though its write settled (synced) only on 2027-01-15T08:00:00Z"), "\(sooner.output)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(inspect([journal.path, "attachment", "8f1c", "--json"]).output.utf8))
            as? [String: Any])
        let file = try #require(json["file"] as? [String: Any])
        #expect(file["state"] as? String == "gone" && file["needed"] as? Bool == false && file["keptUntil"] as? String == "2027-01-22T08:00:00Z")
    }

    @Test func aJournalCopiedWithoutItsAttachmentsFolderSaysSo() async throws {
        let journal = try PhotoJournal(online: false)
        let photo = Attachment(id: Self.photoID, bytes: Self.photoBytes(450), contentType: "image/jpeg", name: "note.jpg")
        _ = try await journal.save(photo)
        journal.outbox.close()
        try FileManager.default.removeItem(at: journal.directory.url.appendingPathComponent("attachments"))
        let verify = inspect([journal.path, "verify"])
        #expect(verify.code == .findings)
        #expect(verify.output.contains("the journal's directory holds no attachments folder: a copy that left it out?"), "\(verify.output)")
    }

    // MARK: The report

    @Test func theReportListsEveryAttachmentWithWhereItStands() async throws {
        let journal = try PhotoJournal()
        let went = Attachment(id: Self.photoID, bytes: Self.photoBytes(450), contentType: "image/jpeg", name: "note.jpg")
        _ = try await journal.save(went)
        await journal.outbox.drain()
        try journal.reopen()
        let half = Attachment(id: AttachmentID("11111111-2222-4333-8444-555555555555")!, bytes: Self.photoBytes(300, seed: 5),
                              contentType: "image/jpeg", name: "shelf.jpg")
        _ = try await journal.save(half, number: 2)
        await journal.upload(stoppingAfterSegments: 6)
        let lost = Attachment(id: AttachmentID("22222222-3333-4444-8555-666666666666")!, bytes: Self.photoBytes(50, seed: 9),
                              contentType: "image/png", name: "signature <1>.png")
        journal.server.setOnline(false)
        _ = try await journal.save(lost, number: 3)
        try FileManager.default.removeItem(at: journal.fileURL(Self.photoBytes(50, seed: 9)))
        journal.outbox.close()

        let output = TemporaryDirectory("journal-inspect-attachment-report")
        let file = output.path("report.html")
        let run = inspect([journal.path, "report", "--html", file.path])
        #expect(run.code == .success, "\(run.errors)")
        let html = try String(contentsOf: file, encoding: .utf8)
        #expect(html.contains("<h2>Attachments</h2>"))
        #expect(html.contains("note.jpg</td>") && html.contains("<span class=\"a-completed\">completed</span>"))
        #expect(html.contains("shelf.jpg</td>") && html.contains("<span class=\"a-uploading\">uploading 1 of 3 segments</span>"),
                "\(html.components(separatedBy: "<h2>Attachments</h2>").last?.prefix(3000) ?? "")")
        #expect(html.contains("signature &lt;1&gt;.png</td>") && html.contains("<span class=\"a-file_missing\">file missing</span>"),
                "the name escaped, the state named: \(html.components(separatedBy: "<h2>Attachments</h2>").last?.prefix(3000) ?? "")")
        #expect(!html.contains("signature <1>"))

        // A journal without attachments has no such section.
        let plain = TemporaryDirectory()
        _ = try await EveryStatusJournal.write(into: plain.url)
        let plainFile = output.path("plain.html")
        #expect(inspect([plain.url.path, "report", "--html", plainFile.path]).code == .success)
        #expect(!(try String(contentsOf: plainFile, encoding: .utf8)).contains("<h2>Attachments</h2>"))
    }
}
