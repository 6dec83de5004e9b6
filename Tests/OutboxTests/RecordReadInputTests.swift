import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// Every public read that takes a record's key, a business or a type refuses what no key can be
/// with `invalidRequest` naming the part, as a write does: keys come from screens, links and
/// search fields, and a read must never trap the app. Text that decoding bad bytes made
/// (U+FFFD) is a key like any other: read, found nowhere.
@Suite("A read refuses a key that cannot be", .timeLimit(.minutes(5)))
struct RecordReadInputTests {
    /// A part that cannot be, and why it cannot.
    struct BadPart: Sendable, CustomStringConvertible {
        var text: String
        var problem: String
        var description: String { "\(text.prefix(12))… (\(problem))" }
    }

    static let bad: [BadPart] = [
        BadPart(text: "", problem: "must not be empty"),
        BadPart(text: String(repeating: "x", count: 256), problem: "over the limit"),
        BadPart(text: String(repeating: "é", count: 200), problem: "over the limit"),
        BadPart(text: "pharmacy\n7", problem: "control characters"),
        BadPart(text: "pharmacy\u{0}7", problem: "control characters"),
        BadPart(text: "pharmacy\u{85}7", problem: "control characters"),
    ]

    static let good = RecordKey(business: "pharmacy-7", type: "product", id: "7d0c3a52")

    /// Runs `read` and answers the field and problem it was refused with.
    func refusal(_ read: () throws -> Void) -> (field: String, problem: String)? {
        do {
            try read()
            return nil
        } catch OutboxError.invalidRequest(let field, let problem) {
            return (field, problem)
        } catch {
            Issue.record("refused with \(error), not invalidRequest")
            return nil
        }
    }

    func keys(with part: BadPart) -> [(key: RecordKey, field: String)] {
        let key = Self.good
        return [
            (RecordKey(business: part.text, type: key.type, id: key.id), "key.business"),
            (RecordKey(business: key.business, type: part.text, id: key.id), "key.type"),
            (RecordKey(business: key.business, type: key.type, id: part.text), "key.id"),
        ]
    }

    @Test(arguments: bad)
    func everyReadOfTheEngineRefusesTheKeyNamingThePart(_ part: BadPart) async throws {
        let journal = TestJournal()
        defer { journal.remove() }
        let outbox = try journal.open()
        defer { outbox.close() }
        let before = try outbox.lastSeq()
        for (key, field) in keys(with: part) {
            for (name, read) in [("record", { _ = try outbox.record(key) }),
                                 ("recordHistory", { _ = try outbox.recordHistory(key) })] as [(String, () throws -> Void)] {
                let refused = refusal(read)
                #expect(refused?.field == field && refused?.problem.contains(part.problem) == true, "\(name) of \(field) \(part): \(String(describing: refused))")
            }
            await #expect(throws: OutboxError.self) { try await outbox.acknowledgeRollback(of: key) }
        }
        let business = refusal { _ = try outbox.records(RecordQuery(business: part.text, type: "product")) }
        #expect(business?.field == "business" && business?.problem.contains(part.problem) == true, "\(String(describing: business))")
        let type = refusal { _ = try outbox.records(RecordQuery(business: "pharmacy-7", type: part.text)) }
        #expect(type?.field == "type", "\(String(describing: type))")
        let after = refusal { _ = try outbox.records(RecordQuery(business: "pharmacy-7", type: "product", after: part.text)) }
        #expect(after?.field == "after", "\(String(describing: after))")
        let feed = refusal { _ = try outbox.feedState(business: part.text) }
        #expect(feed?.field == "business", "\(String(describing: feed))")
        let dropped = await #expect(throws: OutboxError.self) { try await outbox.dropRecordBase(business: part.text, type: "product") }
        #expect(dropped.map { if case .invalidRequest(field: "business", _) = $0 { true } else { false } } == true)
        #expect(try outbox.lastSeq() == before, "nothing reached the journal")
    }

    @Test(arguments: bad)
    func everyReadOfTheSupportReaderRefusesTheKeyNamingThePart(_ part: BadPart) async throws {
        let journal = TestJournal()
        defer { journal.remove() }
        try journal.open().close()
        let reader = try JournalReader(directory: journal.directory, clock: journal.clock)
        defer { reader.close() }
        for (key, field) in keys(with: part) {
            #expect(refusal { _ = try reader.record(key) }?.field == field)
            #expect(refusal { _ = try reader.recordHistory(key) }?.field == field)
        }
        #expect(refusal { _ = try reader.records(RecordQuery(business: part.text, type: "product")) }?.field == "business")
    }

    @Test func aKeyDecodedFromBadBytesIsReadAndFoundNowhere() throws {
        let journal = TestJournal()
        defer { journal.remove() }
        let outbox = try journal.open()
        defer { outbox.close() }
        let decoded = String(decoding: [0x70, 0xC3, 0x28, 0xFF, 0x37], as: UTF8.self)
        #expect(decoded.contains("\u{FFFD}"))
        #expect(try outbox.record(RecordKey(business: decoded, type: "product", id: decoded)) == nil)
        #expect(try outbox.records(RecordQuery(business: decoded, type: decoded, after: decoded)).records.isEmpty)
        #expect(try outbox.feedState(business: decoded) == nil)
    }
}
