#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// An exclusive lock on a file, held by one process at a time, released when the process ends
/// however it ends.
///
/// LMDB lets several processes write one environment; the engine must not, because each
/// process would take the other's live attempts for abandoned ones. So the writing process holds
/// this lock while the journal is open, and a second writer is refused before it reads or writes
/// anything. Readers never take it.
///
/// It is a POSIX record lock (`fcntl(F_SETLK)`), not `flock`: a child process started while the
/// lock is held (by `posix_spawn`, between its fork and its exec) shares the parent's open files
/// for a moment, and would keep a `flock` held after the parent let it go; record locks belong to
/// the process alone. Because closing any descriptor of the file drops a process's record lock,
/// each path is opened once per process: a second acquisition in the same process is refused
/// from a table kept here, without touching the file.
public final class ProcessLock: Sendable {
    /// Why the lock could not be taken.
    public enum Failure: Error, Sendable, Equatable {
        /// Another open holds it: another process (its id when the system says), or another
        /// open in this one (``ProcessLock/currentProcessID``).
        case held(byProcess: Int32?)
        /// The lock file cannot be created or opened.
        case unavailable(errno: Int32)
    }

    public let path: String
    private let descriptor: Mutex<Int32>
    /// The lock files this process holds.
    private static let held = Mutex(Set<String>())

    /// Takes the lock at `path`, creating the file when missing; never waits.
    public static func acquire(path: String) throws(Failure) -> ProcessLock {
        guard held.withLock({ $0.insert(path).inserted }) else { throw .held(byProcess: getpid()) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            _ = held.withLock { $0.remove(path) }
            throw .unavailable(errno: code)
        }
        var lock = wholeFileLock(type: F_WRLCK)
        guard fcntl(descriptor, F_SETLK, &lock) == 0 else {
            let code = errno
            var holder = wholeFileLock(type: F_WRLCK)
            let pid: Int32? = fcntl(descriptor, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK ? holder.l_pid : nil
            close(descriptor)
            _ = held.withLock { $0.remove(path) }
            if code == EACCES || code == EAGAIN { throw .held(byProcess: pid) }
            throw .unavailable(errno: code)
        }
        // Naming the holder for people who look: a full disk must not stop the lock. Written over
        // the last holder's id, then cut to length only when that was longer: cutting a file that
        // holds data to nothing first costs the file system a journal transaction (ext4: up to a
        // millisecond an open).
        let text = Array("\(getpid())\n".utf8)
        let written = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        var info = stat()
        if written == text.count, fstat(descriptor, &info) == 0, info.st_size > off_t(text.count) {
            _ = ftruncate(descriptor, off_t(text.count))
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
            // Closing the descriptor drops the record lock.
            close(descriptor)
            descriptor = -1
            _ = Self.held.withLock { $0.remove(path) }
        }
    }

    /// This process's id, to tell a second open in this process from another process.
    public static var currentProcessID: Int32 { getpid() }

    private static func wholeFileLock(type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 0
        return lock
    }
}

/// Small file-system calls the journal needs besides LMDB's.
public enum FileSystem {
    /// Whether `path` names a directory, a symbolic link to one included.
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// What `lstat` says of `path` (a last symbolic link not followed): without the owner's name
    /// the file manager's attributes look up, a read of the user and group databases. `nil`
    /// when nothing can be read there.
    public static func entry(_ path: String) -> (isRegularFile: Bool, sizeBytes: Int)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (info.st_mode & S_IFMT == S_IFREG, Int(info.st_size))
    }

    /// What a path that is not a regular file is, in words: "a FIFO", "a directory".
    /// - Parameter mode: a `stat`'s `st_mode`, widened (its width differs by platform).
    package static func fileKind(_ mode: UInt32) -> String {
        switch mode_t(truncatingIfNeeded: mode) & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "not a file"
        }
    }

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

    /// Whether the file at `path` has reached this process's file-size limit (`RLIMIT_FSIZE`):
    /// a write past it is cut short there, or fails with `EFBIG`.
    public static func isAtFileSizeLimit(_ path: String) -> Bool {
        var limit = rlimit()
        #if canImport(Glibc)
        guard getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { return false }
        #else
        guard getrlimit(RLIMIT_FSIZE, &limit) == 0 else { return false }
        #endif
        // RLIM_INFINITY, which does not import as a constant: all ones on Linux, 2^63 - 1 on Apple platforms.
        #if canImport(Glibc) || canImport(Musl)
        let unlimited = ~rlim_t(0)
        #else
        let unlimited = rlim_t(Int64.max)
        #endif
        guard limit.rlim_cur != unlimited else { return false }
        var status = stat()
        guard stat(path, &status) == 0 else { return false }
        return UInt64(status.st_size) >= UInt64(limit.rlim_cur)
    }

    /// Replaces the file at `path` whole with `bytes`: written to a new temporary file beside it,
    /// flushed, renamed over it, and the directory flushed, so a reader finds the old file or the
    /// whole new one, never a part, and nothing is left behind when a call fails.
    /// - Throws: the failing call's errno (a full disk, a file-size limit, no permission).
    public static func replaceWhole(_ path: String, with bytes: [UInt8]) throws(LMDBError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = (directory == "/" ? "" : directory) + "/." + name + "." + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            + ".partial"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw LMDBError(rawValue: errno) }
        func failed(_ code: Int32) -> LMDBError {
            close(descriptor)
            unlink(temporary)
            return LMDBError(rawValue: code)
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, bytes.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw failed(count < 0 ? errno : EIO) }
            written += count
        }
        guard fsync(descriptor) == 0 else { throw failed(errno) }
        close(descriptor)
        do {
            try rename(temporary, to: path)
        } catch {
            unlink(temporary)
            throw error
        }
        // The rename itself survives a power loss once the directory is flushed.
        try? syncDirectory(directory)
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

