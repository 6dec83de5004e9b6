import Foundation
import Outbox
import OutboxAudit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file `--key-file` names: 32 raw bytes, or 64 hexadecimal digits (white space ignored).
///
/// Only a regular file is read, and only as much of it as a key could be: a directory, a FIFO
/// (which would block) or a device (`/dev/zero` never ends) is refused by what it is.
enum KeyFile {
    /// Longer than any key written out with white space around it: the file is refused by its size.
    static let maximumBytes = 4096

    /// - Throws: a ``UsageError`` naming the file and what is wrong with it.
    static func read(_ path: String) throws -> SealingKey {
        let size = try regularFileSize(path)
        guard size <= maximumBytes else { throw wrongSize(path, size) }
        // O_NONBLOCK: a FIFO put in its place after the check must not block the open.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else { throw refusal(path, errno == EACCES ? "this user may not read it" : "opening it failed: \(SystemErrno(errno))") }
        defer { close(descriptor) }
        var opened = stat()
        guard fstat(descriptor, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG else {
            throw refusal(path, "it changed while it was opened: it is no longer a regular file")
        }
        var bytes = [UInt8](repeating: 0, count: maximumBytes + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw refusal(path, "reading it failed: \(SystemErrno(errno))") }
            if got == 0 { break }
            count += got
        }
        guard count <= maximumBytes else { throw wrongSize(path, Int(opened.st_size)) }
        return try key(Array(bytes.prefix(count)), path: path)
    }

    /// The size of the regular file at `path`.
    /// - Throws: a ``UsageError`` saying what the path is when it is not a regular file this user may reach.
    private static func regularFileSize(_ path: String) throws -> Int {
        switch PathShape.of(path) {
        case .regularFile(let info): return Int(info.st_size)
        case .directory: throw refusal(path, "it is a directory; give the file that holds the journal's key")
        case .other(let kind): throw refusal(path, "it is \(kind), not a regular file; give the file that holds the journal's key")
        case .missing: throw refusal(path, "it does not exist")
        case .unreachable(let why): throw refusal(path, why)
        }
    }

    /// The key the file's bytes hold: 32 raw bytes, or 64 hex digits.
    private static func key(_ data: [UInt8], path: String) throws -> SealingKey {
        let text = String(decoding: data, as: UTF8.self).filter { !$0.isWhitespace }
        var bytes = data
        if text.count == 64, text.allSatisfy(\.isHexDigit) {
            let digits = Array(text)
            bytes = stride(from: 0, to: 64, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
        }
        do {
            return try SealingKey(bytes: bytes)
        } catch {
            throw wrongSize(path, data.count)
        }
    }

    private static func refusal(_ path: String, _ reason: String) -> UsageError {
        UsageError("cannot read the key file \(path): \(reason)")
    }

    private static func wrongSize(_ path: String, _ size: Int) -> UsageError {
        UsageError("the key file \(path) holds \(size) bytes: give 32 bytes, or 64 hex digits")
    }
}

/// `read(2)`, by a name no type's own `read` hides.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(descriptor, buffer, count)
    #else
    Darwin.read(descriptor, buffer, count)
    #endif
}
