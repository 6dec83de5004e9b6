import Foundation
import OutboxStorage

/// The machine's own limit for a durable append: a raw LMDB commit, through the engine's LMDB
/// layer but with nothing of the engine: one database, records appended with `MDB_APPEND`.
///
/// A durable LMDB commit writes the dirty pages, flushes them (`fdatasync`), then writes the meta
/// page through a descriptor opened `O_DSYNC`: two trips to the disk per commit.
final class LMDBFloor {
    let environment: LMDBEnvironment
    private let events: LMDBDatabase
    private let others: [LMDBDatabase]
    private let record: [UInt8]
    private let entry = [UInt8](repeating: 0x5A, count: 64)
    private var seq: UInt64 = 0
    private var random = SystemRandomNumberGenerator()

    /// - Parameters:
    ///   - durable: flush on commit (`.full`), or `MDB_NOSYNC` (`.processCrash`).
    ///   - recordBytes: the size of each record appended.
    ///   - databases: how many databases each record touches. Beyond the first (the appended
    ///     record), each gets a 64-byte value under a random 16-byte key: the page footprint of
    ///     the engine's state and indexes, without any of its work.
    init(directory: URL, durable: Bool, recordBytes: Int, databases: Int = 1) throws {
        let environment = try LMDBEnvironment.open(
            directory: directory,
            options: LMDBEnvironment.Options(syncOnCommit: durable, initialMapSizeBytes: 64 << 20, maxMapSizeBytes: 8 << 30)
        )
        self.environment = environment
        events = try environment.openDatabase("events")
        others = try (1..<max(databases, 1)).map { try environment.openDatabase("index-\($0)") }
        record = (0..<recordBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    }

    deinit {
        environment.close()
    }

    /// One write transaction appending `records` records, committed. Answers nanoseconds.
    @discardableResult
    func commit(records: Int = 1) throws -> Double {
        try Stopwatch.time {
            try environment.write { txn in
                for _ in 0..<records {
                    seq += 1
                    try txn.put(events, key: seq.bigEndianByteArray, value: record, flags: .append)
                    for database in others {
                        let key = random.next().bigEndianByteArray + random.next().bigEndianByteArray
                        try txn.put(database, key: key, value: entry)
                    }
                }
            }
        }
    }

    /// `count` commits of `records` records each; answers each one's nanoseconds.
    func commits(_ count: Int, records: Int = 1) throws -> [Double] {
        try (0..<count).map { _ in try commit(records: records) }
    }
}

/// How many write transactions an LMDB environment has committed: read after it is closed.
enum CommitCount {
    static func of(_ directory: URL) throws -> Int {
        let environment = try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(maxMapSizeBytes: 8 << 30))
        defer { environment.close() }
        return try environment.info().lastTransactionID
    }
}

/// The disk's own limit: overwrite a small block of a file in place and `fdatasync` it. Nothing
/// can be durable on this disk faster than this.
final class FsyncFloor {
    private let descriptor: Int32
    private let block: [UInt8]

    init(directory: URL, bytes: Int = 512) throws {
        let path = directory.appendingPathComponent("fsync-floor").path
        descriptor = open(path, O_RDWR | O_CREAT, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        block = [UInt8](repeating: 0xA5, count: bytes)
        // Allocate the block once, so the timed writes change no file metadata.
        _ = write(flush: true)
    }

    deinit {
        close(descriptor)
    }

    /// One overwrite at offset 0, flushed unless `flush` is false. Answers nanoseconds.
    @discardableResult
    func write(flush: Bool = true) -> Double {
        Stopwatch.time {
            let written = block.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
            precondition(written == block.count, "pwrite wrote \(written) bytes: errno \(errno)")
            if flush { precondition(fdatasync(descriptor) == 0, "fdatasync failed: errno \(errno)") }
        }
    }
}
