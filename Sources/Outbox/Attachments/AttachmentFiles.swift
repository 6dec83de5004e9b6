package import Foundation
package import OutboxCore
package import OutboxCrypto
import Synchronization
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
/// With encryption at rest the file is kept sealed in chunks (``SealedFileFormat``) as
/// `<sha256 hex>.sealed`, under the journal's attachments key: nothing of its bytes is on the
/// disk in plaintext, and a segment is opened without reading the rest. A file kept before the
/// journal had a key is sealed at the next open or key rotation (``sealPlainFiles()``).
///
/// Files are read a chunk at a time: memory never grows with a file.
package struct AttachmentFiles: Sendable {
    /// The directory, `attachments` beside the journal.
    package let directory: URL
    /// The size of each read and write when copying and hashing.
    package static let chunkBytes = 1 << 20
    /// Names a write in progress starts with: never a hash, so collected at open.
    package static let incomingPrefix = ".incoming-"
    /// What a sealed file's name ends with.
    package static let sealedSuffix = ".sealed"
    /// The journal's keys: the attachments key, when the journal is encrypted at rest.
    package let keys: SealingBox
    /// The bytes the kept files take, counted once from the directory and moved by each keep;
    /// counted again after a removal.
    private let tally = KeptTally()
    /// Told each durable step of keeping a file as it is passed (`file-written`, `file-synced`,
    /// `file-renamed`, `file-directory-synced`): what the crash tests aim their kills at.
    package let step: @Sendable (String) -> Void

    package init(journal: URL, keys: SealingBox = SealingBox(), step: @escaping @Sendable (String) -> Void = { _ in }) {
        directory = journal.appendingPathComponent("attachments", isDirectory: true)
        self.keys = keys
        self.step = step
    }

    /// The format files are sealed in now; `nil` when the journal has no attachments key (it was
    /// never encrypted, or this reader has no key). A journal whose encryption was turned off
    /// keeps its attachments key in the clear and goes on sealing with it.
    private var sealing: SealedFileFormat? { keys.attachmentKey.map(SealedFileFormat.init(key:)) }

    package func plainURL(of sha256: SHA256Digest) -> URL {
        directory.appendingPathComponent(sha256.hex)
    }

    package func sealedURL(of sha256: SHA256Digest) -> URL {
        directory.appendingPathComponent(sha256.hex + Self.sealedSuffix)
    }

    /// Where the file of `sha256` is kept, and whether sealed: the sealed copy when there is
    /// one; `nil` when there is none.
    package func location(of sha256: SHA256Digest) -> (url: URL, sealed: Bool)? {
        let sealed = sealedURL(of: sha256)
        if FileManager.default.fileExists(atPath: sealed.path) { return (sealed, true) }
        let plain = plainURL(of: sha256)
        if FileManager.default.fileExists(atPath: plain.path) { return (plain, false) }
        return nil
    }

    /// Where the file of `sha256` lives (or would, were it kept now).
    package func url(of sha256: SHA256Digest) -> URL {
        location(of: sha256)?.url ?? (sealing == nil ? plainURL(of: sha256) : sealedURL(of: sha256))
    }

    /// The bytes the file of `manifest` takes on the disk as kept: its size, or what it seals to.
    package static func storedSize(of manifest: AttachmentManifest, sealed: Bool) -> Int64 {
        sealed ? SealedFileFormat.sealedSize(ofPlaintext: manifest.size) : manifest.size
    }

    /// Keeps `attachment`'s bytes durably, hashing them as they are written (sealing them when
    /// the journal is encrypted at rest), and answers its manifest. The same bytes kept before
    /// are the same file.
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` for a file that cannot be read,
    ///   ``OutboxError/storageFull(limitBytes:errno:)`` when the disk is full (nothing is kept).
    package func keep(_ attachment: Attachment, field: String) throws -> (manifest: AttachmentManifest, created: Bool) {
        let (digest, size, created) = try keepFile(field: field) { consume in
            switch attachment.source {
            case .bytes(let data):
                try data.withUnsafeBytes { try consume($0) }
            case .file(let url, _):
                let input = open(url.path, O_RDONLY)
                guard input >= 0 else {
                    throw OutboxError.invalidRequest(field: field, problem: "\(url.path) cannot be read (\(String(cString: strerror(errno)))): attach a file that exists")
                }
                defer { _ = close(input) }
                try Self.readChunks(input) { bytes in try consume(bytes) } failure: {
                    OutboxError.invalidRequest(field: field, problem: "\(url.path) could not be read (\(String(cString: strerror(errno))))")
                }
            }
        }
        let manifest = AttachmentManifest(id: attachment.id, name: attachment.name, contentType: attachment.contentType, size: size, sha256: digest)
        return (manifest, created)
    }

    /// Writes the bytes `produce` hands over to a temporary file (sealed when the journal is
    /// encrypted at rest), hashing the plaintext, fsyncs it, renames it to its hash and fsyncs
    /// the directory.
    private func keepFile(field: String, _ produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws
        -> (digest: SHA256Digest, size: Int64, created: Bool)
    {
        try ensureDirectory()
        let temporary = directory.appendingPathComponent(Self.incomingPrefix + UUID().uuidString)
        let output = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard output >= 0 else { throw Self.writeFailure(errno, temporary) }
        var closed = false
        defer {
            if !closed { _ = close(output) }
            unlink(temporary.path)
        }
        func write(_ bytes: UnsafeRawBufferPointer) throws {
            var offset = 0
            while offset < bytes.count {
                let written = systemWrite(output, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw Self.writeFailure(errno, temporary)
                }
                offset += written
            }
        }
        var hasher = SHA256Hasher()
        var size: Int64 = 0
        let format = sealing
        var sealer: SealedFileWriter?
        if let format {
            let header = SealedFileFormat.header()
            try header.bytes.withUnsafeBytes { try write($0) }
            sealer = SealedFileWriter(format: format, fileID: header.fileID, emit: write)
        }
        try produce { bytes in
            hasher.update(bytes)
            size += Int64(bytes.count)
            if sealer != nil { try sealer!.append(bytes) } else { try write(bytes) }
        }
        try sealer?.finish()
        step("file-written")
        guard fsync(output) == 0 else { throw Self.writeFailure(errno, temporary) }
        closed = true
        guard close(output) == 0 else { throw Self.writeFailure(errno, temporary) }
        step("file-synced")
        let digest = hasher.finalize()
        let target = format == nil ? plainURL(of: digest) : sealedURL(of: digest)
        let existed = location(of: digest) != nil
        if !FileManager.default.fileExists(atPath: target.path) {
            guard rename(temporary.path, target.path) == 0 else { throw Self.writeFailure(errno, target) }
            step("file-renamed")
            do {
                try syncDirectory()
            } catch {
                // The file is in place, uncounted: counted again from the directory.
                tally.forget()
                throw error
            }
            step("file-directory-synced")
            // A plaintext copy kept before the key goes once its sealed copy is durable.
            if format != nil, unlink(plainURL(of: digest).path) == 0 {
                tally.forget()
            } else {
                tally.add(format == nil ? size : SealedFileFormat.sealedSize(ofPlaintext: size))
            }
        }
        return (digest, size, !existed)
    }

    /// Seals every file kept in plaintext, when the journal has an attachments key: a file kept
    /// before the journal was encrypted. Each is written sealed beside it, made durable, and
    /// only then the plaintext removed; a kill between leaves both, and the next call removes
    /// the plaintext. A file that cannot be read is left as it is (`verify` names it).
    /// - Returns: how many were sealed.
    @discardableResult
    package func sealPlainFiles() -> Int {
        guard sealing != nil else { return 0 }
        var sealed = 0
        for digest in listing().plain {
            if FileManager.default.fileExists(atPath: sealedURL(of: digest).path) {
                unlink(plainURL(of: digest).path)
                tally.forget()
                continue
            }
            let input = open(plainURL(of: digest).path, O_RDONLY)
            guard input >= 0 else { continue }
            defer { _ = close(input) }
            let kept = try? keepFile(field: "attachments") { consume in
                try Self.readChunks(input, consume) { AttachmentFileProblem.damaged("it cannot be read") }
            }
            // Bytes that no longer hash to their name stay where they are, for verify to name.
            if let kept, kept.digest == digest {
                sealed += 1
            } else if let kept, kept.created {
                remove(kept.digest)
            }
        }
        return sealed
    }

    /// Removes the originals of the attachments given as files to be moved: called once the
    /// write that keeps their copies is committed, so a failed or killed save never loses one.
    package func removeMovedOriginals(_ attachments: [Attachment]) {
        for attachment in attachments {
            if case .file(let url, moving: true) = attachment.source { unlink(url.path) }
        }
    }

    /// Removes the file of `sha256` (one an enqueue kept and then did not commit, or one no
    /// write needs any longer), in whichever form it is kept.
    package func remove(_ sha256: SHA256Digest) {
        unlink(sealedURL(of: sha256).path)
        unlink(plainURL(of: sha256).path)
        tally.forget()
    }

    /// The files kept, by hash, with the bytes they take on the disk; those kept in plaintext;
    /// and the temporary files a kill left, apart.
    package func listing() -> (files: [SHA256Digest: Int64], plain: Set<SHA256Digest>, incoming: [URL]) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return ([:], [], []) }
        var files: [SHA256Digest: Int64] = [:]
        var plain: Set<SHA256Digest> = []
        var incoming: [URL] = []
        for name in names {
            let url = directory.appendingPathComponent(name)
            let isSealed = name.hasSuffix(Self.sealedSuffix)
            if let digest = SHA256Digest(hex: isSealed ? name.dropLast(Self.sealedSuffix.count) : name[...]) {
                let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
                files[digest, default: 0] += size
                if !isSealed { plain.insert(digest) }
            } else if name.hasPrefix(Self.incomingPrefix) {
                incoming.append(url)
            }
        }
        return (files, plain, incoming)
    }

    /// The bytes the kept files take: the directory is listed only when the count is not known
    /// (the first call, and the first after a file was removed).
    package func keptBytes() -> Int64 {
        tally.total { listing().files.values.reduce(0, +) }
    }

    /// Reads `length` bytes at `offset` of the file of `sha256`: one segment, opened from its
    /// chunks when the file is sealed.
    /// - Throws: ``AttachmentFileProblem`` when the file is missing, shorter than that, or a
    ///   sealed chunk does not open.
    package func read(_ sha256: SHA256Digest, offset: Int64, length: Int) throws(AttachmentFileProblem) -> Data {
        guard let (url, sealed) = location(of: sha256) else { throw .missing }
        let input = open(url.path, O_RDONLY)
        guard input >= 0 else { throw .missing }
        defer { _ = close(input) }
        if sealed {
            let reader = try SealedFileReader(input, format: sealing)
            return try reader.read(offset: offset, length: length)
        }
        var data = Data(count: length)
        guard data.withUnsafeMutableBytes({ Self.readFully(input, into: $0, at: offset) }) else {
            throw .damaged("the file is shorter than its manifest")
        }
        return data
    }

    /// Hands the plaintext of the file of `sha256` to `body`, a chunk at a time.
    package func withPlaintextChunks(of sha256: SHA256Digest, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let (url, sealed) = location(of: sha256) else { throw AttachmentFileProblem.missing }
        let input = open(url.path, O_RDONLY)
        guard input >= 0 else { throw AttachmentFileProblem.missing }
        defer { _ = close(input) }
        if sealed {
            try SealedFileReader(input, format: sealing).readAll(body)
        } else {
            try Self.readChunks(input, body) { AttachmentFileProblem.damaged("it cannot be read") }
        }
    }

    /// Whether the file of `manifest` is there, of its size, and hashes to its SHA-256.
    package func check(_ manifest: AttachmentManifest) -> AttachmentFileProblem? {
        var hasher = SHA256Hasher()
        var size: Int64 = 0
        do {
            try withPlaintextChunks(of: manifest.sha256) { bytes in
                hasher.update(bytes)
                size += Int64(bytes.count)
            }
        } catch let problem as AttachmentFileProblem {
            return problem
        } catch {
            return .damaged("it cannot be read")
        }
        guard size == manifest.size else { return .damaged("it holds \(size) bytes, its manifest \(manifest.size)") }
        guard hasher.finalize() == manifest.sha256 else { return .damaged("its bytes no longer hash to its manifest's SHA-256") }
        return nil
    }

    /// Reads `input` to its end a chunk at a time; `failure` is thrown for a read that fails.
    package static func readChunks(_ input: Int32, _ body: (UnsafeRawBufferPointer) throws -> Void, failure: () -> any Error) throws {
        var buffer = [UInt8](repeating: 0, count: chunkBytes)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(input, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure()
            }
            if count == 0 { return }
            try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
    }

    /// Fills `buffer` from `input` at `offset`; `false` when the file ends (or a read fails)
    /// first.
    package static func readFully(_ input: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Bool {
        var filled = 0
        while filled < buffer.count {
            let count = pread(input, buffer.baseAddress! + filled, buffer.count - filled, off_t(offset) + off_t(filled))
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            filled += count
        }
        return true
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
    package static func writeFailure(_ code: Int32, _ url: URL) -> OutboxError {
        if code == ENOSPC || code == EDQUOT { return .storageFull(limitBytes: 0, errno: code) }
        return .invalidRequest(field: "attachments", problem: "\(url.path) could not be written (\(String(cString: strerror(code))))")
    }
}

/// The bytes the kept files take, when known.
private final class KeptTally: Sendable {
    private let bytes = Mutex<Int64?>(nil)

    package func total(counting: () -> Int64) -> Int64 {
        bytes.withLock { known in
            if let known { return known }
            let counted = counting()
            known = counted
            return counted
        }
    }

    package func add(_ more: Int64) {
        bytes.withLock { if let known = $0 { $0 = known + more } }
    }

    package func forget() {
        bytes.withLock { $0 = nil }
    }
}

/// What is wrong with an attachment's local file.
package enum AttachmentFileProblem: Error, Equatable, CustomStringConvertible {
    case missing
    case damaged(String)
    /// Sealed at rest, and this reader has no key to open it.
    case sealedWithoutKey

    package var description: String {
        switch self {
        case .missing: "its file is missing"
        case .damaged(let why): "its file is damaged: \(why)"
        case .sealedWithoutKey: "its file is sealed at rest and cannot be opened without the journal's key"
        }
    }
}

/// `read(2)`, named apart from the file store's own `read`.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

/// `write(2)`, named apart from the file store's own.
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}
