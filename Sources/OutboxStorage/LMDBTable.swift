public import Foundation

/// How a table's keys or values become bytes, and back.
///
/// A codec is the one place a kind of key or value is laid out: a table built on it never
/// writes bytes by hand. Decoding runs on every read; a value it cannot decode throws (it is
/// damage, not absence: only a missing key reads as `nil`).
///
/// ```swift
/// enum SeqKey: LMDBCodec {
///     static func encode(_ seq: UInt64, into bytes: inout [UInt8]) { bytes += seq.bigEndianBytes }
///     static func decode(_ bytes: UnsafeRawBufferPointer) throws -> UInt64 { ... }
/// }
/// let events = LMDBTable<SeqKey, RawBytes>(database)
/// ```
public protocol LMDBCodec {
    associatedtype Item
    /// Appends the bytes of `item`.
    static func encode(_ item: Item, into bytes: inout [UInt8])
    /// The item these bytes hold.
    /// - Throws: when the bytes are not one (the caller names the table and key).
    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Item
}

extension LMDBCodec {
    /// The bytes of `item` alone.
    @inlinable public static func bytes(_ item: Item) -> [UInt8] {
        var bytes: [UInt8] = []
        encode(item, into: &bytes)
        return bytes
    }
}

/// Bytes as they are: a value copied out of the map.
public enum RawBytes: LMDBCodec {
    public static func encode(_ item: [UInt8], into bytes: inout [UInt8]) { bytes += item }
    public static func decode(_ bytes: UnsafeRawBufferPointer) -> [UInt8] { Array(bytes) }
}

/// A UTF-8 name.
public enum NameCodec: LMDBCodec {
    public static func encode(_ item: String, into bytes: inout [UInt8]) { bytes += item.utf8 }
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> String {
        guard let name = String(validating: bytes, as: UTF8.self) else { throw LMDBCodecError(reason: "a name that is not UTF-8") }
        return name
    }
}

/// An unsigned integer, big-endian: keys sort in numeric order.
public enum BigEndianUInt64: LMDBCodec {
    public static func encode(_ item: UInt64, into bytes: inout [UInt8]) {
        withUnsafeBytes(of: item.bigEndian) { bytes.append(contentsOf: $0) }
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> UInt64 {
        guard bytes.count == 8 else { throw LMDBCodecError(reason: "\(bytes.count) bytes where a 64-bit integer takes 8") }
        return UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
    }
}

/// A signed count, stored as its two's complement, big-endian.
public enum BigEndianInt64: LMDBCodec {
    public static func encode(_ item: Int64, into bytes: inout [UInt8]) {
        BigEndianUInt64.encode(UInt64(bitPattern: item), into: &bytes)
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> Int64 {
        Int64(bitPattern: try BigEndianUInt64.decode(bytes))
    }
}

/// A value a codec could not decode.
public struct LMDBCodecError: Error, Sendable, CustomStringConvertible {
    public var reason: String
    /// The database whose stored bytes did not decode, once known.
    public var databaseName: String?
    public init(reason: String, databaseName: String? = nil) {
        self.reason = reason
        self.databaseName = databaseName
    }
    public var description: String { reason }
}

/// A table: the entries of one database whose keys start with `prefix`, their keys and values
/// laid out by codecs (as heed's `Database<KC, DC>`).
///
/// Several tables may share a database under distinct prefixes: one B-tree then holds them
/// all, and a commit that touches them writes one page path instead of one per database.
/// Reads and scans never see another table's entries.
public struct LMDBTable<Key: LMDBCodec, Value: LMDBCodec>: Sendable {
    public let database: LMDBDatabase
    /// The bytes every key of this table starts with; empty when it has its database alone.
    public let prefix: [UInt8]
    /// What errors call it: its database's name unless it shares the database.
    public let name: String

    public init(_ database: LMDBDatabase, prefix: [UInt8] = [], name: String? = nil) {
        self.database = database
        self.prefix = prefix
        self.name = name ?? database.name
    }

    /// The stored bytes of `key`: the prefix, then the key's codec.
    @inlinable public func keyBytes(_ key: Key.Item) -> [UInt8] {
        var bytes = prefix
        Key.encode(key, into: &bytes)
        return bytes
    }

    /// The stored bytes of a key's leading part, for scans over keys that start with it.
    @inlinable public func keyBytes(leading: [UInt8]) -> [UInt8] { prefix + leading }

    /// Lends the stored bytes of an encoded key (the prefix, then the key) to `body`, built on
    /// the stack: a write of many rows allocates nothing per key.
    @usableFromInline func withStoredKey<R>(_ encodedKey: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard !prefix.isEmpty else { return try body(encodedKey) }
        return try withUnsafeTemporaryAllocation(byteCount: prefix.count + encodedKey.count, alignment: 1) { buffer in
            prefix.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[..<prefix.count]).copyMemory(from: $0) }
            UnsafeMutableRawBufferPointer(rebasing: buffer[prefix.count...]).copyMemory(from: encodedKey)
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }

    public var description: String {
        prefix.isEmpty ? "\(database)" : "table '\(name)' (\(database), prefix \(prefix.map(String.init).joined(separator: " ")))"
    }
}

/// An entry a scan lends its body: valid only during the call.
public struct LMDBEntry<Key: LMDBCodec, Value: LMDBCodec>: ~Copyable {
    /// The key's bytes after the table's prefix.
    public let keyBytes: UnsafeRawBufferPointer
    public let valueBytes: UnsafeRawBufferPointer

    @usableFromInline init(keyBytes: UnsafeRawBufferPointer, valueBytes: UnsafeRawBufferPointer) {
        self.keyBytes = keyBytes
        self.valueBytes = valueBytes
    }

    @inlinable public func key() throws -> Key.Item { try Key.decode(keyBytes) }
    @inlinable public func value() throws -> Value.Item { try Value.decode(valueBytes) }
}

// The table's reads and writes are inlinable so that each specializes for its codecs where it is
// called: unspecialized, every call looks up the generic types' metadata at run time.
extension LMDBTransaction {
    /// The value under `key`, decoded; `nil` when there is none.
    /// - Throws: ``LMDBCodecError`` (naming the table) for a value that does not decode.
    @inlinable public func get<K, V>(_ table: LMDBTable<K, V>, _ key: K.Item) throws -> V.Item? {
        try withValue(table.database, key: table.keyBytes(key)) { bytes in
            guard let bytes else { return nil }
            return try decoded(table, bytes, V.decode)
        }
    }

    /// Stores `value` under `key`.
    @inlinable public func put<K, V>(_ table: LMDBTable<K, V>, _ key: K.Item, _ value: V.Item, flags: LMDBPutFlags = []) throws {
        try put(table.database, key: table.keyBytes(key), value: V.bytes(value), flags: flags)
    }

    /// Removes `key`; answers whether it was there.
    @discardableResult
    @inlinable public func delete<K, V>(_ table: LMDBTable<K, V>, _ key: K.Item) throws -> Bool {
        try delete(table.database, key: table.keyBytes(key))
    }

    /// Stores bytes its codecs encoded already (`K.bytes(_:)`, `V.bytes(_:)`): for code that
    /// holds encoded keys, as an index update comparing old and new keys, or a rebuild writing
    /// rows in key order.
    @inlinable public func put<K, V>(
        _ table: LMDBTable<K, V>,
        encodedKey: UnsafeRawBufferPointer,
        encodedValue: UnsafeRawBufferPointer,
        flags: LMDBPutFlags = []
    ) throws {
        try table.withStoredKey(encodedKey) { key in
            try put(table.database, key: key, value: encodedValue, flags: flags)
        }
    }

    /// Lends the stored bytes of a key its codec encoded already (borrowed, say, from the
    /// stack) to `body`, or `nil` when absent: a read on the hot path that allocates no key.
    /// The value's bytes are valid only inside `body`.
    @inlinable public func withValue<K, V, R>(
        _ table: LMDBTable<K, V>,
        encodedKey: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer?) throws -> R
    ) throws -> R {
        try table.withStoredKey(encodedKey) { key in try withValue(table.database, key: key, body) }
    }

    /// Removes a key its codec encoded already; answers whether it was there.
    @discardableResult
    @inlinable public func delete<K, V>(_ table: LMDBTable<K, V>, encodedKey: [UInt8]) throws -> Bool {
        try delete(table.database, key: table.keyBytes(leading: encodedKey))
    }


    /// Visits the table's entries in key order (reverse: descending) whose keys start with
    /// `leading` (bytes after the table's prefix), beginning at `from` (the first key `>=` it, or
    /// `<=` it reversed; a leading part, or a whole key's bytes). `body` answers whether to go on.
    @inlinable public func scan<K, V>(
        _ table: LMDBTable<K, V>,
        leading: [UInt8] = [],
        from start: [UInt8]? = nil,
        reverse: Bool = false,
        _ body: (borrowing LMDBEntry<K, V>) throws -> LMDBScanStep
    ) throws {
        let bound = table.keyBytes(leading: leading)
        let first: [UInt8]?
        // Reversed without a start, the range ends just below the successor of `bound`; a key
        // equal to that successor (the scan lands on it) lies past the range.
        var pastTheRange: [UInt8]?
        if let start {
            first = table.keyBytes(leading: start)
        } else if reverse {
            first = Self.successor(of: bound)
            pastTheRange = first
        } else {
            first = bound.isEmpty ? nil : bound
        }
        let skip = table.prefix.count
        do {
            // What a commit could change of this scan lies within the keys starting with `bound`.
            let within = bound.isEmpty ? nil : LMDBRegion.KeyRange(lower: bound, upper: Self.successor(of: bound))
            try scan(table.database, from: first, reverse: reverse, within: within) { key, value in
                if let past = pastTheRange {
                    pastTheRange = nil
                    if key.elementsEqual(past) { return .next }
                }
                guard key.starts(with: bound) else { return .stop }
                return try body(LMDBEntry<K, V>(keyBytes: UnsafeRawBufferPointer(rebasing: key[skip...]), valueBytes: value))
            }
        } catch var error as LMDBCodecError where error.databaseName == nil {
            // An entry's key or value that did not decode: say whose.
            error.reason = "\(table.description): \(error.reason)"
            error.databaseName = table.database.name
            throw error
        }
    }

    /// The table's last entry in key order, decoded; `nil` when it has none.
    @inlinable public func last<K, V>(_ table: LMDBTable<K, V>) throws -> (key: K.Item, value: V.Item)? {
        var result: (key: K.Item, value: V.Item)?
        try scan(table, reverse: true) { entry in
            result = (try decoded(table, entry.keyBytes, K.decode), try decoded(table, entry.valueBytes, V.decode))
            return .stop
        }
        return result
    }

    /// The table's last key in key order, decoded, its value never read: a damaged value (an
    /// overflow page past the file's end) cannot fault the read; `nil` when it has none.
    @inlinable public func lastKey<K, V>(_ table: LMDBTable<K, V>) throws -> K.Item? {
        var result: K.Item?
        try scan(table, reverse: true) { entry in
            result = try decoded(table, entry.keyBytes, K.decode)
            return .stop
        }
        return result
    }

    @usableFromInline func decoded<K, V, T>(_ table: LMDBTable<K, V>, _ bytes: UnsafeRawBufferPointer, _ decode: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        do {
            return try decode(bytes)
        } catch {
            throw LMDBCodecError(reason: "\(table.description): \(error)", databaseName: table.database.name)
        }
    }

    /// The smallest byte string above every string that starts with `bytes`; `nil` when there
    /// is none (all 0xFF).
    @usableFromInline static func successor(of bytes: [UInt8]) -> [UInt8]? {
        var next = bytes
        while let last = next.last {
            if last < 0xFF {
                next[next.count - 1] = last + 1
                return next
            }
            next.removeLast()
        }
        return nil
    }
}
