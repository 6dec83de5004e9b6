import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the file system says a path is, without following a last symbolic link: enough to prove
/// a command left it exactly as it found it.
struct FileShape: Equatable, CustomStringConvertible {
    /// The type bits (`S_IFREG`, `S_IFLNK`, `S_IFIFO`, ...).
    var type: mode_t
    /// The permission bits.
    var permissions: mode_t
    var links: UInt
    var inode: UInt64
    var size: Int64
    /// The device a device node stands for.
    var device: UInt64

    /// `nil` when nothing is at `path`.
    init?(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        type = info.st_mode & S_IFMT
        permissions = info.st_mode & 0o7777
        links = UInt(info.st_nlink)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        device = UInt64(info.st_rdev)
    }

    var isRegularFile: Bool { type == S_IFREG }

    var description: String {
        "type \(String(type, radix: 8)) mode \(String(permissions, radix: 8)) links \(links) inode \(inode) size \(size)"
    }
}

/// This process's umask, read from `/proc/self/status` (setting it to read it would race the
/// tests running beside this one); 0o022 where there is no such file.
func currentUmask() -> mode_t {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
        let value = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
    else { return 0o022 }
    return value
}

/// The path with every symbolic link resolved, as the tool names a directory it resolved.
func resolvedPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// The C library's words for an errno, as the tool quotes them.
func errnoWords(_ code: Int32) -> String {
    String(cString: strerror(code))
}
