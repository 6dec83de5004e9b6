import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxCrypto
import OutboxTesting
import Testing

/// A compacted operation is what it is: every command shows its status, moments, attempts, what
/// was kept of it and the digest of the records removed, never damage; filters and the search
/// find it. One compacted by an engine before journal format 2 says its labels were not kept.
@Suite("Compacted operations read as what they are", .hangGuard)
struct CompactedOperationTests {
    let directory = TemporaryDirectory()

    /// Two dressings synced in early January (the gauze on its second attempt) and compacted ten
    /// days later; a third saved after, still in full.
    private struct Journal {
        let gauze: OperationID
        let cotton: OperationID
        let recent: OperationID
        /// SHA-256 of the gauze's payload.
        let gauzeHash: String
        let gauzeBytes: Int
    }

    private var journal: URL { directory.path("journal") }

    private func dressing(_ label: String, entity: String) -> OutboxRequest {
        OutboxRequest(businessID: "pharmacy-7", operationType: "product.create", endpoint: "/products",
                      payload: Data(#"{"id":"\#(entity)","name":"\#(label)"}"#.utf8), entityID: entity, category: "Dressings",
                      entityLabel: label, summary: "New dressing")
    }

    private func write(key: SealingKey? = nil) async throws -> Journal {
        let clock = ManualClock(now: fixtureStart.addingTimeInterval(-11 * 86_400))
        let server = InMemoryServer()
        let outbox = try Outbox(directory: journal, transport: server, configuration: OutboxConfiguration(
            account: "member-42", clock: clock, defaultPolicy: .idempotent, durability: .processCrash, encryptionKey: key))
        server.setOnline(false)
        let gauzeRequest = dressing("Gauze 10 cm", entity: "gauze-10")
        let gauze = try await outbox.enqueue(gauzeRequest)
        await outbox.drain()
        server.setOnline(true)
        clock.advance(by: 2)
        await outbox.drain()
        let cotton = try await outbox.enqueue(dressing("Cotton wool 100 g", entity: "cotton-100"))
        await outbox.drain()
        clock.advance(by: 10 * 86_400)
        let result = try await outbox.compact(before: clock.now().addingTimeInterval(-86_400))
        guard result.operations == 2 else { throw FixtureError.unexpected("compacted \(result.operations) operations, not 2") }
        clock.advance(by: 3600)
        let recent = try await outbox.enqueue(dressing("Gauze 5 cm", entity: "gauze-5"))
        await outbox.drain()
        outbox.close()
        return Journal(gauze: gauze, cotton: cotton, recent: recent, gauzeHash: SHA256Digest(of: gauzeRequest.payload).hex,
                       gauzeBytes: gauzeRequest.payload.count)
    }

    /// Runs the tool on the journal; `data.mdb` must not change.
    private func run(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> RunResult {
        let before = try dataFileDigest(journal)
        let result = inspect([journal.path] + arguments + ["--now", "2027-01-15T10:00:00Z"])
        #expect(try dataFileDigest(journal) == before, "\(arguments) changed data.mdb", sourceLocation: sourceLocation)
        return result
    }

    private func json(_ result: RunResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
    }

    /// The value of a timeline's header field.
    private func field(_ label: String, of text: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix(label + " ") }.map { $0.dropFirst(label.count).trimmingCharacters(in: .whitespaces) }
    }

    /// The `compacted` event that removed `id`'s events.
    private func compaction(of id: OperationID) throws -> Compacted {
        let reader = try JournalReader(directory: journal)
        defer { reader.close() }
        guard case .compacted(let compacted)? = try reader.journalEvents(of: id).first?.body else {
            throw FixtureError.unexpected("no compacted event for \(id)")
        }
        return compacted
    }

    @Test func theTimelineShowsWhatWasKeptTheDigestAndTheVerdictNeverDamage() async throws {
        let written = try await write()
        let compacted = try compaction(of: written.gauze)
        let result = try run(["timeline", EventText.shortID(written.gauze)])
        #expect(result.code == .success && result.errors.isEmpty)
        let text = result.output
        #expect(text.contains(#"Label       "Gauze 10 cm", New dressing [Dressings]"#))
        #expect(text.contains("Belongs to  business pharmacy-7, account member-42, entity gauze-10"))
        #expect(text.contains("Status      synced, 2 attempts, last changed 2027-01-04T08:00:02Z"))
        #expect(text.contains("Details     compacted on 2027-01-14T08:00:02Z"))
        #expect(text.contains("Digest      SHA-256 \(compacted.digest.hex) over the \(compacted.removedCount) records removed then"))
        #expect(text.contains("Payload     compacted: the payload itself is gone; it was \(written.gauzeBytes) bytes, SHA-256 \(written.gauzeHash)"))
        #expect(text.contains("Verdict: synced on attempt 2; details compacted on 2027-01-14\n"))
        for damage in ["damaged", "DAMAGED", "unreadable", "Incomplete"] { #expect(!text.contains(damage), "\(damage)") }

        let events = try run(["events", "--operation", EventText.shortID(written.gauze)])
        let rows = events.output.split(separator: "\n").dropFirst()
        #expect(rows.count == 1 && rows.first?.contains("compacted") == true && rows.first?.contains(compacted.digest.hex) == true,
                "the history of a compacted operation is the compacted event: \(events.output)")
        #expect(try run(["events", "--operation", EventText.shortID(written.gauze), "--kind", "enqueued"]).output.contains("(no events match)"))
        #expect(try run(["verify"]).code == .success)
    }

    @Test func anEventsPageCutAtACompactionsGapNamesTheNextRecordLeftAsTheNextPagesStart() async throws {
        _ = try await write()
        let reader = try JournalReader(directory: journal)
        let seqs = try reader.events(from: 1, limit: .max).map(\.seq)
        reader.close()
        // journalOpened, then the two compacted writes' seqs are gone, up to the compacted event.
        let afterGap = try #require(seqs.dropFirst().first)
        #expect(afterGap.rawValue > 2, "a gap after seq 1: \(seqs)")
        let forward = try run(["events", "--from", "1", "--limit", "1"])
        #expect(forward.output.split(separator: "\n").last == "(1 events shown; the next page starts at --from \(afterGap))")
        #expect(try json(try run(["events", "--from", "1", "--limit", "1", "--json"]))["nextSeq"] as? Int == Int(afterGap.rawValue))
        let backward = try run(["events", "--to", "\(afterGap)", "--limit", "1"])
        #expect(backward.output.split(separator: "\n").last == "(the latest 1 shown; earlier ones end at --to 1)")
    }

    @Test func filtersAndTheSearchListCompactedOperationsLikeAnyOther() async throws {
        let written = try await write()
        let all = try run(["ops"]).output
        for id in [written.gauze, written.cotton] {
            let row = try #require(all.split(separator: "\n").first { $0.hasPrefix(EventText.shortID(id)) })
            #expect(row.hasSuffix("details compacted on 2027-01-14"), "\(row)")
        }
        let short = { (ids: [OperationID]) in ids.map(EventText.shortID) }
        func listed(_ arguments: [String]) throws -> [String] {
            try run(["ops"] + arguments).output.split(separator: "\n").dropFirst().map { String($0.prefix(8)) }
        }
        #expect(try listed(["--category", "dressings"]) == short([written.recent, written.cotton, written.gauze]))
        #expect(try listed(["--search", "GAUZE"]) == short([written.recent, written.gauze]))
        #expect(try listed(["--search", "gauze-10"]) == short([written.gauze]), "the entity")
        #expect(try listed(["--search", "new dressing", "--until", "2027-01-10"]) == short([written.cotton, written.gauze]), "the summary")
        #expect(try listed(["--status", "synced", "--type", "product.create", "--since", "2027-01-04", "--until", "2027-01-05"])
            == short([written.cotton, written.gauze]))
        #expect(try run(["ops", "--category", "dressings"]).errors.isEmpty, "no row lacks its labels")
    }

    @Test func exportAndReportKeepWhatWasKeptAndNothingNotKept() async throws {
        let written = try await write()
        let compacted = try compaction(of: written.gauze)
        let document = try json(try run(["export", EventText.shortID(written.gauze)]))
        let exported = try #require((document["operations"] as? [[String: Any]])?.first)
        let operation = try #require(exported["operation"] as? [String: Any])
        #expect(operation["form"] as? String == "compacted")
        #expect(operation["compactedAt"] as? String == "2027-01-14T08:00:02Z")
        #expect(operation["requestHash"] as? String == written.gauzeHash)
        #expect(operation["entityLabel"] as? String == "Gauze 10 cm" && operation["category"] as? String == "Dressings")
        #expect(operation["summary"] as? String == "New dressing" && operation["entityID"] as? String == "gauze-10")
        #expect(operation["attempts"] as? Int == 2 && operation["status"] as? String == "synced")
        let payload = try #require(exported["payload"] as? [String: Any])
        #expect(payload["compacted"] as? Bool == true && payload["bytes"] as? Int == written.gauzeBytes)
        #expect(payload["recordedSHA256"] as? String == written.gauzeHash && payload["sha256"] == nil)
        let events = try #require(exported["events"] as? [[String: Any]])
        #expect(events.count == 1 && events.first?["kind"] as? String == "compacted" && events.first?["digest"] as? String == compacted.digest.hex)
        #expect(exported["verdict"] as? String == "synced on attempt 2; details compacted on 2027-01-14")
        #expect(!String(decoding: Data(try run(["export", "--all"]).output.utf8), as: UTF8.self).contains(String(repeating: "0", count: 64)),
                "no hash of zeros")

        let html = directory.path("report.html")
        #expect(try run(["report", "--html", html.path, EventText.shortID(written.gauze)]).code == .success)
        let report = try String(contentsOf: html, encoding: .utf8)
        #expect(report.contains("Gauze 10 cm") && report.contains("details compacted on 2027-01-14T08:00:02Z"))
        #expect(report.contains("2 attempts, the last accepted; their events were removed by the compaction below"))
        #expect(report.contains(compacted.digest.hex))
        #expect(!report.contains("unreadable"))
    }

    @Test func aSealedLabelIsSearchedWithTheKeyAndTheSearchSaysWhenItCannot() async throws {
        let key = SealingKey.random()
        let written = try await write(key: key)
        let keyFile = directory.path("key.bin")
        try Data(key.withUnsafeKeyBytes { Array($0) }).write(to: keyFile)

        let sealed = try run(["ops", "--search", "10 cm"])
        #expect(sealed.output == "No operations match.\n")
        #expect(sealed.errors.contains("labels and summaries are sealed, so only categories, entities and types were searched"))
        #expect(try run(["ops", "--search", "gauze-10"]).output.contains(EventText.shortID(written.gauze)), "the entity is not sealed")
        #expect(try run(["timeline", EventText.shortID(written.gauze)]).output.contains(#"Label       "(sealed)", (sealed) [Dressings]"#))

        let opened = try run(["ops", "--search", "10 cm", "--key-file", keyFile.path])
        #expect(opened.errors.isEmpty)
        #expect(opened.output.split(separator: "\n").dropFirst().map { String($0.prefix(8)) } == [EventText.shortID(written.gauze)])
        #expect(opened.output.contains("Gauze 10 cm"))
    }

    @Test(arguments: FormatOneJournal.allCases)
    func aWriteCompactedBeforeLabelsWereKeptSaysSoAndIsNeverDamage(_ fixture: FormatOneJournal) throws {
        try fixture.copy(into: journal)
        let compacted = try fixture.compacted()
        #expect(compacted.count == 3)
        for id in compacted {
            let result = try run(["timeline", EventText.shortID(id)])
            #expect(result.code == .success && result.errors.isEmpty, "\(result.errors)")
            #expect(field("Label", of: result.output)?.hasPrefix("compacted before labels were kept") == true)
            #expect(field("Payload", of: result.output)
                == "compacted before labels were kept: neither the payload nor its size and SHA-256 are in the journal")
            #expect(result.output.contains("Verdict: synced on attempt 1; details compacted on 2027-01-15, before labels were kept\n"))
            for damage in ["damaged", "DAMAGED", "unreadable", "Incomplete"] { #expect(!result.output.contains(damage), "\(damage)") }
        }
        let ops = try run(["ops"]).output.split(separator: "\n")
        for id in compacted {
            let row = try #require(ops.first { $0.hasPrefix(EventText.shortID(id)) })
            #expect(row.contains("(compacted before labels were kept)") && row.hasSuffix("details compacted on 2027-01-15"))
        }
        let category = try run(["ops", "--category", "products"])
        #expect(category.errors.contains("warning: 3 operations were compacted before labels were kept"))
        #expect(!compacted.contains { category.output.contains(EventText.shortID($0)) }, "no category was kept to match")
        let byType = try run(["ops", "--search", "product.create"])
        #expect(byType.errors.contains("--search matches their types only"))
        #expect(compacted.filter { byType.output.contains(EventText.shortID($0)) }.count == 2, "two of the three were products")

        let document = try json(try run(["export"] + compacted.map(EventText.shortID)))
        for exported in try #require(document["operations"] as? [[String: Any]]) {
            let operation = try #require(exported["operation"] as? [String: Any])
            #expect(operation["form"] as? String == "compacted_ledger_row_only")
            for notKept in ["entityLabel", "requestHash", "category", "businessID", "payloadBytes"] { #expect(operation[notKept] == nil) }
            #expect(exported["payload"] == nil)
            #expect((exported["verdict"] as? String)?.hasSuffix("before labels were kept") == true)
        }
        let html = directory.path("report.html")
        #expect(try run(["report", "--html", html.path] + compacted.map(EventText.shortID)).code == .success)
        #expect(try String(contentsOf: html, encoding: .utf8).contains("(compacted before labels were kept)"))
    }
}
