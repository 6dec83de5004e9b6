import Foundation
import Outbox
import OutboxAudit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What this process may do with a journal's directory and files, asked of the file system by
/// path (`stat`, `access`), never by opening anything: a FIFO named `data.mdb` must not block
/// the tool before the engine's check refuses it.
enum JournalAccess {
    /// Why the journal at `path` (as the command line gave it; `directory` is the journal's
    /// directory it names) is not opened, as the message to print: a path that leads nowhere (a
    /// symbolic link loop, a dangling link, a file on the way), something that is neither a
    /// directory nor a file, what this user may not read, or a `lock.mdb` that is not a regular
    /// file. `nil` when nothing stands in the way, or when the engine's own open says better
    /// what does (nothing at the path, a file, a data.mdb that is not a regular file).
    static func refusal(journal path: String, directory: String) -> String? {
        if let denial = denial(journal: path) { return denial }
        let namesDataFile = URL(fileURLWithPath: path).lastPathComponent == "data.mdb"
        switch PathShape.of(path) {
        case .missing:
            return nil
        case .unreachable(let why):
            return "no journal at \(directory): \(why). Give the journal's directory (the one holding data.mdb)."
        case .other(let kind) where !namesDataFile:
            return "\(directory) is \(kind), not a journal: give the journal's directory (the one holding data.mdb)."
        case .other, .regularFile:
            return namesDataFile ? lockFileRefusal(directory: directory) : nil
        case .directory:
            return lockFileRefusal(directory: directory)
        }
    }

    /// LMDB opens `lock.mdb` to read and write and follows a link in its place: a FIFO or a
    /// directory fails with a bare errno, a link has LMDB write into whatever it points to. So
    /// a `lock.mdb` that is not a regular file is refused, named, before LMDB sees it.
    private static func lockFileRefusal(directory: String) -> String? {
        let lock = URL(fileURLWithPath: directory).appendingPathComponent("lock.mdb").path
        var info = stat()
        guard lstat(lock, &info) == 0, info.st_mode & S_IFMT != S_IFREG else { return nil }
        return "cannot open \(directory): its lock.mdb is \(describeFileKind(mode: UInt32(info.st_mode))), not a regular file. LMDB keeps the "
            + "table of a journal's readers in lock.mdb and writes to it, so journal-inspect does not open the journal through "
            + "this one. Move \(lock) aside (LMDB creates a new one), or work on a copy of the journal's directory without it."
    }

    /// The first directory or file of the journal this user may not read, as the message to
    /// print; `nil` when nothing stands in the way (or what does is not a permission).
    private static func denial(journal path: String) -> String? {
        guard let denied = firstDenied(path) else { return nil }
        return "permission denied for \(denied.path): \(denied.why) (uid \(getuid())). Ask for read access to the journal's "
            + "directory and its data.mdb, or work on a copy this user can read."
    }

    private static func firstDenied(_ path: String) -> (path: String, why: String)? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return errno == EACCES ? (unsearchableAncestor(of: path), "this user may not enter this directory") : nil
        }
        let url = URL(fileURLWithPath: path)
        let directory: String
        if info.st_mode & S_IFMT == S_IFDIR {
            directory = path
        } else if url.lastPathComponent == "data.mdb" {
            directory = url.deletingLastPathComponent().path
        } else {
            return nil
        }
        if access(directory, X_OK) != 0, errno == EACCES {
            return (directory, "this user may not enter this directory")
        }
        let data = URL(fileURLWithPath: directory).appendingPathComponent("data.mdb").path
        if access(data, F_OK) == 0, access(data, R_OK) != 0, errno == EACCES {
            return (data, "this user may not read it")
        }
        return nil
    }

    /// The deepest directory on the way to `path` that can be reached: the one this user may
    /// not enter.
    private static func unsearchableAncestor(of path: String) -> String {
        let target = URL(fileURLWithPath: path).standardizedFileURL
        var reached = URL(fileURLWithPath: "/")
        for component in target.pathComponents.dropFirst() {
            let next = reached.appendingPathComponent(component)
            var info = stat()
            guard stat(next.path, &info) == 0 else { return reached.path }
            reached = next
        }
        return reached.path
    }

    /// Why a reader went without LMDB's lock file, in a few words.
    static func lockFileNote(directory: String) -> String {
        let lock = URL(fileURLWithPath: directory).appendingPathComponent("lock.mdb").path
        if access(directory, W_OK) != 0, errno == EROFS { return "it is on a read-only file system" }
        if access(lock, F_OK) == 0 { return "this user may not write its lock.mdb" }
        return "this user may not create lock.mdb in its directory"
    }
}
