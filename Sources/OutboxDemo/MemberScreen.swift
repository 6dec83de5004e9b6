import Foundation
import Outbox

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

    /// The record's sync state in the member's words: "waiting for internet", "sending...",
    /// "saved, revision 3", "changed elsewhere: ...", "rolled back: <the server's message>".
    static func state(_ record: LocalRecord, online: Bool) -> String {
        let sync = record.sync
        var parts: [String] = []
        if let conflict = sync.conflict {
            parts.append("changed elsewhere: \(shown(conflict.serverValue, type: record.key.type)) on the server"
                + (conflict.serverRevision.map { " (revision \($0))" } ?? ""))
        } else if let last = sync.pending.last {
            switch last.status {
            case .queued, .syncing:
                // With no signal an attempt in flight fails at once: the member is told what she waits for.
                parts.append(online ? "sending..." : "waiting for internet")
            case .pendingApproval:
                parts.append("waiting for the owner's approval")
            default:
                parts.append(last.status.rawValue)
            }
        } else if !sync.held.isEmpty {
            parts.append("held: made on a change that was rolled back")
        } else if !sync.confirmed.isEmpty {
            parts.append("saved")
        }
        if let rolledBack = sync.rolledBack {
            parts.append("rolled back: \(rolledBack.message)")
        }
        if parts.isEmpty {
            parts.append("saved" + (record.server.map { ", revision \($0.revision)" } ?? ""))
        }
        return parts.joined(separator: "; ")
    }

    static func fields(_ value: Data) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: value)) as? [String: Any]
    }
}
