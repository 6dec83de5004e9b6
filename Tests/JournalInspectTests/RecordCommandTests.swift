import Foundation
import TestHarness
import JournalInspect
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// `record` and `records`, run in-process on a journal the engine wrote with a record of every
/// sync state. After each run, `data.mdb` must be byte-for-byte what it was.
@Suite("The record and records commands on a record of every sync state", .hangGuard)
struct RecordCommandTests {
    let directory = TemporaryDirectory()
    static let now = ["--now", "2027-01-15T10:00:00Z"]

    private func fixture() async throws -> EverySyncStateJournal {
        try await EverySyncStateJournal.write(into: directory.url)
    }

    /// Runs the tool and checks the data file did not change.
    private func run(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> RunResult {
        let before = try dataFileDigest(directory.url)
        let result = inspect([directory.url.path] + arguments + Self.now)
        #expect(try dataFileDigest(directory.url) == before, "\(arguments) changed data.mdb", sourceLocation: sourceLocation)
        return result
    }

    /// `record <key>`, which must succeed quietly.
    private func record(_ key: RecordKey, _ options: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try run(["record", key.description] + options, sourceLocation: sourceLocation)
        #expect(result.code == .success && result.errors.isEmpty, "\(result.errors)", sourceLocation: sourceLocation)
        return result.output
    }

    private func json(_ output: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], sourceLocation: sourceLocation)
    }

    /// The library's own verdict for `key`, read with a reader of its own (closed before the tool opens the journal).
    private func libraryVerdict(_ key: RecordKey, policy: OutboxConfiguration.RecordTypePolicy = OutboxConfiguration.RecordTypePolicy(), showingValues: Bool = false) throws -> String {
        let reader = try JournalReader(directory: directory.url)
        defer { reader.close() }
        return try reader.recordHistory(key, policy: policy, showingValues: showingValues).verdict
    }

    private func hash(_ value: Data) -> String { SHA256Digest(of: value).hex }
    private func short(_ value: Data) -> String { String(hash(value).prefix(12)) }
    private func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    // MARK: Each sync state, in words

    @Test func aPendingChangeOverABaseShowsTheMembersValueTheServersAndWaitingForInternet() async throws {
        let journal = try await fixture()
        let output = try record(journal.pending)
        let text = lines(output)
        #expect(text.first == "Record  pharmacy-7/product/p-pending")
        #expect(text.contains("Shows   41 bytes, SHA-256 \(hash(journal.pendingValue)); redacted (--payload shows it)"))
        #expect(text.contains("Server  revision 2, learnt 2027-01-15T08:02:00Z (1 h 58 min ago) at seq 8: 41 bytes, SHA-256 "
            + "\(hash(journal.pendingBaseValue)); redacted (--payload shows it)"))
        #expect(text.contains("Sync    pending: \(EventText.shortID(journal.pendingWrite)) queued: the member's change, not confirmed yet"))
        // Every event that made the value: the first write's save, send and confirmation, the second's save and its attempt.
        #expect(text.contains { $0.hasPrefix("  8  2027-01-15T08:02:00Z  attemptFinished") && $0.contains("the server confirmed the value written")
            && $0.hasSuffix("2  \(short(journal.pendingBaseValue))") })
        #expect(text.contains { $0.hasPrefix(" 27  2027-01-15T08:08:00Z  enqueued         \(EventText.shortID(journal.pendingWrite))")
            && $0.hasSuffix(short(journal.pendingValue)) })
        #expect(text.contains { $0.contains("answered: transient_failure (offline)") })
        let verdict = try libraryVerdict(journal.pending)
        #expect(verdict == "shows the member's value \(short(journal.pendingValue)) from write \(EventText.shortID(journal.pendingWrite)), "
            + "waiting for internet; the server last confirmed value \(short(journal.pendingBaseValue)) at revision 2 (seq 8)")
        #expect(text.last == "Verdict: " + verdict)
        #expect(!output.contains("13.5") && !output.contains("Antiseptic"), "values are the member's data: redacted")
    }

    @Test func aSyncedRecordShowsTheServersRecordAtItsRevision() async throws {
        let journal = try await fixture()
        let text = lines(try record(journal.synced))
        #expect(text.contains("Shows   45 bytes, SHA-256 \(hash(journal.syncedServerValue)); redacted (--payload shows it)"))
        #expect(text.contains { $0.hasPrefix("Server  revision 3, learnt 2027-01-15T08:01:00Z") && $0.contains("at seq 5") })
        #expect(text.contains("Sync    synced: the member sees the server's value"))
        #expect(text.contains { $0.contains("the server confirmed its record") && $0.hasSuffix("3  \(short(journal.syncedServerValue))") })
        #expect(text.last == "Verdict: shows value \(short(journal.syncedServerValue)), the server's; the server last confirmed "
            + "value \(short(journal.syncedServerValue)) at revision 3 (seq 5)")
    }

    @Test func aConfirmedChangeWhoseValueHasNotArrivedStaysTheMembers() async throws {
        let journal = try await fixture()
        let text = lines(try record(journal.confirmed))
        #expect(text.contains("Server  not known to the phone yet: no answer has brought the server's value"))
        #expect(text.contains("Sync    confirmed: \(EventText.shortID(journal.confirmedWrite)): the server applied it; its value has not "
            + "arrived, so the member's stays"))
        #expect(text.contains { $0.contains("answered: accepted") })
        #expect(text.last == "Verdict: " + (try libraryVerdict(journal.confirmed)))
        #expect(text.last?.contains("applied by the server, whose value has not arrived yet") == true)
    }

    @Test func aConflictNamesTheServersRevisionAndValueBesideTheMembers() async throws {
        let journal = try await fixture()
        let id = EventText.shortID(journal.conflictWrite)
        let text = lines(try record(journal.conflict))
        #expect(text.contains { $0.hasPrefix("Server  revision 5,") && $0.contains(hash(journal.conflictServerValue)) })
        #expect(text.contains("        conflict: \(id) met the server's revision 5 (the value \(short(journal.conflictServerValue))): "
            + "the member decides"))
        #expect(text.contains("Sync    pending: \(id) conflicted: the member's change, not confirmed yet"))
        #expect(text.contains { $0.contains("the server answered with its own record: changed elsewhere") && $0.contains("5  ") })
        #expect(text.last == "Verdict: " + (try libraryVerdict(journal.conflict)))
        #expect(text.last?.contains("the server holds revision 5 (value \(short(journal.conflictServerValue))) beside it") == true)
    }

    @Test func aRolledBackChangeShowsTheBaseWithTheWriteCodeAndMessageAndTheHeldOne() async throws {
        let journal = try await fixture()
        let refused = EventText.shortID(journal.refusedWrite)
        let held = EventText.shortID(journal.heldWrite)
        let text = lines(try record(journal.rolledBack))
        #expect(text.contains("Shows   32 bytes, SHA-256 \(hash(journal.rolledBackBaseValue)); redacted (--payload shows it)"),
                "the rolled-back value never shows: the view is the base again")
        #expect(text.contains("Sync    rolled back: \(refused) failed, validation_failed: \"Price must be positive\": the member's change is "
            + "hidden until retried, corrected or acknowledged"))
        #expect(text.contains("        held: \(held): made on a rolled-back change, hidden, never sent on it: the member decides"))
        #expect(text.contains { $0.contains("heldOnRollback") && $0.contains("held: made on \(refused), which was rolled back") })
        #expect(text.contains { $0.contains(refused) && $0.contains("answered: rejected (validation_failed)") })
        let verdict = try libraryVerdict(journal.rolledBack)
        #expect(text.last == "Verdict: " + verdict)
        #expect(verdict.contains("write \(refused) was rolled back (failed, validation_failed: \"Price must be positive\")"))
        #expect(verdict.contains("1 later change is held"))
    }

    @Test func aLocalOnlyRecordIsReadFromTheLocalTableAndSaysItIsNeverSent() async throws {
        let journal = try await fixture()
        let text = lines(try record(journal.localOnly))
        #expect(text.contains("Shows   27 bytes, SHA-256 \(hash(journal.localValue)); redacted (--payload shows it)"))
        #expect(text.contains("Server  none: a local-only record, written on the phone and never sent"))
        #expect(text.contains("Sync    local-only: written on the phone, never sent"))
        #expect(text.contains { $0.contains("recordsWritten") && $0.contains("written on the phone (local-only)") && $0.hasSuffix(short(journal.localValue)) })
        #expect(text.last == "Verdict: " + (try libraryVerdict(journal.localOnly, policy: .localOnly)))
        #expect(text.last == "Verdict: shows value \(short(journal.localValue)), a local-only record the phone never sends")
    }

    @Test func aPendingDeleteShowsNothingAndTheDeletingWrite() async throws {
        let journal = try await fixture()
        let text = lines(try record(journal.deleted))
        #expect(text.contains("Shows   nothing: the member deleted it"))
        #expect(text.contains("Sync    pending: \(EventText.shortID(journal.deleteWrite)) queued (deletes it): the member's change, not confirmed yet"))
        #expect(text.contains { $0.contains("enqueued") && $0.contains("the member deleted it") })
        #expect(text.last == "Verdict: " + (try libraryVerdict(journal.deleted)))
    }

    @Test func aRecordTheJournalHoldsNothingOfIsSaidSoAndExitsZero() async throws {
        _ = try await fixture()
        let missing = EverySyncStateJournal.key("p-never")
        let result = try run(["record", missing.description])
        #expect(result.code == .success && result.errors.isEmpty)
        #expect(lines(result.output) == [
            "Record  pharmacy-7/product/p-never",
            "Verdict: the phone holds nothing of pharmacy-7/product/p-never: no write changed it and no answer or pull brought it",
            "'journal-inspect \(directory.url.path) records pharmacy-7/product' lists the records the journal holds of this business "
                + "and type (ids are compared byte for byte).",
        ])
        let document = try json(try run(["record", missing.description, "--json"]).output)
        #expect(document["found"] as? Bool == false && document["record"] == nil)
        #expect((document["entries"] as? [Any])?.isEmpty == true)
        // Byte for byte: the same id in another normal form is another record.
        let decomposed = try run(["record", "pharmacy-7/product/p-pe\u{301}nding"])
        #expect(decomposed.output.contains("the phone holds nothing of"))
    }

    // MARK: Values, only when asked

    @Test func payloadShowsEachValueTheEventsNameAsJSONText() async throws {
        let journal = try await fixture()
        let text = lines(try record(journal.rolledBack, "--payload"))
        let base = String(decoding: journal.rolledBackBaseValue, as: UTF8.self)
        #expect(text.contains("Shows   32 bytes, SHA-256 \(hash(journal.rolledBackBaseValue)): \(base)"))
        let values = try #require(text.firstIndex(of: "Values"))
        #expect(Array(text[(values + 1)...].prefix(3)) == [
            "\(short(journal.rolledBackBaseValue))  \(base)",
            "\(short(EverySyncStateJournal.value("Vitamin C", price: -6)))  {\"name\":\"Vitamin C\",\"price\":-6.0}",
            "\(short(EverySyncStateJournal.value("Vitamin C 1000 mg", price: -6)))  {\"name\":\"Vitamin C 1000 mg\",\"price\":-6.0}",
        ], "the refused and the held values are still readable: the proof shows what the member typed")
        #expect(text.last == "Verdict: " + (try libraryVerdict(journal.rolledBack, showingValues: true)))
        // A base the server replaced is named by its hash only.
        let synced = lines(try record(journal.synced, "--payload"))
        let typed = EverySyncStateJournal.value("Gauze 10 cm", price: 3.5)
        #expect(synced.contains("\(short(typed))  \(String(decoding: typed, as: UTF8.self))"))
        #expect(synced.contains("\(short(journal.syncedServerValue))  \(String(decoding: journal.syncedServerValue, as: UTF8.self))"))
    }

    // MARK: JSON

    @Test func theJSONDocumentCarriesTheViewTheBaseTheSyncStateTheEntriesAndTheVerdict() async throws {
        let journal = try await fixture()
        let pending = try json(try record(journal.pending, "--json"))
        #expect(pending["key"] as? String == "pharmacy-7/product/p-pending")
        #expect(pending["business"] as? String == "pharmacy-7" && pending["type"] as? String == "product" && pending["id"] as? String == "p-pending")
        #expect(pending["found"] as? Bool == true && pending["valuesIncluded"] as? Bool == false && pending["valuesSealed"] as? Bool == false)
        #expect(pending["verdict"] as? String == (try libraryVerdict(journal.pending)))
        let state = try #require(pending["record"] as? [String: Any])
        #expect(state["localOnly"] as? Bool == false && state["schemaVersion"] as? Int == 1)
        let view = try #require(state["view"] as? [String: Any])
        #expect(view["bytes"] as? Int == 41 && view["sha256"] as? String == hash(journal.pendingValue) && view["content"] == nil)
        let server = try #require(state["server"] as? [String: Any])
        #expect(server["revision"] as? Int == 2 && server["seq"] as? Int == 8 && server["deleted"] as? Bool == false)
        #expect(server["learntAt"] as? String == "2027-01-15T08:02:00Z")
        #expect((server["value"] as? [String: Any])?["sha256"] as? String == hash(journal.pendingBaseValue))
        let sync = try #require(state["sync"] as? [String: Any])
        #expect(sync["synced"] as? Bool == false && sync["summary"] as? String == "pending \(EventText.shortID(journal.pendingWrite)) queued")
        let waiting = try #require((sync["pending"] as? [[String: Any]])?.first)
        #expect(waiting["operationID"] as? String == journal.pendingWrite.idempotencyKey && waiting["status"] as? String == "queued"
            && waiting["deletes"] as? Bool == false)
        let entries = try #require(pending["entries"] as? [[String: Any]])
        #expect(entries.map { $0["seq"] as? Int } == [6, 7, 8, 27, 29, 31])
        let confirmation = entries[2]
        #expect(confirmation["kind"] as? String == "attemptFinished" && confirmation["revision"] as? Int == 2
            && confirmation["sha256"] as? String == hash(journal.pendingBaseValue) && confirmation["recordedAt"] as? String == "2027-01-15T08:02:00Z")
        #expect(confirmation["what"] as? String == "the server confirmed the value written")
        #expect(entries.allSatisfy { $0["content"] == nil })

        let conflict = try #require(try json(try record(journal.conflict, "--json"))["record"] as? [String: Any])
        let clash = try #require((conflict["sync"] as? [String: Any])?["conflict"] as? [String: Any])
        #expect(clash["operationID"] as? String == journal.conflictWrite.idempotencyKey && clash["serverRevision"] as? String == "5")
        #expect((clash["serverValue"] as? [String: Any])?["sha256"] as? String == hash(journal.conflictServerValue))

        let refused = try #require(try json(try record(journal.rolledBack, "--json"))["record"] as? [String: Any])
        let refusedSync = try #require(refused["sync"] as? [String: Any])
        let rolledBack = try #require(refusedSync["rolledBack"] as? [String: Any])
        #expect(rolledBack["operationID"] as? String == journal.refusedWrite.idempotencyKey && rolledBack["status"] as? String == "failed")
        #expect(rolledBack["code"] as? String == "validation_failed" && rolledBack["message"] as? String == "Price must be positive")
        #expect(refusedSync["held"] as? [String] == [journal.heldWrite.idempotencyKey])

        let confirmed = try #require(try json(try record(journal.confirmed, "--json"))["record"] as? [String: Any])
        #expect((confirmed["sync"] as? [String: Any])?["confirmed"] as? [String] == [journal.confirmedWrite.idempotencyKey])
        #expect(confirmed["server"] == nil)

        let local = try #require(try json(try record(journal.localOnly, "--json"))["record"] as? [String: Any])
        #expect(local["localOnly"] as? Bool == true && local["server"] == nil)
        #expect((local["sync"] as? [String: Any])?["summary"] as? String == "local-only")

        let deleted = try #require(try json(try record(journal.deleted, "--json"))["record"] as? [String: Any])
        #expect(deleted["view"] == nil, "a view that holds no value has no view object")
        #expect((((deleted["sync"] as? [String: Any])?["pending"] as? [[String: Any]])?.first?["deletes"]) as? Bool == true)

        let withValues = try json(try record(journal.pending, "--json", "--payload"))
        #expect(withValues["valuesIncluded"] as? Bool == true)
        let shown = try #require(withValues["record"] as? [String: Any])
        #expect((shown["view"] as? [String: Any])?["content"] as? String == String(decoding: journal.pendingValue, as: UTF8.self))
        #expect(((shown["server"] as? [String: Any])?["value"] as? [String: Any])?["content"] as? String
            == String(decoding: journal.pendingBaseValue, as: UTF8.self))
        let contents = (withValues["entries"] as? [[String: Any]])?.compactMap { $0["content"] as? String }
        #expect(contents == [String(decoding: journal.pendingBaseValue, as: UTF8.self), String(decoding: journal.pendingBaseValue, as: UTF8.self),
                             String(decoding: journal.pendingValue, as: UTF8.self)])
    }

    // MARK: records

    @Test func recordsListsAPageInTheOrderOfTheIdsBytesLeavingOutPendingDeletes() async throws {
        let journal = try await fixture()
        let result = try run(["records", "pharmacy-7/product"])
        #expect(result.code == .success && result.errors.isEmpty)
        let text = lines(result.output)
        #expect(text.first == "ID           VALUE         REVISION  SYNC")
        #expect(Array(text.dropFirst()) == [
            "p-confirmed  \(short(EverySyncStateJournal.value("Plasters", price: 2)))         -  confirmed \(EventText.shortID(journal.confirmedWrite))",
            "p-conflict   \(short(EverySyncStateJournal.value("Cotton wool", price: 4)))         5  pending \(EventText.shortID(journal.conflictWrite)) "
                + "conflicted; conflict \(EventText.shortID(journal.conflictWrite)) (server at revision 5)",
            "p-pending    \(short(journal.pendingValue))         2  pending \(EventText.shortID(journal.pendingWrite)) queued",
            "p-refused    \(short(journal.rolledBackBaseValue))         1  rolled back \(EventText.shortID(journal.refusedWrite)) failed "
                + "(validation_failed); held \(EventText.shortID(journal.heldWrite))",
            "p-synced     \(short(journal.syncedServerValue))         3  synced",
        ])
        #expect(!result.output.contains("p-deleted"), "a record the member deleted is left out")
    }

    @Test func recordsPagesWithAfterAndLimitAndSaysWhereTheNextPageStarts() async throws {
        let journal = try await fixture()
        let first = try run(["records", "pharmacy-7/product", "--limit", "2"])
        #expect(lines(first.output).map { String($0.prefix(11)) }.dropFirst().prefix(2) == ["p-confirmed", "p-conflict "])
        #expect(lines(first.output).last == "(2 records shown; the next page starts at --after p-conflict)")
        let second = try run(["records", "pharmacy-7/product", "--limit", "2", "--after", "p-conflict"])
        #expect(lines(second.output).dropFirst().prefix(2).map { $0.split(separator: " ").first.map(String.init) } == ["p-pending", "p-refused"])
        let last = try json(try run(["records", "pharmacy-7/product", "--after", "p-refused", "--json"]).output)
        let records = try #require(last["records"] as? [[String: Any]])
        #expect(records.map { $0["id"] as? String } == ["p-synced"] && last["nextAfter"] == nil)
        #expect(last["after"] as? String == "p-refused" && last["business"] as? String == "pharmacy-7" && last["type"] as? String == "product")
        let paged = try json(try run(["records", "pharmacy-7/product", "--limit", "1", "--json"]).output)
        #expect(paged["nextAfter"] as? String == "p-confirmed")
        let listed = try #require((try json(try run(["records", "pharmacy-7/product", "--json", "--limit", "10000"]).output))["records"] as? [[String: Any]])
        #expect(listed.map { $0["key"] as? String } == journal.listedProducts.map(\.description))
        let refused = try #require(listed.first { $0["id"] as? String == "p-refused" })
        #expect(((refused["sync"] as? [String: Any])?["rolledBack"] as? [String: Any])?["code"] as? String == "validation_failed")
        #expect((refused["view"] as? [String: Any])?["content"] == nil)
    }

    @Test func recordsOfALocalOnlyTypeAndOfATypeTheJournalDoesNotHold() async throws {
        let journal = try await fixture()
        let drafts = try run(["records", "pharmacy-7/draft", "--payload"])
        #expect(lines(drafts.output) == ["ID   VALUE                        REVISION  SYNC",
                                         "d-1  \(String(decoding: journal.localValue, as: UTF8.self))         -  local-only"])
        let none = try run(["records", "pharmacy-7/employee"])
        #expect(none.code == .success && none.output == "No records of pharmacy-7/employee in this journal.\n")
        let after = try run(["records", "pharmacy-7/product", "--after", "p-synced"])
        #expect(after.output == "No records of pharmacy-7/product after p-synced in this journal.\n")
        let other = try run(["records", "pharmacy-8/product"])
        #expect(other.output == "No records of pharmacy-8/product in this journal.\n", "one business's records only")
    }

    /// A journal written before records existed holds none: each command says so, as it says
    /// of a record never written.
    @Test(arguments: FormatOneJournal.allCases)
    func aJournalOfAnOlderFormatHoldsNoRecordsAndSaysSo(_ fixture: FormatOneJournal) throws {
        let journal = directory.path("old")
        try fixture.copy(into: journal)
        let one = inspect([journal.path, "record", "pharmacy-7/product/p-1"])
        #expect(one.code == .success && one.errors.isEmpty, "\(one.errors)")
        #expect(one.output.contains("Verdict: the phone holds nothing of pharmacy-7/product/p-1"))
        let page = inspect([journal.path, "records", "pharmacy-7/product"])
        #expect(page.code == .success)
        #expect(page.output == "No records of pharmacy-7/product in this journal.\n")
    }
}
