import Foundation
import OutboxCore
import OutboxCrypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The attachments' bytes on the device: `attachments/<sha256 hex>` in the journal's directory,
/// content-addressed, each written whole to a temporary name, fsynced, renamed and its directory
/// fsynced before the commit whose manifest names it. A kill at any step leaves no file under a
/// hash (the temporary one is collected at the next open) or the whole file; the `enqueued`
/// commit comes after, so there is never a manifest without its file.
///
/// Files are read a chunk at a time: memory never grows with a file.
struct AttachmentFiles: Sendable {
    /// The directory, `attachments` beside the journal.
    let directory: URL
    /// The size of each read and write when copying and hashing.
    static let chunkBytes = 1 << 20
    /// Names a write in progress starts with: never a hash, so collected at open.
    static let incomingPrefix = ".incoming-"
    /// Told each durable step of keeping a file as it is passed (`file-written`, `file-synced`,
    /// `file-renamed`, `file-directory-synced`): what the crash tests aim their kills at.
    let step: @Sendable (String) -> Void

    init(journal: URL, step: @escaping @Sendable (String) -> Void = { _ in }) {
        directory = journal.appendingPathComponent("attachments", isDirectory: true)
        self.step = step
    }

    /// Where the file of `sha256` lives.
    func url(of sha256: SHA256Digest) -> URL {
        directory.appendingPathComponent(sha256.hex)
    }

    /// Keeps `attachment`'s bytes durably, hashing them as they are written, and answers its
    /// manifest. The same bytes kept before are the same file.
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` for a file that cannot be read,
    ///   ``OutboxError/storageFull(limitBytes:errno:)`` when the disk is full (nothing is kept).
    func keep(_ attachment: Attachment, field: String) throws -> (manifest: AttachmentManifest, created: Bool) {
        try ensureDirectory()
        let temporary = directory.appendingPathComponent(Self.incomingPrefix + UUID().uuidString)
        let output = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard output >= 0 else { throw Self.writeFailure(errno, temporary) }
        var closed = false
        defer {
            if !closed { _ = close(output) }
            unlink(temporary.path)
        }
        var hasher = SHA256Hasher()
        var size: Int64 = 0
        func append(_ bytes: UnsafeRawBufferPointer) throws {
            hasher.update(bytes)
            size += Int64(bytes.count)
            var offset = 0
            while offset < bytes.count {
                let written = write(output, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw Self.writeFailure(errno, temporary)
                }
                offset += written
            }
        }
        switch attachment.source {
        case .bytes(let data):
            try data.withUnsafeBytes { try append($0) }
        case .file(let url, _):
            let input = open(url.path, O_RDONLY)
            guard input >= 0 else {
                throw OutboxError.invalidRequest(field: field, problem: "\(url.path) cannot be read (\(String(cString: strerror(errno)))): attach a file that exists")
            }
            defer { _ = close(input) }
            var buffer = [UInt8](repeating: 0, count: Self.chunkBytes)
            while true {
                let count = buffer.withUnsafeMutableBytes { systemRead(input, $0.baseAddress!, $0.count) }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw OutboxError.invalidRequest(field: field, problem: "\(url.path) could not be read (\(String(cString: strerror(errno))))")
                }
                if count == 0 { break }
                try buffer.withUnsafeBytes { try append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            }
        }
        step("file-written")
        guard fsync(output) == 0 else { throw Self.writeFailure(errno, temporary) }
        closed = true
        guard close(output) == 0 else { throw Self.writeFailure(errno, temporary) }
        step("file-synced")
        let digest = hasher.finalize()
        let target = url(of: digest)
        let existed = FileManager.default.fileExists(atPath: target.path)
        if !existed {
            guard rename(temporary.path, target.path) == 0 else { throw Self.writeFailure(errno, target) }
            step("file-renamed")
            try syncDirectory()
            step("file-directory-synced")
        }
        let manifest = AttachmentManifest(id: attachment.id, name: attachment.name, contentType: attachment.contentType, size: size, sha256: digest)
        return (manifest, !existed)
    }

    /// Removes the originals of the attachments given as files to be moved: called once the
    /// write that keeps their copies is committed, so a failed or killed save never loses one.
    func removeMovedOriginals(_ attachments: [Attachment]) {
        for attachment in attachments {
            if case .file(let url, moving: true) = attachment.source { unlink(url.path) }
        }
    }

    /// Removes the file of `sha256` (one an enqueue kept and then did not commit, or one no
    /// write needs any longer).
    func remove(_ sha256: SHA256Digest) {
        unlink(url(of: sha256).path)
    }

    /// The files kept, by hash, with their sizes; temporary files left by a kill are listed
    /// apart.
    func listing() -> (files: [SHA256Digest: Int64], incoming: [URL]) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return ([:], []) }
        var files: [SHA256Digest: Int64] = [:]
        var incoming: [URL] = []
        for name in names {
            let url = directory.appendingPathComponent(name)
            if let digest = SHA256Digest(hex: name) {
                let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
                files[digest] = size
            } else if name.hasPrefix(Self.incomingPrefix) {
                incoming.append(url)
            }
        }
        return (files, incoming)
    }

    /// The bytes the kept files take.
    func keptBytes() -> Int64 {
        listing().files.values.reduce(0, +)
    }

    /// Reads `length` bytes at `offset` of the file of `sha256`: one segment.
    /// - Throws: ``AttachmentFileProblem`` when the file is missing or shorter than that.
    func read(_ sha256: SHA256Digest, offset: Int64, length: Int) throws(AttachmentFileProblem) -> Data {
        let input = open(url(of: sha256).path, O_RDONLY)
        guard input >= 0 else { throw .missing }
        defer { _ = close(input) }
        var data = Data(count: length)
        var filled = 0
        while filled < length {
            let count = data.withUnsafeMutableBytes { pread(input, $0.baseAddress! + filled, length - filled, off_t(offset) + off_t(filled)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw .damaged("the file is shorter than its manifest") }
            filled += count
        }
        return data
    }

    /// Whether the file of `manifest` is there, of its size, and hashes to its SHA-256.
    func check(_ manifest: AttachmentManifest) -> AttachmentFileProblem? {
        let input = open(url(of: manifest.sha256).path, O_RDONLY)
        guard input >= 0 else { return .missing }
        defer { _ = close(input) }
        var hasher = SHA256Hasher()
        var size: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: Self.chunkBytes)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(input, $0.baseAddress!, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return .damaged("it cannot be read") }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            size += Int64(count)
        }
        guard size == manifest.size else { return .damaged("it holds \(size) bytes, its manifest \(manifest.size)") }
        guard hasher.finalize() == manifest.sha256 else { return .damaged("its bytes no longer hash to its manifest's SHA-256") }
        return nil
    }

    private func ensureDirectory() throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw OutboxError.invalidRequest(field: "attachments", problem: "the attachments directory \(directory.path) cannot be made: \(error.localizedDescription)")
        }
    }

    /// Makes a rename in the directory durable.
    private func syncDirectory() throws {
        let descriptor = open(directory.path, O_RDONLY)
        guard descriptor >= 0 else { throw Self.writeFailure(errno, directory) }
        defer { _ = close(descriptor) }
        guard fsync(descriptor) == 0 else { throw Self.writeFailure(errno, directory) }
    }

    /// A write that failed: a full disk is ``OutboxError/storageFull(limitBytes:errno:)``, so the
    /// save fails before anything says saved.
    static func writeFailure(_ code: Int32, _ url: URL) -> OutboxError {
        if code == ENOSPC || code == EDQUOT { return .storageFull(limitBytes: 0, errno: code) }
        return .invalidRequest(field: "attachments", problem: "\(url.path) could not be written (\(String(cString: strerror(code))))")
    }
}

/// What is wrong with an attachment's local file.
enum AttachmentFileProblem: Error, Equatable, CustomStringConvertible {
    case missing
    case damaged(String)

    var description: String {
        switch self {
        case .missing: "its file is missing"
        case .damaged(let why): "its file is damaged: \(why)"
        }
    }
}

/// `read(2)`, named apart from the file store's own `read`.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
