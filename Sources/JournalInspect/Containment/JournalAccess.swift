import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What this process may do with a journal's directory and files, asked of the file system by
/// path (`stat`, `access`), never by opening anything: a FIFO named `data.mdb` must not block
/// the tool before the engine's check refuses it.
enum JournalAccess {
    /// The first directory or file of the journal this user may not read, as the message to
    /// print; `nil` when nothing stands in the way (or what does is not a permission).
    static func denial(journal path: String) -> String? {
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
