import Foundation
import Outbox
import OutboxAudit

// The JSON documents of `record` and `records`. Their field names are part of the tool's
// interface, documented in Docs/journal-inspect.md: add fields, never rename one.

/// A value of the member's: its size and SHA-256 always, its JSON text only when asked for.
struct RecordValueDocument: Encodable {
    var bytes: Int
    var sha256: String
    /// The value's JSON text, only with `--payload`.
    var content: String?

    init(_ value: Data, includeContent: Bool) {
        bytes = value.count
        sha256 = SHA256Digest(of: value).hex
        content = includeContent ? String(decoding: value, as: UTF8.self) : nil
    }
}

/// A record as it stands: the member's view, the server's base, the sync state.
struct RecordStateDocument: Encodable {
    struct Server: Encodable {
        var revision: UInt64
        var learntAt: Date
        /// The event that brought it.
        var seq: JournalSequence
        /// Absent when the values are sealed from this reader (it cannot tell).
        var deleted: Bool?
        var value: RecordValueDocument?
    }

    struct Sync: Encodable {
        struct Pending: Encodable {
            var operationID: OperationID
            var status: OutboxStatus
            var deletes: Bool
        }

        struct Conflict: Encodable {
            var operationID: OperationID
            var serverRevision: String?
            var serverValue: RecordValueDocument?
        }

        struct RolledBack: Encodable {
            var operationID: OperationID
            var status: OutboxStatus
            var code: String
            var message: String
        }

        var synced: Bool
        var pending: [Pending]
        var confirmed: [OperationID]
        var conflict: Conflict?
        var rolledBack: RolledBack?
        var held: [OperationID]
        /// The state in a few words, as the `records` table says it.
        var summary: String
    }

    var key: String
    var id: String
    var localOnly: Bool
    /// The member's view; absent when it holds no value (deleted, or a create rolled back).
    var view: RecordValueDocument?
    var schemaVersion: Int?
    var server: Server?
    var sync: Sync

    /// - Parameter sealed: the journal is encrypted at rest and read without its key: a value
    ///   read as none may be sealed, not deleted.
    init(_ record: LocalRecord, includeValues: Bool, sealed: Bool) {
        func value(_ data: Data?) -> RecordValueDocument? { data.map { RecordValueDocument($0, includeContent: includeValues) } }
        key = record.key.description
        id = record.key.id
        localOnly = record.isLocalOnly
        view = value(record.value)
        schemaVersion = record.schemaVersion
        server = record.server.map {
            Server(revision: $0.revision, learntAt: $0.learntAt, seq: $0.seq, deleted: sealed ? nil : $0.isDeleted, value: value($0.value))
        }
        let state = record.sync
        sync = Sync(
            synced: state.isSynced,
            pending: state.pending.map { Sync.Pending(operationID: $0.operation, status: $0.status, deletes: $0.deletes) },
            confirmed: state.confirmed,
            conflict: state.conflict.map {
                Sync.Conflict(operationID: $0.operation, serverRevision: $0.serverRevision, serverValue: value($0.serverValue))
            },
            rolledBack: state.rolledBack.map {
                Sync.RolledBack(operationID: $0.operation, status: $0.status, code: $0.code, message: $0.message)
            },
            held: state.held,
            summary: RecordText.syncShort(record)
        )
    }
}

/// `record`: the record's proof.
struct RecordDocument: Encodable {
    struct Entry: Encodable {
        var seq: JournalSequence
        var recordedAt: Date
        var kind: JournalEventKind
        var operationID: OperationID?
        var what: String
        var revision: UInt64?
        var sha256: String?
        /// The value's JSON text, with `--payload`, while the journal holds it.
        var content: String?
    }

    var key: String
    var business: String
    var type: String
    var id: String
    /// Whether the journal holds anything of the record.
    var found: Bool
    var valuesIncluded: Bool
    /// The journal is encrypted at rest and was read without its key: values read as absent.
    var valuesSealed: Bool
    var record: RecordStateDocument?
    var entries: [Entry]
    var verdict: String

    /// - Parameter values: the values the entries name, by their SHA-256 in hex (with `--payload`).
    init(_ history: LocalRecord.History, includeValues: Bool, values: [String: Data] = [:], sealed: Bool) {
        key = history.key.description
        business = history.key.business
        type = history.key.type
        id = history.key.id
        found = history.record != nil
        valuesIncluded = includeValues
        valuesSealed = sealed
        record = history.record.map { RecordStateDocument($0, includeValues: includeValues, sealed: sealed) }
        entries = history.entries.map {
            Entry(seq: $0.seq, recordedAt: $0.recordedAt, kind: $0.kind, operationID: $0.operation, what: $0.what,
                  revision: $0.revision, sha256: $0.valueHash?.hex,
                  content: includeValues ? $0.valueHash.flatMap { values[$0.hex] }.map { String(decoding: $0, as: UTF8.self) } : nil)
        }
        verdict = RecordText.verdict(history, sealed: sealed)
    }
}

/// `records`: one page.
struct RecordsDocument: Encodable {
    var business: String
    var type: String
    var after: String?
    var valuesIncluded: Bool
    var valuesSealed: Bool
    var records: [RecordStateDocument]
    /// The `--after` of the next page; absent on the last.
    var nextAfter: String?
}
