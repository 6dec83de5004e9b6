import Foundation
import Outbox
import OutboxAudit
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file a command writes (`report --html`), which must never replace what it must not.
///
/// - Never in the journal's directory, however the path is spelled (the parent's links resolved):
///   `report --html J/data.mdb` would have replaced the journal.
/// - A new path is created (`O_EXCL`, mode 0644 less the umask) and written.
/// - An existing path is refused unless `force`; then it is replaced whole: a temporary file
///   beside it, with its mode, written, flushed (`fsync`), closed and renamed over it.
/// - Never a symbolic link (neither written through nor replaced), a FIFO (never opened: it
///   would block), a device, a directory, or a file with more than one hard link (replacing it
///   would split them), even with `force`.
/// - A call that fails (create, write, flush, close, rename) is exit 73 naming the call, the
///   errno and the path; nothing half-written is left, and a file being replaced is as it was.
struct OutputFile {
    /// The path as the command line gave it.
    let path: String
    /// May an existing regular file be replaced.
    let force: Bool
    /// The journal's directory: nothing is ever written there.
    let journalDirectory: String
    /// What the file is, for the messages: "the report".
    let label: String
    var calls = FileWriteCalls.system

    /// Why `path` must not be written, as the failure the command ends with; `nil` when it may
    /// be. Asks the file system by name only.
    func refusal() -> RunFailure? {
        if path.hasSuffix("/") { return failure("it ends with /, so it names a directory; give the path of a file") }
        let parent = Self.parent(of: path)
        var parentInfo = stat()
        guard let resolvedParent = Self.resolved(parent), stat(resolvedParent, &parentInfo) == 0 else {
            return failure("its directory, \(parent), cannot be reached: \(SystemErrno(errno))")
        }
        guard parentInfo.st_mode & S_IFMT == S_IFDIR else {
            return failure("its directory, \(parent), cannot be reached: \(SystemErrno(ENOTDIR))")
        }
        if let journal = Self.resolved(journalDirectory), Self.sameDirectory(resolvedParent, journal) {
            return failure("its directory, \(journal), is the journal's: journal-inspect writes nothing beside data.mdb; give a "
                + "path outside it")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            return errno == ENOENT ? nil : failure("it cannot be examined: \(SystemErrno(errno))")
        }
        switch info.st_mode & S_IFMT {
        case S_IFLNK:
            return failure("it is a symbolic link; journal-inspect neither writes through a link nor replaces one, even with "
                + "--force: give the path of a regular file")
        case S_IFREG where info.st_nlink > 1:
            return failure("it has \(info.st_nlink) hard links; replacing it would split them, so journal-inspect does not, even "
                + "with --force: give another path")
        case S_IFREG:
            return force ? nil : failure("a file is there already; give --force to replace it")
        default:
            return failure("it is \(describeFileKind(mode: UInt32(info.st_mode))), not a regular file; journal-inspect replaces only a "
                + "regular file, even with --force")
        }
    }

    /// Writes `bytes` to the path, checked again first.
    /// - Throws: the ``RunFailure`` (exit 73) that says what was refused or which call failed.
    func write(_ bytes: Data) throws(RunFailure) {
        if let refusal = refusal() { throw refusal }
        FileSizeSignal.ignore()
        defer { FileSizeSignal.restore() }
        var existing = stat()
        if lstat(path, &existing) == 0 {
            try replace(existing, with: bytes)
        } else {
            try create(bytes)
        }
        Self.flushDirectory(Self.parent(of: path))
    }

    /// A new file at the path; removed again if any call fails.
    private func create(_ bytes: Data) throws(RunFailure) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let code = errno
            // Something appeared since the check: judged as anything found there.
            if code == EEXIST, let refusal = refusal() { throw refusal }
            throw failure("creating it failed: \(SystemErrno(code))")
        }
        if let (call, code) = put(bytes, into: descriptor) {
            unlink(path)
            throw failure("\(call) failed: \(SystemErrno(code)); nothing was left at \(path)")
        }
    }

    /// The existing regular file replaced whole, through a temporary file beside it.
    private func replace(_ existing: stat, with bytes: Data) throws(RunFailure) {
        let asWas = "; the file there is as it was"
        let temporary = Self.parent(of: path) + "/." + URL(fileURLWithPath: path).lastPathComponent
            + ".journal-inspect-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure("creating a temporary file beside it failed: \(SystemErrno(errno))" + asWas) }
        // The owner too, where this user may give it (root may); the mode in any case.
        if existing.st_uid != geteuid() || existing.st_gid != getegid() { _ = fchown(descriptor, existing.st_uid, existing.st_gid) }
        guard fchmod(descriptor, existing.st_mode & 0o7777) == 0 else {
            let code = errno
            _ = calls.close(descriptor)
            unlink(temporary)
            throw failure("setting the temporary file's mode failed: \(SystemErrno(code))" + asWas)
        }
        if let (call, code) = put(bytes, into: descriptor) {
            unlink(temporary)
            throw failure("\(call) failed: \(SystemErrno(code))" + asWas)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw failure("renaming the temporary file over it failed: \(SystemErrno(code))" + asWas)
        }
    }

    /// Writes, flushes and closes; the call that failed and its errno, `nil` when none did. The
    /// descriptor is closed whatever happens.
    private func put(_ bytes: Data, into descriptor: Int32) -> (String, Int32)? {
        let failed: (String, Int32)? = bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count, let base = buffer.baseAddress {
                let written = calls.write(descriptor, base + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return ("writing it", written < 0 ? errno : EIO) }
                offset += written
            }
            return calls.fsync(descriptor) == 0 ? nil : ("flushing it to disk (fsync)", errno)
        }
        if let failed {
            _ = calls.close(descriptor)
            return failed
        }
        return calls.close(descriptor) == 0 ? nil : ("closing it", errno)
    }

    private func failure(_ reason: String) -> RunFailure {
        RunFailure(code: .cannotCreate, message: "cannot write \(label) to \(path): \(reason)")
    }

    /// The directory a path names its file in: `.` for a bare name.
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let parent = String(path[..<slash])
        return parent.isEmpty ? "/" : parent
    }

    /// The path with every symbolic link resolved; `nil`, with `errno` set, when it cannot be.
    static func resolved(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether two resolved paths are one directory: by name, or by device and inode (a bind
    /// mount shows one directory at two paths).
    private static func sameDirectory(_ first: String, _ second: String) -> Bool {
        if first == second { return true }
        var one = stat()
        var other = stat()
        guard stat(first, &one) == 0, stat(second, &other) == 0 else { return false }
        return one.st_dev == other.st_dev && one.st_ino == other.st_ino
    }

    /// Flushes the directory's entry for the new name, where the file system allows it; a
    /// directory that cannot be flushed leaves the file written, only its name less durable.
    private static func flushDirectory(_ directory: String) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        _ = close(descriptor)
    }
}

/// Past a file-size limit (RLIMIT_FSIZE, `ulimit -f`) the kernel sends SIGXFSZ, which would end
/// the process; ignored while a file is written, the write fails with EFBIG instead and is
/// reported as any failed write. Writes in several threads at once (the library in a test
/// process) share one ignoring: the first in saves the disposition, the last out restores it.
enum FileSizeSignal {
    private struct State {
        var writers = 0
        var saved: sigaction?
    }

    private static let state = Mutex(State())

    static func ignore() {
        state.withLock { state in
            state.writers += 1
            guard state.writers == 1 else { return }
            var ignoring = sigaction()
            var previous = sigaction()
            sigemptyset(&ignoring.sa_mask)
            Forwarding.setHandler(&ignoring, SIG_IGN)
            if sigaction(SIGXFSZ, &ignoring, &previous) == 0 { state.saved = previous }
        }
    }

    static func restore() {
        state.withLock { state in
            state.writers -= 1
            guard state.writers == 0, var saved = state.saved else { return }
            sigaction(SIGXFSZ, &saved, nil)
            state.saved = nil
        }
    }
}
