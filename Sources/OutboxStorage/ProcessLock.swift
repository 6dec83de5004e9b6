#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// An exclusive lock on a file, held by one process at a time (`flock`), released when the
/// process ends however it ends.
///
/// LMDB lets several processes write one environment; the engine must not, because each
/// process would take the other's live attempts for abandoned ones. So the writing process holds
/// this lock while the journal is open, and a second writer is refused before it reads or writes
/// anything. Readers never take it.
///
/// The holder writes its process id into the file, so a refusal can name the process.
public final class ProcessLock: Sendable {
    /// Why the lock could not be taken.
    public enum Failure: Error, Sendable, Equatable {
        /// Another open holds it: another process, or (`pid` is this process's) another open
        /// in this one.
        case held(byProcess: Int32?)
        /// The lock file cannot be created or opened.
        case unavailable(errno: Int32)
    }

    public let path: String
    private let descriptor: Mutex<Int32>

    /// Takes the lock at `path`, creating the file when missing; never waits.
    public static func acquire(path: String) throws(Failure) -> ProcessLock {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .unavailable(errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            let holder = readProcessID(descriptor)
            close(descriptor)
            if code == EWOULDBLOCK { throw .held(byProcess: holder) }
            throw .unavailable(errno: code)
        }
        // Naming the holder is a courtesy to whoever is refused: a full disk must not stop it.
        let text = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 {
            _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }
        return ProcessLock(path: path, descriptor: descriptor)
    }

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = Mutex(descriptor)
    }

    deinit {
        release()
    }

    /// Lets the lock go. Releasing twice does nothing.
    public func release() {
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return }
            // Closing the last descriptor of the open file releases the flock.
            close(descriptor)
            descriptor = -1
        }
    }

    /// This process's id, to tell a second open in this process from another process.
    public static var currentProcessID: Int32 { getpid() }

    private static func readProcessID(_ descriptor: Int32) -> Int32? {
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: bytes[..<count], as: UTF8.self).trimmingNewline)
    }
}

/// Small file-system calls the journal needs besides LMDB's.
public enum FileSystem {
    /// Flushes a directory's entries, so a file renamed into it survives a power loss.
    public static func syncDirectory(_ path: String) throws(LMDBError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw LMDBError(rawValue: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw LMDBError(rawValue: errno) }
    }

    /// The bytes an unprivileged process may still write on the file system holding `path`;
    /// `nil` when it cannot be asked.
    public static func availableBytes(at path: String) -> Int? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let (bytes, overflow) = Int(info.f_bavail).multipliedReportingOverflow(by: Int(info.f_frsize))
        return overflow ? Int.max : bytes
    }

    /// Renames `source` to `destination` (atomically, on one file system).
    public static func rename(_ source: String, to destination: String) throws(LMDBError) {
        #if canImport(Glibc)
        let result = Glibc.rename(source, destination)
        #elseif canImport(Musl)
        let result = Musl.rename(source, destination)
        #else
        let result = Darwin.rename(source, destination)
        #endif
        guard result == 0 else { throw LMDBError(rawValue: errno) }
    }
}

extension String {
    fileprivate var trimmingNewline: String {
        var text = self
        while text.last == "\n" || text.last == "\0" { text.removeLast() }
        return text
    }
}
