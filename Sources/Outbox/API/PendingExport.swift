import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage

/// The file ``Outbox/exportPending(to:key:)`` writes and ``Outbox/importPending(from:key:)``
/// reads: the pending writes of one account, sealed as a whole with a key the app holds.
/// Docs/export.md describes its bytes.
///
/// The envelope, every integer big-endian:
///
/// | bytes | field |
/// |---|---|
/// | 8 | magic `OUTBOXPW` |
/// | 2 | export format version (2; 1 before attachments) |
/// | 2 | the account's UTF-8 length, `n` (1...1024) |
/// | n | the account, UTF-8 |
/// | 28 | key check: nothing sealed with the key (12-byte nonce, 16-byte tag) |
/// | 4 | CRC-32C of every byte before it |
/// | rest | the contents: JSON sealed with the key (nonce, ciphertext, tag) |
///
/// The header (magic, version, account) is the associated data of both sealed parts: neither
/// opens under another account or version. The key check tells a wrong key from damage, which
/// one sealed box alone cannot.
struct PendingExport: Sendable, Equatable {
    static let magic = Array("OUTBOXPW".utf8)
    /// The export format this engine writes, and the newest it reads.
    /// Version 2 carries the files of writes with attachments: a version-1 reader would enqueue
    /// such a write without them.
    static let formatVersion = 2
    static let maxAccountBytes = 1024
    static let keyCheckCount = 28

    var contents: Contents

    /// What the sealed JSON holds.
    struct Contents: Codable, Sendable, Equatable {
        /// The account the writes were made under; equal to the envelope's.
        var account: String
        /// When the export was written, by the device's clock: display only.
        var exportedAt: Date
        /// Oldest first, in lane order: the order they are enqueued again.
        var writes: [Write]
    }

    /// One write, exactly as enqueued (its payload byte for byte), with the records it changes.
    struct Write: Codable, Sendable, Equatable {
        /// Its idempotency key, kept by an import.
        var operationID: String
        /// Where it stood when exported: queued, syncing, failed, blocked or conflicted.
        var status: String
        var account: String
        var businessID: String
        var operationType: String
        var method: String
        var endpoint: String
        /// Base64 in the JSON.
        var payload: Data
        /// SHA-256 of `payload`, lower-case hex.
        var requestHash: String
        var payloadVersion: Int
        var entityID: String?
        var category: String
        var entityLabel: String
        var summary: String
        var baseRevision: String?
        var revisionFrom: Key?
        /// The writes it waits for, each as it stands (a correction in place of the row it
        /// replaced); one synced before the export is left out.
        var dependsOn: [String]
        /// The member's record changes it carries (its overlay), in the order given.
        var changes: [Change]
        /// When it was first enqueued, by the device's clock: display only.
        var createdAt: Date
        /// How many attempts it had had: display only; an import starts again from none.
        var attempts: Int
        /// When its first attempt (since a person retried it after a `claim_may_be_forgotten` block) started, if it was sent: the age
        /// of the server's claim on its key, which the import keeps (absent: never sent).
        var firstAttemptAt: Date?
        /// The files it carries, bytes and all (format 2; absent: none).
        var attachments: [File]?
    }

    /// One file a write carries: its manifest and its bytes (base64 in the JSON).
    struct File: Codable, Sendable, Equatable {
        var id: String
        var name: String
        var contentType: String
        /// SHA-256 of `bytes`, lower-case hex: checked by the import.
        var sha256: String
        var bytes: Data
    }

    struct Key: Codable, Sendable, Equatable {
        var business: String
        var type: String
        var id: String
    }

    /// A record's whole new value (base64), or `null` for its deletion.
    struct Change: Codable, Sendable, Equatable {
        var key: Key
        var value: Data?
    }

    // MARK: Sealing

    /// The file's bytes.
    func sealed(with key: SealingKey) throws(OutboxError) -> [UInt8] {
        guard (1...Self.maxAccountBytes).contains(contents.account.utf8.count) else {
            throw .invalidConfiguration(field: "account", problem: "is \(contents.account.utf8.count) bytes; an export holds an account of 1 to \(Self.maxAccountBytes)")
        }
        let header = Self.header(account: contents.account, version: Self.formatVersion)
        let json: Data
        do {
            json = try Self.encoder.encode(contents)
        } catch {
            throw .invalidRequest(field: "export", problem: "the pending writes could not be written as JSON: \(error)")
        }
        var bytes = header + key.seal(Data(), authenticating: header)
        bytes += Self.bigEndian(bytes.withUnsafeBytes(CRC32C.checksum))
        return bytes + key.seal(json, authenticating: header)
    }

    /// Reads a file's bytes, checking in turn its magic, format version, header checksum,
    /// account, key and sealed contents: the first that fails names the problem.
    static func open(_ bytes: [UInt8], key: SealingKey, account: String, path: String) throws(OutboxError) -> PendingExport {
        func damaged(_ reason: String) -> OutboxError { .exportDamaged(path: path, reason: reason) }
        guard bytes.count >= magic.count + 4, Array(bytes.prefix(magic.count)) == magic else {
            throw damaged("it is not an export of pending writes (no OUTBOXPW at its start)")
        }
        let version = Int(uint16(bytes, at: magic.count))
        guard version >= 1 else { throw damaged("its format version is 0") }
        guard version <= formatVersion else {
            throw .exportNewerFormat(path: path, found: version, supported: formatVersion)
        }
        let accountCount = Int(uint16(bytes, at: magic.count + 2))
        let headerCount = magic.count + 4 + accountCount
        let sealedStart = headerCount + keyCheckCount + 4
        guard (1...maxAccountBytes).contains(accountCount), bytes.count >= sealedStart else {
            throw damaged("it is cut short or its header is damaged")
        }
        let stored = bytes[(sealedStart - 4)..<sealedStart].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard Array(bytes.prefix(sealedStart - 4)).withUnsafeBytes(CRC32C.checksum) == stored else {
            throw damaged("its header fails its checksum")
        }
        let header = Array(bytes.prefix(headerCount))
        guard let exported = String(bytes: bytes[(magic.count + 4)..<headerCount], encoding: .utf8) else {
            throw damaged("its account is not UTF-8")
        }
        guard exported.utf8.elementsEqual(account.utf8) else {
            throw .exportOtherAccount(path: path, exported: exported, configured: account)
        }
        guard (try? key.open(Array(bytes[headerCount..<(headerCount + keyCheckCount)]), authenticating: header)) != nil else {
            throw .exportWrongKey(path: path)
        }
        guard let json = try? key.open(Array(bytes[sealedStart...]), authenticating: header) else {
            throw damaged("its sealed contents fail their check (altered or cut short)")
        }
        let contents: Contents
        do {
            contents = try decoder.decode(Contents.self, from: Data(json))
        } catch {
            throw damaged("its contents do not decode: \(error)")
        }
        guard contents.account.utf8.elementsEqual(exported.utf8) else {
            throw damaged("its contents name account \"\(contents.account)\", its header \"\(exported)\"")
        }
        return PendingExport(contents: contents)
    }

    static func header(account: String, version: Int) -> [UInt8] {
        magic + bigEndian(UInt16(version)) + bigEndian(UInt16(account.utf8.count)) + Array(account.utf8)
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    private static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    private static func uint16(_ bytes: [UInt8], at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    private static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian, Array.init)
    }
}
