import Foundation
import OutboxCore
import OutboxStorage
import OutboxWire

/// A business's change feed as the journal holds it, beside the server base it feeds (the
/// `records` database, table 4): not a projection, because the base it describes is not one
/// either. Written only in the commit of the page that moves it, last, so its cursor is never
/// ahead of the changes it stands for.
struct FeedRow: Sendable, Equatable {
    /// Where the next page starts.
    var cursor: FeedPosition
    /// The `pageApplied` event that set it.
    var pageSeq: JournalSequence
}

/// A page's move of its business's feed, checked before the page's unit lands: the stored
/// cursor must be the one the page started from (none for a feed never pulled).
struct FeedRowWrite: Sendable, Equatable {
    var business: String
    var expectFrom: FeedPosition?
    var to: FeedPosition
}

extension JournalCodec {
    /// A feed row: a version byte (1), the cursor (three u64), the page's seq (u64).
    enum Feed: LMDBCodec {
        static func encode(_ item: FeedRow, into bytes: inout [UInt8]) {
            var writer = ByteWriter(capacity: 33)
            writer.write(UInt8(1))
            writer.write(item.cursor.epoch)
            writer.write(item.cursor.major)
            writer.write(item.cursor.minor)
            writer.write(item.pageSeq.rawValue)
            bytes += writer.bytes
        }

        static func decode(_ bytes: UnsafeRawBufferPointer) throws -> FeedRow {
            var reader = ByteReader(Array(bytes))
            do {
                let version = try reader.readUInt8("feed row version")
                guard version == 1 else { throw DecodingProblem("a feed row of version \(version), newer than this engine's 1") }
                let cursor = FeedPosition(epoch: try reader.readUInt64("feed epoch"), major: try reader.readUInt64("feed cursor"),
                                          minor: try reader.readUInt64("feed cursor"))
                let row = FeedRow(cursor: cursor, pageSeq: JournalSequence(rawValue: try reader.readUInt64("page seq")))
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
    func feedRow(business: String, in txn: borrowing LMDBTransaction) throws -> FeedRow? {
        try txn.get(feeds, business)
    }
}
