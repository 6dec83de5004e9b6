import Foundation
import Outbox
import OutboxAudit

/// What the member's phone shows of her records, read from the engine as an app reads it: the
/// list of each type (`records(_:)`), each record's value as the member typed it, and its sync
/// state in words; below the list, the records a refused create took off it.
struct MemberScreen {
    let outbox: Outbox
    let business: String
    /// The records the member wrote, by name: a refused create, gone from the list, is still told.
    let labels: Labels
    let narrator: Narrator
    /// Whether the phone has a signal: a change waiting is "sending..." then.
    let signal: Signal

    /// The record types the pharmacy's screens list, with their headings.
    static let lists = [("product", "Products"), ("employee", "Employees")]

    /// Says what the screen shows now: the lists of `types` (every list when `nil`).
    func show(_ types: Set<String>? = nil) throws {
        narrator.say(.engine, try lines(online: signal.isOnline, types: types).joined(separator: "\n"))
    }

    func lines(online: Bool, types: Set<String>? = nil) throws -> [String] {
        var lines = ["On Folake's phone:"]
        let watched = labels.records
        for (type, heading) in Self.lists where types?.contains(type) ?? true {
            let shown = try outbox.records(RecordQuery(business: business, type: type)).records
            let gone = try watched.keys.filter { $0.type.utf8.elementsEqual(type.utf8) }.sorted().compactMap { key -> (String, LocalRecord)? in
                guard let record = try outbox.record(key), record.value == nil, record.sync.rolledBack != nil else { return nil }
                return (watched[key] ?? key.id, record)
            }
            guard !shown.isEmpty || !gone.isEmpty else { continue }
            lines.append("  \(heading)")
            for record in shown {
                lines.append("    \(Self.line(record, online: online))")
            }
            for (name, record) in gone {
                lines.append("    \(name): not on the list, \(Self.state(record, online: online))")
            }
        }
        return lines
    }

    /// One record as the list shows it: "Antiseptic 500 ml: 13.50, waiting for internet".
    static func line(_ record: LocalRecord, online: Bool) -> String {
        let fields = record.value.flatMap(Self.fields) ?? [:]
        let name = fields["name"] as? String ?? record.key.id
        return "\(name): \(shown(record.value, type: record.key.type)), \(state(record, online: online))"
    }

    /// The value's member the list shows: a product's price, an employee's role.
    static func shown(_ value: Data?, type: String) -> String {
        guard let value, let fields = fields(value) else { return "nothing" }
        switch type {
        case "product":
            guard let price = (fields["price"] as? NSNumber)?.doubleValue else { return "no price" }
            return String(format: "%.2f", price)
        case "employee":
            return fields["role"] as? String ?? "no role"
        default:
            return String(decoding: value, as: UTF8.self)
        }
    }

    /// The record's sync state in the member's words, the library's (``OutboxWords``): "waiting
    /// for internet", "sending...", "saved", "changed elsewhere", "rolled back: <why>"; with what
    /// the demo adds beside them: the server's value of a conflict, and the revision saved.
    static func state(_ record: LocalRecord, online: Bool) -> String {
        let words = OutboxWords.english
        var text = words.recordState(record.sync, online: online)
        if let conflict = record.sync.conflict, text.hasPrefix(words.waitingForDecision) {
            let detail = ": \(shown(conflict.serverValue, type: record.key.type)) on the server"
                + (conflict.serverRevision.map { " (revision \($0))" } ?? "")
            text.insert(contentsOf: detail, at: text.index(text.startIndex, offsetBy: words.waitingForDecision.count))
        }
        if text == words.saved, record.sync.confirmed.isEmpty, let server = record.server {
            text += ", revision \(server.revision)"
        }
        return text
    }

    static func fields(_ value: Data) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: value)) as? [String: Any]
    }
}
