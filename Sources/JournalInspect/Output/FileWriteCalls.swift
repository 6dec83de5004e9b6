#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The calls that put a written file's bytes on disk, apart so that a test can make each fail
/// as a full or failing disk would (`ENOSPC`, `EIO`, `EDQUOT`), without one and without root.
/// Each answers as the C call does: -1 with `errno` set on failure.
struct FileWriteCalls: Sendable {
    var write: @Sendable (_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int
    var fsync: @Sendable (_ descriptor: Int32) -> Int32
    var close: @Sendable (_ descriptor: Int32) -> Int32

    /// The system's own.
    static let system = FileWriteCalls(
        write: { descriptor, bytes, count in
            #if canImport(Glibc)
            Glibc.write(descriptor, bytes, count)
            #else
            Darwin.write(descriptor, bytes, count)
            #endif
        },
        fsync: { descriptor in
            #if canImport(Glibc)
            Glibc.fsync(descriptor)
            #else
            Darwin.fsync(descriptor)
            #endif
        },
        close: { descriptor in
            #if canImport(Glibc)
            Glibc.close(descriptor)
            #else
            Darwin.close(descriptor)
            #endif
        }
    )
}
