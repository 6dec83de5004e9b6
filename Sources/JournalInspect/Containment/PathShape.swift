import Foundation
import Outbox
import OutboxAudit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a path given on the command line turns out to be, asked of the file system by name
/// (`stat`, `lstat`), never by opening it: a FIFO or a device must not block or be read.
enum PathShape {
    /// What `stat` says of the path, following links.
    enum Found {
        case regularFile(stat)
        case directory
        /// A FIFO, a device, a socket: in words.
        case other(String)
        /// Nothing is there, not even a link.
        case missing
        /// `stat` failed otherwise: why, in words ("it is a symbolic link loop (ELOOP)", "it is a
        /// symbolic link to /a/b, which does not exist").
        case unreachable(String)
    }

    static func of(_ path: String) -> Found {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT, danglingDestination(path) == nil { return .missing }
            return .unreachable(whyUnreachable(path, errno: code))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regularFile(info)
        case S_IFDIR: return .directory
        default: return .other(describeFileKind(mode: UInt32(info.st_mode)))
        }
    }

    /// Why `stat` of `path` failed with `code`, in words that name what to fix.
    private static func whyUnreachable(_ path: String, errno code: Int32) -> String {
        switch code {
        case ENOENT:
            if let destination = danglingDestination(path) { return "it is a symbolic link to \(destination), which does not exist" }
            return "it does not exist"
        case ELOOP: return "it is a symbolic link loop (ELOOP)"
        case ENOTDIR: return "a part of its path is not a directory (ENOTDIR)"
        case EACCES: return "this user may not reach it (EACCES)"
        default: return "it cannot be examined: \(SystemErrno(code))"
        }
    }

    /// Where `path` points when it is a symbolic link whose destination is missing.
    private static func danglingDestination(_ path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return nil }
        return try? FileManager.default.destinationOfSymbolicLink(atPath: path)
    }
}
