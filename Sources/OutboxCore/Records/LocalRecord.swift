public import Foundation
public import OutboxCrypto

/// A record as the member's phone holds it: the member's view, the server base beneath it, and
/// what its sync state says.
///
/// ```swift
/// if let product = try outbox.record(key) {
///     show(product.value)                           // the member's view: nil when deleted
///     if !product.sync.pending.isEmpty { badge("sending...") }
///     if let rolledBack = product.sync.rolledBack { alert(rolledBack.message) }
/// }
/// ```
public struct LocalRecord: Sendable, Equatable {
    public var key: RecordKey
    /// The member's view: the server base with every pending change applied, in the order the
    /// member made them; `nil` when there is none (deleted, or never written).
    public var value: Data?
    /// The schema version of ``value`` as stored (the configured adapter already applied when
    /// it was older).
    public var schemaVersion: Int?
    /// What the server last confirmed; `nil` when the phone has not learnt it.
    public var server: LocalRecord.ServerBase?
    /// Whether the record is of a local-only type: it has no server base, and nothing is sent.
    public var isLocalOnly: Bool
    public var sync: LocalRecord.Sync
    /// The SHA-256 of the member's view; `nil` when there is none (deleted, never written).
    public var valueHash: SHA256Digest?
    /// The view's value is sealed at rest and this reader has no key: ``value`` is `nil` though
    /// the record is not deleted (``valueHash`` names it).
    public var isSealed: Bool
    /// How fresh the server base is: when the business's feed last caught up and whether that is
    /// older than the type's freshness. `nil`: a local-only record, or a type that is not pulled.
    public var freshness: LocalRecord.Freshness?

    public init(key: RecordKey, value: Data?, schemaVersion: Int?, server: LocalRecord.ServerBase?, isLocalOnly: Bool, sync: LocalRecord.Sync,
                valueHash: SHA256Digest? = nil, isSealed: Bool = false) {
        self.key = key
        self.value = value
        self.schemaVersion = schemaVersion
        self.server = server
        self.isLocalOnly = isLocalOnly
        self.sync = sync
        self.valueHash = valueHash ?? value.map { SHA256Digest(of: $0) }
        self.isSealed = isSealed
    }

    /// Whether the member's view holds a value (readable or sealed): `false` when deleted or
    /// never written.
    public var exists: Bool { valueHash != nil }
}

extension LocalRecord {
    /// A record as the server last confirmed it, to this phone.
    public struct ServerBase: Sendable, Equatable {
        /// The value; `nil` when the server deleted it.
        public var value: Data?
        /// The server's revision: ordered per record, so the base never moves back.
        public var revision: UInt64
        /// When the phone learnt it (the moment of the answer that brought it).
        public var learntAt: Date
        /// The journal event that brought it: its proof.
        public var seq: JournalSequence
        /// The value's SHA-256; `nil`: deleted on the server.
        public var valueHash: SHA256Digest?

        /// Deleted on the server (a tombstone); a value sealed from this reader is not deleted.
        public var isDeleted: Bool { valueHash == nil }

        public init(value: Data?, revision: UInt64, learntAt: Date, seq: JournalSequence, valueHash: SHA256Digest?? = nil) {
            self.value = value
            self.revision = revision
            self.learntAt = learntAt
            self.seq = seq
            self.valueHash = valueHash ?? value.map { SHA256Digest(of: $0) }
        }
    }
}

extension LocalRecord {
    /// What a record's sync state says: several things at once (a change waiting to be sent while an
    /// earlier one was rolled back, say), each part empty when it says nothing.
    public struct Sync: Sendable, Equatable {
        /// A change of the member's waiting to reach the server, in the order made.
        public struct Pending: Sendable, Equatable {
            public var operation: OperationID
            /// `queued`, `syncing`, `pending_approval` or `conflicted`.
            public var status: OutboxStatus
            public var deletes: Bool
            /// A file the write carries that is not uploaded yet: its name, the bytes the store
            /// holds of it and its size ("uploading note.jpg, 3.1 of 8 MB").
            public var upload: Upload?

            public init(operation: OperationID, status: OutboxStatus, deletes: Bool, upload: Upload? = nil) {
                self.operation = operation
                self.status = status
                self.deletes = deletes
                self.upload = upload
            }
        }

        /// How far a pending write's file got.
        public struct Upload: Sendable, Equatable {
            public var attachment: AttachmentID
            public var name: String
            public var landed: Int64
            public var size: Int64

            public init(attachment: AttachmentID, name: String, landed: Int64, size: Int64) {
                self.attachment = attachment
                self.name = name
                self.landed = landed
                self.size = size
            }
        }

        /// The server holds a newer revision than the change was made on: the member decides.
        public struct Conflict: Sendable, Equatable {
            public var operation: OperationID
            /// The server's revision, and its value beside the member's change (`nil`: deleted there,
            /// or not sent).
            public var serverRevision: String?
            public var serverValue: Data?

            public init(operation: OperationID, serverRevision: String?, serverValue: Data?) {
                self.operation = operation
                self.serverRevision = serverRevision
                self.serverValue = serverValue
            }
        }

        /// A change the server refused or a person dropped: the member's view is the base again.
        public struct RolledBack: Sendable, Equatable {
            public var operation: OperationID
            /// The write's status: failed, blocked or discarded.
            public var status: OutboxStatus
            /// The code recorded with it (the server's, or the engine's: `discarded`,
            /// `server_version_kept`, `gave_up`, ...).
            public var code: String
            /// Why, in the member's words (``OutboxWords/english``).
            public var message: String
            /// The message recorded with it, as the server's answer carried it: what support reads.
            public var serverMessage: String?

            public init(operation: OperationID, status: OutboxStatus, code: String, message: String, serverMessage: String? = nil) {
                self.operation = operation
                self.status = status
                self.code = code
                self.message = message
                self.serverMessage = serverMessage
            }
        }

        /// The member's changes not yet confirmed, in order.
        public var pending: [Pending] = []
        /// Writes the server applied whose value for this record has not arrived yet: their change
        /// stays in the view, confirmed.
        public var confirmed: [OperationID] = []
        public var conflict: Conflict?
        /// The latest rollback, until the app acknowledges it (``Outbox/acknowledgeRollback(of:)``)
        /// or a later change of the record replaces it.
        public var rolledBack: RolledBack?
        /// Later changes made on a rolled-back one: held (`conflicted`), hidden from the view, for
        /// the member to decide.
        public var held: [OperationID] = []

        public init() {}

        /// Nothing waits, nothing to tell: the view is the server's.
        public var isSynced: Bool { pending.isEmpty && confirmed.isEmpty && conflict == nil && rolledBack == nil && held.isEmpty }
    }
}

extension LocalRecord {
    /// How fresh a record's server base is, by its business's change feed: ``LocalRecord.ServerBase/learntAt``
    /// says when the record's value arrived; this says when the feed last confirmed the whole base.
    public struct Freshness: Sendable, Equatable {
        /// When a pull of the business last reached the feed's end; `nil`: never.
        public var caughtUpAt: Date?
        /// Seconds since then, by uptime within a boot and the wall clock across one (uncapped, so a
        /// phone that was off for days never looks fresh); `nil`: never caught up.
        public var ageSeconds: Double?
        /// Older than the type's freshness (``PullConfiguration.PulledType/freshnessSeconds``), or never caught up.
        public var isStale: Bool
        /// The type's freshness, in seconds.
        public var freshnessSeconds: Double

        public init(caughtUpAt: Date?, ageSeconds: Double?, freshnessSeconds: Double) {
            self.caughtUpAt = caughtUpAt
            self.ageSeconds = ageSeconds
            self.freshnessSeconds = freshnessSeconds
            isStale = ageSeconds.map { $0 > freshnessSeconds } ?? true
        }

        /// When a fresh base turns stale, for freshness read at `readAt`: once its age passes the
        /// type's freshness. `nil` when it is stale already.
        public func staleAt(readAt: Date) -> Date? {
            guard !isStale, let ageSeconds else { return nil }
            // Just past the threshold: stale means older than it.
            return readAt.addingTimeInterval(freshnessSeconds - ageSeconds + 0.001)
        }
    }
}
