public import OutboxCrypto

/// The digests a change feed's pages and summaries carry, so the engine can check that it read
/// what the server sent (a page) and that its copy of a type holds what the server holds (a
/// summary). Both halves compute them from this one definition (`Docs/wire-feed.md`).
///
/// Each is a SHA-256 over fields laid out as the journal lays them out: a text as its UTF-8
/// length (u32, big-endian) then its bytes, a revision as a u64 big-endian. Lengths keep the
/// fields apart, so no two different lists give the same bytes.
public enum FeedDigest {
    /// One change as the page digest reads it.
    public struct Change: Equatable, Sendable {
        public var type: String
        public var id: String
        public var revision: UInt64
        /// The SHA-256 of the record's bytes exactly as the page carried them; `nil`: a tombstone.
        public var recordHash: SHA256Digest?

        public init(type: String, id: String, revision: UInt64, recordHash: SHA256Digest?) {
            self.type = type
            self.id = id
            self.revision = revision
            self.recordHash = recordHash
        }
    }

    /// A page's digest: over each change in the page's order, its type, its id, its revision,
    /// then 1 and the record's SHA-256, or 0 for a tombstone. Order counts: a page reordered is
    /// another page.
    public static func page(_ changes: some Sequence<Change>) -> SHA256Digest {
        var writer = ByteWriter(capacity: 4096)
        for change in changes {
            writer.write(change.type)
            writer.write(change.id)
            writer.write(change.revision)
            if let hash = change.recordHash {
                writer.write(UInt8(1))
                hash.withUnsafeBytes { writer.write(raw: $0) }
            } else {
                writer.write(UInt8(0))
            }
        }
        return SHA256Digest(of: writer.bytes)
    }

    /// A type's summary digest: over its live records (tombstones left out) in the order of their
    /// ids' bytes, each id then its revision; never a value, so a summary says nothing of what
    /// the records hold. The records may come in any order: they are sorted here.
    public static func summary(_ records: some Sequence<(id: String, revision: UInt64)>) -> SHA256Digest {
        let sorted = records.map { (id: Array($0.id.utf8), revision: $0.revision) }.sorted { $0.id.lexicographicallyPrecedes($1.id) }
        var writer = ByteWriter(capacity: 64 * max(sorted.count, 1))
        for record in sorted {
            writer.write(bytes: record.id)
            writer.write(record.revision)
        }
        return SHA256Digest(of: writer.bytes)
    }
}
