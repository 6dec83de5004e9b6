public import Foundation
public import OutboxCrypto

/// One change to a record, made with the write that sends it (or with none, for a local-only
/// type): the record's whole new value as JSON, or its deletion.
///
/// ```swift
/// try await outbox.enqueue(request, changing: [.put(key, Data(#"{"name":"Gauze","price":13.5}"#.utf8))])
/// ```
public enum RecordChange: Sendable, Equatable {
    /// The record's value from now on, as the member sees it: a JSON value of at most the
    /// configuration's payload limit.
    case put(RecordKey, Data)
    /// The record is gone for the member. A record the journal never held may be deleted (it may
    /// exist on the server).
    case delete(RecordKey)

    public var key: RecordKey {
        switch self {
        case .put(let key, _), .delete(let key): key
        }
    }

    /// The value put; `nil` for a delete.
    public var value: Data? {
        if case .put(_, let value) = self { value } else { nil }
    }
}

/// A record change as the journal keeps it: its key, its value (`nil`: deleted), the value's
/// SHA-256 and its type's schema version when it was made.
package struct RecordWrite: Sendable, Equatable {
    public var key: RecordKey
    /// The value; empty when sealed at rest (``sealedValue``) or deleted.
    public var value: Data?
    public var valueHash: SHA256Digest?
    /// The schema version of the record's type when the value was written.
    public var schemaVersion: Int
    /// The value sealed with the journal's key, when it is encrypted at rest.
    public var sealedValue: [UInt8]?

    public init(key: RecordKey, value: Data?, schemaVersion: Int, sealedValue: [UInt8]? = nil) {
        self.key = key
        self.value = value
        self.valueHash = value.map { SHA256Digest(of: $0) }
        self.schemaVersion = schemaVersion
        self.sealedValue = sealedValue
    }

    /// A write read back: its hash as stored.
    package init(key: RecordKey, value: Data?, valueHash: SHA256Digest?, schemaVersion: Int, sealedValue: [UInt8]?) {
        self.key = key
        self.value = value
        self.valueHash = valueHash
        self.schemaVersion = schemaVersion
        self.sealedValue = sealedValue
    }

    public var isDelete: Bool { valueHash == nil }

    /// The change it stands for.
    public var change: RecordChange {
        if let value { .put(key, value) } else { .delete(key) }
    }
}

/// What the server confirmed of one record, as the journal keeps its trail: the revision and
/// the value's SHA-256 (the value itself lives in the record's server base), or its deletion.
package struct RecordConfirmation: Sendable, Equatable {
    public var key: RecordKey
    /// The server's revision of the record: ordered per record, so the base never moves back.
    public var revision: UInt64
    /// The SHA-256 of the value now at that revision; `nil`: deleted on the server.
    public var valueHash: SHA256Digest?
    /// Where the value came from.
    public var source: Source

    public enum Source: UInt8, Sendable, Equatable, CustomStringConvertible, JournalCode {
        /// The answer's own `record`.
        case answer = 1
        /// The answer named a revision but no record: the value the write put.
        case written = 2
        /// A 412's `current`: the record as the server holds it, beside the member's change.
        case conflict = 3
        /// A page of the business's change feed (format 4).
        case pulled = 4
        /// A page of the business's snapshot, fetched again whole (format 4), or a record the
        /// snapshot no longer held, deleted at the swap.
        case snapshot = 5

        package var code: UInt8 { rawValue }
        public var description: String {
            switch self {
            case .answer: "answer"
            case .written: "written"
            case .conflict: "conflict"
            case .pulled: "pulled"
            case .snapshot: "snapshot"
            }
        }
    }

    public init(key: RecordKey, revision: UInt64, valueHash: SHA256Digest?, source: Source) {
        self.key = key
        self.revision = revision
        self.valueHash = valueHash
        self.source = source
    }
}
