package import Foundation
package import OutboxCore
package import OutboxStorage
package import OutboxWire

/// A business's change feed as the journal holds it, beside the server base it feeds (the
/// `records` database, table 4): not a projection, because the base it describes is not one
/// either. Written only in the commit of the step that moves it, last, so its cursor is never
/// ahead of the changes it stands for.
///
/// The business's base lives in one of two generations (`records` tables 1 and 3): the member
/// sees the active one; a resnapshot stages the server's records in the other, page by page, and
/// its last commit flips ``generation``, so no read ever sees a mix.
package struct FeedRow: Sendable, Equatable {
    /// Where the next page starts; `nil` until a first page or resnapshot lands.
    package var cursor: FeedPosition?
    /// The event that set the row last (`pageApplied`, or a resnapshot's).
    package var pageSeq: JournalSequence
    /// The generation the member sees: 0 (table 1) or 1 (table 3).
    package var generation: UInt8 = 0
    /// A resnapshot staging the other generation.
    package var staging: FeedStaging?
    /// Whether the other generation may still hold rows of this business (a swapped-out base, an
    /// abandoned staging), deleted a batch at a time before anything is staged there again.
    package var sweeping = false
    /// Types whose base was dropped (``RecordBaseDropped``, a schema change without an adapter)
    /// since the feed moved past their records: each is fetched again whole by the next pull.
    package var resync: [String] = []

    /// The generation a resnapshot stages into.
    package var otherGeneration: UInt8 { 1 - generation }
}

/// A resnapshot under way: the snapshot's first position, where the next page starts, and what
/// was staged so far.
package struct FeedStaging: Sendable, Equatable {
    /// The one type fetched again (its summary did not match); `nil`: every type.
    package var type: String? = nil
    /// The first page's position: the feed's cursor once swapped in.
    package var position: FeedPosition
    /// The last record staged (type and id); the next page starts after it.
    package var afterType: String
    package var afterID: String
    package var pages: Int
    package var staged: Int
    /// The `resnapshotStarted` event.
    package var startedSeq: JournalSequence
    /// For one type fetched again: the other types' bases copied so far into the staged
    /// generation (the key of the last one copied; empty: none yet), and whether all are.
    package var carriedThrough: [UInt8] = []
    package var carried = false

    /// Whether the snapshot being staged already holds `key` as an answer visible at `visibleAt`
    /// left it: every page is read at or after ``position``, where the feed resumes once swapped
    /// in, so an answer visible at or before it (or in an older epoch) is older than what the
    /// pages bring, and staged it would bring back a record deleted before the snapshot began.
    /// Another type's record, carried from the base the member sees, is never covered.
    package func covers(_ key: RecordKey, visibleAt: FeedPosition?) -> Bool {
        Self.covers(key, visibleAt: visibleAt, type: type, position: position)
    }

    /// The same rule for a staging of `type` (`nil`: every type) begun at `position`, as the
    /// journal's `resnapshotStarted` names them.
    package static func covers(_ key: RecordKey, visibleAt: FeedPosition?, type: String?, position: FeedPosition) -> Bool {
        guard let visibleAt, type.map({ $0 == key.type }) ?? true else { return false }
        return visibleAt.isDelivered(by: position)
    }
}

/// A step's change of its business's feed row, checked before the step's unit lands.
package enum FeedRowWrite: Sendable, Equatable {
    /// A page moves the cursor: the stored cursor must be the one it started from (none for a
    /// feed never pulled), and no resnapshot may be staging.
    case move(business: String, expectFrom: FeedPosition?, to: FeedPosition)
    /// A resnapshot's step: the stored row must be `expect`, and becomes `row` (its `pageSeq` the
    /// step's event).
    case replace(business: String, expect: FeedRow?, row: FeedRow)

    package var business: String {
        switch self {
        case .move(let business, _, _), .replace(let business, _, _): business
        }
    }
}

extension JournalCodec {
    /// A feed row: a version byte (2); the cursor (a presence byte, three u64); the setting
    /// event's seq (u64); the active generation (u8); the staging (a presence byte; its type
    /// (optional string), position, after type and id as length-prefixed strings, pages u32,
    /// staged u32, started seq u64, the carried-through key as bytes, carried u8); sweeping (u8);
    /// the types to fetch again (u32 count, then each a string). Version 1 (a cursor and the seq) reads as generation 0, nothing staged.
    package enum Feed: LMDBCodec {
        package static func encode(_ item: FeedRow, into bytes: inout [UInt8]) {
            var writer = ByteWriter(capacity: 64)
            writer.write(UInt8(2))
            writer.writeOptional(item.cursor) { $0.write(position: $1) }
            writer.write(item.pageSeq.rawValue)
            writer.write(item.generation)
            writer.writeOptional(item.staging) { writer, staging in
                writer.write(staging.type)
                writer.write(position: staging.position)
                writer.write(staging.afterType)
                writer.write(staging.afterID)
                writer.write(UInt32(clamping: staging.pages))
                writer.write(UInt32(clamping: staging.staged))
                writer.write(staging.startedSeq.rawValue)
                writer.write(bytes: staging.carriedThrough)
                writer.write(staging.carried)
            }
            writer.write(item.sweeping)
            writer.write(UInt32(item.resync.count))
            for type in item.resync { writer.write(type) }
            bytes += writer.bytes
        }

        package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> FeedRow {
            var reader = ByteReader(Array(bytes))
            do {
                let version = try reader.readUInt8("feed row version")
                let row: FeedRow
                switch version {
                case 1:
                    row = FeedRow(cursor: try reader.readPosition("feed cursor"), pageSeq: JournalSequence(rawValue: try reader.readUInt64("page seq")))
                case 2:
                    let cursor = try reader.readOptional("feed cursor") { (reader) throws(DecodingProblem) in try reader.readPosition("feed cursor") }
                    let seq = JournalSequence(rawValue: try reader.readUInt64("page seq"))
                    let generation = try reader.readUInt8("feed generation")
                    guard generation <= 1 else { throw DecodingProblem("a feed row naming base generation \(generation)") }
                    let staging = try reader.readOptional("feed staging") { (reader) throws(DecodingProblem) in
                        FeedStaging(type: try reader.readOptionalString("staging type"),
                                    position: try reader.readPosition("staging position"), afterType: try reader.readString("staged type"),
                                    afterID: try reader.readString("staged id"), pages: Int(try reader.readUInt32("staged pages")),
                                    staged: Int(try reader.readUInt32("staged records")),
                                    startedSeq: JournalSequence(rawValue: try reader.readUInt64("staging seq")),
                                    carriedThrough: try reader.readBytes("carried through"), carried: try reader.readBool("carried"))
                    }
                    let sweeping = try reader.readBool("feed sweeping")
                    let count = Int(try reader.readUInt32("resync count"))
                    guard count <= reader.remaining else { throw DecodingProblem("\(count) types to fetch again cannot fit") }
                    var resync: [String] = []
                    for _ in 0..<count { resync.append(try reader.readString("resync type")) }
                    row = FeedRow(cursor: cursor, pageSeq: seq, generation: generation, staging: staging, sweeping: sweeping, resync: resync)
                default:
                    throw DecodingProblem("a feed row of version \(version), newer than this engine's 2")
                }
                guard reader.isAtEnd else { throw DecodingProblem("\(reader.remaining) bytes after a feed row") }
                return row
            } catch {
                throw LMDBCodecError(reason: "\(error)")
            }
        }
    }
}

extension JournalSchema {
    /// A business's feed row; `nil` when its feed was never pulled.
    package func feedRow(business: String, in txn: borrowing LMDBTransaction) throws -> FeedRow? {
        try txn.get(feeds, business)
    }

    /// Whether the base `business`'s members see holds any record.
    package func holdsBase(business: String, in txn: borrowing LMDBTransaction) throws -> Bool {
        var found = false
        try txn.scan(activeBase(business: business, in: txn), leading: RecordKey.businessScopeBytes(business)) { _ in
            found = true
            return .stop
        }
        return found
    }

    /// The table of base generation `generation` (0: table 1, 1: table 3).
    package func baseTable(generation: UInt8) -> LMDBTable<JournalCodec.RecordKeyCodec, JournalCodec.Record> {
        generation == 0 ? base : stagedBase
    }

    /// The base the member sees of `business`: the generation its feed row names.
    package func activeBase(business: String, in txn: borrowing LMDBTransaction) throws -> LMDBTable<JournalCodec.RecordKeyCodec, JournalCodec.Record> {
        baseTable(generation: try feedRow(business: business, in: txn)?.generation ?? 0)
    }
}
