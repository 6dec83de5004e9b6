public import OutboxWire

/// One change of a business's feed as a backend keeps it: the change and the position from
/// which it is visible (the position an answer to its write sends in `Outbox-Visible-At`).
public struct ChangeRow: Sendable, Equatable {
    public var position: FeedPosition
    public var change: FeedChange

    public init(position: FeedPosition, change: FeedChange) {
        self.position = position
        self.change = change
    }
}

/// What one read of a business's feed saw, all of it at one moment (one snapshot, one lock), so
/// the rules of ``FeedHandling`` judge the cursor against the rows they send.
public struct ChangeLogRead: Sendable, Equatable {
    /// The server's epoch now.
    public var epoch: UInt64
    /// The oldest cursor still served: the changes before it may be forgotten (tombstones past
    /// their retention), so a cursor below is answered 409 `expired`.
    public var floor: FeedPosition
    /// The feed's end now: every change visible at it is among the rows at or before it, and no
    /// change made later can come before it.
    public var fence: FeedPosition
    /// The changes after the cursor asked for, in position order, at most the limit asked, none
    /// past `until`; meaningful only when the cursor is of ``epoch``.
    public var rows: [ChangeRow]

    public init(epoch: UInt64, floor: FeedPosition, fence: FeedPosition, rows: [ChangeRow]) {
        self.epoch = epoch
        self.floor = floor
        self.fence = fence
        self.rows = rows
    }
}

/// Where a snapshot page starts: after this type and id, compared by their bytes.
public struct SnapshotKey: Sendable, Equatable {
    public var type: String
    public var id: String

    public init(type: String, id: String) {
        self.type = type
        self.id = id
    }

    /// Whether `(type, id)` comes after this key: by the type's bytes, then the id's.
    public func precedes(type otherType: String, id otherID: String) -> Bool {
        if !type.utf8.elementsEqual(otherType.utf8) { return type.utf8.lexicographicallyPrecedes(otherType.utf8) }
        return id.utf8.lexicographicallyPrecedes(otherID.utf8)
    }
}

/// What one read of a business's current records saw, at one moment.
public struct SnapshotRead: Sendable, Equatable {
    public var epoch: UInt64
    /// The feed's fence at that moment: the records hold every change visible there.
    public var position: FeedPosition
    /// Live records after the key asked for, by type bytes then id bytes, at most the limit.
    public var records: [FeedChange]

    public init(epoch: UInt64, position: FeedPosition, records: [FeedChange]) {
        self.epoch = epoch
        self.position = position
        self.records = records
    }
}

/// A backend's change feed as ``FeedHandling`` reads it: each create, update and delete of a
/// record is a row written in the transaction of its claim and its business write, at a
/// position no later change ever comes before. A memory, LMDB or PostgreSQL store implements
/// this one read; the rules of the protocol (cursors, limits, digests, 409s) are
/// ``FeedHandling``'s, the same for every backend.
public protocol ChangeLog {
    /// Reads `business`'s feed at one moment: the epoch, floor and fence, and up to `limit`
    /// rows strictly after `after` (nil: the start of the current epoch) and at or before
    /// `until` (nil: the fence).
    func read(business: String, after: FeedPosition?, until: FeedPosition?, limit: Int) throws -> ChangeLogRead

    /// Reads `business`'s live records at one moment: up to `limit` of type `type` (nil: every
    /// type) after `after` (nil: from the first), in the order of their type's bytes then
    /// their id's, and the fence of that moment.
    func snapshot(business: String, type: String?, after: SnapshotKey?, limit: Int) throws -> SnapshotRead

    /// Every live record of `type` in `business` as (id, revision), and the fence, at one moment.
    func summary(business: String, type: String) throws -> (position: FeedPosition, records: [(id: String, revision: UInt64)])
}
