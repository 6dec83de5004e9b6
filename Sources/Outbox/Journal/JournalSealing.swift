import Foundation
import OutboxCore
import OutboxCrypto

/// Encryption at rest: the journal's key, and what it seals.
///
/// Payloads, entity labels and summaries are sealed with ChaCha20-Poly1305, each bound to its
/// operation id and field as associated data, so a sealed value cannot be moved to another
/// operation or field unnoticed. Statuses, timelines, the ledger and metrics are not sealed:
/// they stay readable without the key.
package struct JournalSealing: Sendable {
    let key: SealingKey

    /// The constant whose sealed form, kept in `meta`, tells a right key from a wrong one.
    private static let checkPlaintext = Array("outbox journal key check".utf8)
    private static let checkAssociatedData = Array("key-check".utf8)

    private static func associatedData(_ id: OperationID, _ field: String) -> [UInt8] {
        id.bytes + Array(field.utf8)
    }

    func seal(_ request: OutboxRequest, id: OperationID) -> SealedRequest {
        SealedRequest(
            payload: key.seal(request.payload, authenticating: Self.associatedData(id, "payload")),
            presentation: sealPresentation(label: request.entityLabel, summary: request.summary, id: id)
        )
    }

    func sealPresentation(label: String, summary: String, id: OperationID) -> [UInt8] {
        key.seal(PresentationText(label: label, summary: summary).bytes, authenticating: Self.associatedData(id, "presentation"))
    }

    func unseal(_ sealed: SealedRequest, id: OperationID) throws -> (payload: Data, entityLabel: String, summary: String) {
        let payload = try key.open(sealed.payload, authenticating: Self.associatedData(id, "payload"))
        let presentation = try unsealPresentation(sealed.presentation, id: id)
        return (Data(payload), presentation.label, presentation.summary)
    }

    func unsealPresentation(_ sealed: [UInt8], id: OperationID) throws -> PresentationText {
        let bytes = try key.open(sealed, authenticating: Self.associatedData(id, "presentation"))
        guard let text = PresentationText(bytes: bytes) else { throw SealingError.cannotOpen }
        return text
    }

    /// The server's current record a conflict kept, sealed like a payload.
    func sealServerCurrent(_ current: Data, id: OperationID) -> [UInt8] {
        key.seal(current, authenticating: Self.associatedData(id, "server-current"))
    }

    func unsealServerCurrent(_ sealed: [UInt8], id: OperationID) throws -> Data {
        Data(try key.open(sealed, authenticating: Self.associatedData(id, "server-current")))
    }

    /// A record change's value an `enqueued` event carries, bound to its operation and record.
    func sealRecordValue(_ value: Data, id: OperationID, key: RecordKey) -> [UInt8] {
        self.key.seal(value, authenticating: Self.associatedData(id, "record-value") + key.bytes)
    }

    func unsealRecordValue(_ sealed: [UInt8], id: OperationID, key: RecordKey) throws -> Data {
        Data(try self.key.open(sealed, authenticating: Self.associatedData(id, "record-value") + key.bytes))
    }

    /// A value of the record store (a server base, a local record), bound to its table and record.
    func sealStoredValue(_ value: Data, table: UInt8, key: RecordKey) -> [UInt8] {
        self.key.seal(value, authenticating: Array("record-store".utf8) + [table] + key.bytes)
    }

    func unsealStoredValue(_ sealed: [UInt8], table: UInt8, key: RecordKey) throws -> Data {
        Data(try self.key.open(sealed, authenticating: Array("record-store".utf8) + [table] + key.bytes))
    }

    /// The attachments key as `meta` keeps it, sealed with this key.
    func sealAttachmentKey(_ fileKey: SealingKey) -> [UInt8] {
        fileKey.withUnsafeKeyBytes { key.seal($0, authenticating: Array("attachment-key".utf8)) }
    }

    func openAttachmentKey(_ sealed: [UInt8]) throws -> SealingKey {
        try SealingKey(bytes: try key.open(sealed, authenticating: Array("attachment-key".utf8)))
    }

    /// The value `meta` keeps to check keys with.
    func keyCheck() -> [UInt8] {
        key.seal(Self.checkPlaintext, authenticating: Self.checkAssociatedData)
    }

    func opens(keyCheck: [UInt8]) -> Bool {
        (try? key.open(keyCheck, authenticating: Self.checkAssociatedData)) == Self.checkPlaintext
    }

    /// The unsealer the record codec takes.
    package var unsealer: RecordCodec.Unsealer {
        RecordCodec.Unsealer(
            request: { [self] sealed, id in try unseal(sealed, id: id) },
            serverCurrent: { [self] sealed, id in try unsealServerCurrent(sealed, id: id) },
            recordValue: { [self] sealed, id, key in try unsealRecordValue(sealed, id: id, key: key) }
        )
    }
}


/// The attachments key as `meta` keeps it: a kind byte, then the key sealed with the journal's
/// (1), or, in a journal whose encryption was turned off, the key itself (0): its files stay
/// sealed, and it opens them.
enum AttachmentKeyRecord {
    static func encode(_ fileKey: SealingKey, sealing: JournalSealing?) -> [UInt8] {
        if let sealing { return [1] + sealing.sealAttachmentKey(fileKey) }
        return [0] + fileKey.withUnsafeKeyBytes { Array($0) }
    }

    /// The key, or `nil` when it is sealed and `sealing` is `nil` (a reader without the key).
    /// - Throws: when the record is damaged or does not open with `sealing`.
    static func decode(_ record: [UInt8], sealing: JournalSealing?) throws -> SealingKey? {
        switch record.first {
        case 0?:
            // Kept in the clear only in a journal without a key: one beside a key was planted.
            guard sealing == nil else { throw SealingError.cannotOpen }
            return try SealingKey(bytes: record.dropFirst())
        case 1?:
            guard let sealing else { return nil }
            return try sealing.openAttachmentKey(Array(record.dropFirst()))
        default: throw SealingError.cannotOpen
        }
    }
}
