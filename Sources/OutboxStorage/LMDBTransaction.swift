import CLMDB
public import Foundation

/// A transaction, lent to the closure of ``LMDBEnvironment/read(_:)`` or
/// ``LMDBEnvironment/write(_:)`` and valid only inside it.
///
/// The type cannot be copied, so it cannot escape its closure: bytes read from the map are
/// copied out (``get(_:key:)``) or used inside a closure (``withValue(_:key:_:)``,
/// ``scan(_:from:reverse:_:)``), never kept as pointers.
public struct LMDBTransaction: ~Copyable {
    let pointer: OpaquePointer
    public let isReadOnly: Bool
    let faultHook: LMDBFaultHook?
    /// Collects where the transaction reads (a read transaction) or writes (a write
    /// transaction), when someone asked to know (``LMDBRegionRecorder``).
    var recorder: LMDBRegionRecorder? = nil

    init(pointer: OpaquePointer, isReadOnly: Bool, faultHook: LMDBFaultHook?, recorder: LMDBRegionRecorder? = nil) {
        self.pointer = pointer
        self.isReadOnly = isReadOnly
        self.faultHook = faultHook
        self.recorder = recorder
    }

    private func recordRead(_ database: LMDBDatabase, key: some ContiguousBytes) {
        guard let recorder, recorder.mode == .reads else { return }
        let bytes = key.withUnsafeBytes { Array($0) }
        recorder.record { $0.insert(bytes, in: database.handle) }
    }

    private func recordWrite(_ database: LMDBDatabase, key: UnsafeRawBufferPointer) {
        guard let recorder, recorder.mode == .writes else { return }
        let bytes = Array(key)
        recorder.record { $0.insert(bytes, in: database.handle) }
    }

    // MARK: Reading

    /// The value stored under `key`, copied out of the map; `nil` when there is none.
    public func get(_ database: LMDBDatabase, key: some ContiguousBytes) throws -> [UInt8]? {
        try withValue(database, key: key) { bytes in bytes.map { Array($0) } }
    }

    /// Lends the value stored under `key` (or `nil`) to `body` without copying it.
    public func withValue<R>(
        _ database: LMDBDatabase,
        key: some ContiguousBytes,
        _ body: (UnsafeRawBufferPointer?) throws -> R
    ) throws -> R {
        recordRead(database, key: key)
        var value = MDB_val()
        let found = try key.withUnsafeBytes { (keyBytes) throws -> Bool in
            var keyValue = MDB_val(keyBytes)
            return try LMDB.found(mdb_get(pointer, database.handle, &keyValue, &value), "mdb_get")
        }
        return try body(found ? value.bytes : nil)
    }

    /// Whether `key` has a value.
    public func contains(_ database: LMDBDatabase, key: some ContiguousBytes) throws -> Bool {
        try withValue(database, key: key) { $0 != nil }
    }

    /// The number of entries in `database`.
    public func count(_ database: LMDBDatabase) throws -> Int {
        if let recorder, recorder.mode == .reads { recorder.record { $0.insertWhole(database.handle) } }
        var stat = MDB_stat()
        try LMDB.check(mdb_stat(pointer, database.handle, &stat), "mdb_stat")
        return stat.ms_entries
    }

    /// Visits entries in key order, starting at the first key `>= start` (or `<= start` when
    /// reversed); from the first (or last) key when `start` is `nil`. `body` answers whether to go
    /// on. The buffers are valid only during the call.
    ///
    /// - Parameter within: the keys the caller reads at most (a table's prefix): a region
    ///   recorded for the scan reaches no further.
    public func scan(
        _ database: LMDBDatabase,
        from start: [UInt8]? = nil,
        reverse: Bool = false,
        within: LMDBRegion.KeyRange? = nil,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> LMDBScanStep
    ) throws {
        var cursor: OpaquePointer?
        try LMDB.check(mdb_cursor_open(pointer, database.handle, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        let step = reverse ? MDB_PREV : MDB_NEXT
        var positioned: Bool
        if let start {
            positioned = try start.withUnsafeBytes { (startBytes) throws -> Bool in
                key = MDB_val(startBytes)
                return try LMDB.found(mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE), "mdb_cursor_get")
            }
            if reverse {
                if !positioned {
                    // Every key is below `start`: begin at the last one.
                    positioned = try LMDB.found(mdb_cursor_get(cursor, &key, &value, MDB_LAST), "mdb_cursor_get")
                } else if !key.bytes.elementsEqual(start) {
                    // Landed on the first key above `start`: step back below it.
                    positioned = try LMDB.found(mdb_cursor_get(cursor, &key, &value, MDB_PREV), "mdb_cursor_get")
                }
            }
        } else {
            let first = reverse ? MDB_LAST : MDB_FIRST
            positioned = try LMDB.found(mdb_cursor_get(cursor, &key, &value, first), "mdb_cursor_get")
        }
        // The span the scan crossed, from where it began to where it stopped (open past the
        // last key when it ran out): a key written anywhere in it could change what it saw.
        var stoppedAt: [UInt8]?
        defer {
            if let recorder, recorder.mode == .reads {
                var span = reverse ? LMDBRegion.KeyRange(lower: stoppedAt, upper: start) : LMDBRegion.KeyRange(lower: start, upper: stoppedAt)
                if let within { span = span.clipped(to: within) }
                recorder.record { $0.insert(span, in: database.handle) }
            }
        }
        while positioned {
            if case .stop = try body(key.bytes, value.bytes) {
                if recorder != nil { stoppedAt = Array(key.bytes) }
                return
            }
            positioned = try LMDB.found(mdb_cursor_get(cursor, &key, &value, step), "mdb_cursor_get")
        }
    }

    /// The last entry in key order, copied out; `nil` when the database is empty.
    public func last(_ database: LMDBDatabase) throws -> (key: [UInt8], value: [UInt8])? {
        var result: (key: [UInt8], value: [UInt8])?
        try scan(database, reverse: true) { key, value in
            result = (Array(key), Array(value))
            return .stop
        }
        return result
    }

    /// The pages on LMDB's free list (its database 0): each record there holds a count of page
    /// numbers, then the numbers.
    func freePageCount() throws -> Int {
        var cursor: OpaquePointer?
        try LMDB.check(mdb_cursor_open(pointer, 0, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        var pages = 0
        var positioned = try LMDB.found(mdb_cursor_get(cursor, &key, &value, MDB_FIRST), "mdb_cursor_get")
        while positioned {
            if value.mv_size >= MemoryLayout<Int>.size {
                pages += value.bytes.loadUnaligned(as: Int.self)
            }
            positioned = try LMDB.found(mdb_cursor_get(cursor, &key, &value, MDB_NEXT), "mdb_cursor_get")
        }
        return pages
    }

    // MARK: Writing

    /// Stores `value` under `key`.
    /// - Throws: ``LMDBError/mapFull`` when the map has no room (the environment's
    ///   ``LMDBEnvironment/write(_:)`` grows it and runs the transaction again),
    ///   ``LMDBError/keyExists`` for `.append` out of order or `.noOverwrite` on a present key.
    public func put(
        _ database: LMDBDatabase,
        key: some ContiguousBytes,
        value: some ContiguousBytes,
        flags: LMDBPutFlags = []
    ) throws {
        precondition(!isReadOnly, "put in a read-only transaction")
        try LMDB.injected(faultHook, .put)
        try key.withUnsafeBytes { (keyBytes) throws in
            recordWrite(database, key: keyBytes)
            try value.withUnsafeBytes { (valueBytes) throws in
                var keyValue = MDB_val(keyBytes)
                var dataValue = MDB_val(valueBytes)
                try LMDB.check(mdb_put(pointer, database.handle, &keyValue, &dataValue, flags.rawValue), "mdb_put")
            }
        }
    }

    /// Stores `value` under `key`, both lent as bytes: the writer's path, without a protocol's
    /// witness between it and LMDB.
    public func put(_ database: LMDBDatabase, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: LMDBPutFlags = []) throws {
        precondition(!isReadOnly, "put in a read-only transaction")
        try LMDB.injected(faultHook, .put)
        recordWrite(database, key: key)
        var keyValue = MDB_val(key)
        var dataValue = MDB_val(value)
        try LMDB.check(mdb_put(pointer, database.handle, &keyValue, &dataValue, flags.rawValue), "mdb_put")
    }

    /// Removes `key`, lent as bytes; answers whether it was there.
    @discardableResult
    public func delete(_ database: LMDBDatabase, key: UnsafeRawBufferPointer) throws -> Bool {
        precondition(!isReadOnly, "delete in a read-only transaction")
        try LMDB.injected(faultHook, .delete)
        recordWrite(database, key: key)
        var keyValue = MDB_val(key)
        return try LMDB.found(mdb_del(pointer, database.handle, &keyValue, nil), "mdb_del")
    }

    /// Lends the value stored under `key` (lent as bytes), or `nil`, to `body` without copying it.
    public func withValue<R>(_ database: LMDBDatabase, key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        if let recorder, recorder.mode == .reads {
            let bytes = Array(key)
            recorder.record { $0.insert(bytes, in: database.handle) }
        }
        var keyValue = MDB_val(key)
        var value = MDB_val()
        let found = try LMDB.found(mdb_get(pointer, database.handle, &keyValue, &value), "mdb_get")
        return try body(found ? value.bytes : nil)
    }

    /// Stores a value of `count` bytes under `key`, written by `fill` straight into the page LMDB
    /// reserved for it (`MDB_RESERVE`): no buffer of the caller's is copied. `fill` must write
    /// every byte, and may make no other call on the transaction.
    public func put(
        _ database: LMDBDatabase,
        key: UnsafeRawBufferPointer,
        reservingValueOf count: Int,
        flags: LMDBPutFlags = [],
        _ fill: (UnsafeMutableRawBufferPointer) throws -> Void
    ) throws {
        precondition(!isReadOnly, "put in a read-only transaction")
        try LMDB.injected(faultHook, .put)
        recordWrite(database, key: key)
        var keyValue = MDB_val(key)
        var dataValue = MDB_val(mv_size: count, mv_data: nil)
        try LMDB.check(mdb_put(pointer, database.handle, &keyValue, &dataValue, flags.rawValue | UInt32(MDB_RESERVE)), "mdb_put")
        try fill(UnsafeMutableRawBufferPointer(start: dataValue.mv_data, count: count))
    }

    /// Removes `key`; answers whether it was there.
    @discardableResult
    public func delete(_ database: LMDBDatabase, key: some ContiguousBytes) throws -> Bool {
        precondition(!isReadOnly, "delete in a read-only transaction")
        try LMDB.injected(faultHook, .delete)
        return try key.withUnsafeBytes { (keyBytes) throws -> Bool in
            recordWrite(database, key: keyBytes)
            var keyValue = MDB_val(keyBytes)
            return try LMDB.found(mdb_del(pointer, database.handle, &keyValue, nil), "mdb_del")
        }
    }

    /// Removes every entry of `database`, keeping the database itself.
    public func removeAll(_ database: LMDBDatabase) throws {
        precondition(!isReadOnly, "removeAll in a read-only transaction")
        if let recorder, recorder.mode == .writes { recorder.record { $0.insertWhole(database.handle) } }
        try LMDB.check(mdb_drop(pointer, database.handle, 0), "mdb_drop")
    }
}

/// An empty buffer still needs an address LMDB may read zero bytes from.
nonisolated(unsafe) private let emptyBytes = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

extension MDB_val {
    init(_ bytes: UnsafeRawBufferPointer) {
        self.init(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress) ?? emptyBytes)
    }

    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: mv_data, count: mv_size)
    }
}
