public import Foundation
public import OutboxCrypto

extension LocalRecord {
    /// Why a record holds its value: every event that made it, in journal order, and a verdict in
    /// words. The answer to "what does the member's phone hold for product 7d0c3a52, and why".
    public struct History: Sendable, Equatable {
        /// One event of the record's history.
        public struct Entry: Sendable, Equatable {
            public var seq: JournalSequence
            public var recordedAt: Date
            public var kind: JournalEventKind
            /// The write it belongs to (`nil` for a local write).
            public var operation: OperationID?
            /// What the event said of the record: a change put or deleted, a revision confirmed, ...
            public var what: String
            /// The revision it names, when it names one.
            public var revision: UInt64?
            /// The SHA-256 of the value it brought or changed to; `nil` for a delete or for an event
            /// that moves no value (a status change).
            public var valueHash: SHA256Digest?

            public init(seq: JournalSequence, recordedAt: Date, kind: JournalEventKind, operation: OperationID?, what: String,
                        revision: UInt64? = nil, valueHash: SHA256Digest? = nil) {
                self.seq = seq
                self.recordedAt = recordedAt
                self.kind = kind
                self.operation = operation
                self.what = what
                self.revision = revision
                self.valueHash = valueHash
            }
        }

        public var key: RecordKey
        /// The record as it stands; `nil` when the journal holds nothing of it.
        public var record: LocalRecord?
        public var entries: [Entry]
        /// In words: what the member's phone shows, from which write, and what the server last
        /// confirmed. Values are named by their hash (`showingValues` names them as JSON text).
        public var verdict: String

        public init(key: RecordKey, record: LocalRecord?, entries: [Entry], verdict: String) {
            self.key = key
            self.record = record
            self.entries = entries
            self.verdict = verdict
        }

        /// The verdict for `record`; values shown as their JSON text (shortened) when `showingValues`,
        /// else by the first 12 digits of their SHA-256.
        public static func verdict(for record: LocalRecord?, key: RecordKey, showingValues: Bool) -> String {
            guard let record else { return "the phone holds nothing of \(key): no write changed it and no answer or pull brought it" }
            /// A value in words: its JSON text (shortened), or "value" and its hash's first digits.
            func shown(_ value: Data?, hash: SHA256Digest? = nil) -> String {
                guard let value else {
                    return hash.map { "value \($0.hex.prefix(12)) (sealed)" } ?? "nothing (deleted)"
                }
                if showingValues {
                    let text = String(decoding: value, as: UTF8.self)
                    return text.count > 80 ? String(text.prefix(77)) + "..." : text
                }
                return "value " + String(SHA256Digest(of: value).hex.prefix(12))
            }
            var parts: [String] = []
            let sync = record.sync
            if record.isLocalOnly {
                parts.append("shows \(shown(record.value, hash: record.valueHash)), a local-only record the phone never sends")
                return parts.joined(separator: "; ")
            }
            if let last = sync.pending.last {
                let waits = switch last.status {
                case .queued: "waiting for internet"
                case .syncing: "being sent now"
                case .pendingApproval: "waiting for approval"
                case .conflicted: "changed elsewhere meanwhile: the member decides"
                default: last.status.rawValue
                }
                parts.append("shows the member's \(shown(record.value, hash: record.valueHash)) from write \(String(last.operation.uuidString.prefix(8))), \(waits)")
            } else if let confirmed = sync.confirmed.last {
                parts.append("shows the member's \(shown(record.value, hash: record.valueHash)) from write \(String(confirmed.uuidString.prefix(8))), applied by the server, whose value has not arrived yet")
            } else {
                parts.append("shows \(shown(record.value, hash: record.valueHash)), the server's")
            }
            if let conflict = sync.conflict {
                parts.append("the server holds revision \(conflict.serverRevision ?? "?") (\(shown(conflict.serverValue))) beside it")
            }
            if let rolledBack = sync.rolledBack {
                parts.append("write \(String(rolledBack.operation.uuidString.prefix(8))) was rolled back (\(rolledBack.status.rawValue), \(rolledBack.code): \"\(rolledBack.message)\")")
            }
            if !sync.held.isEmpty {
                parts.append("\(sync.held.count) later change\(sync.held.count == 1 ? " is" : "s are") held: made on a rolled-back value, for the member to decide")
            }
            if let base = record.server {
                parts.append("the server last confirmed \(shown(base.value, hash: base.valueHash)) at revision \(base.revision) (seq \(base.seq))")
            } else {
                parts.append("the server's value is not known to the phone yet")
            }
            return parts.joined(separator: "; ")
        }
    }
}
