/// The lane a write is sent in: its entity within its business, or a lane of its own.
///
/// Rows of one lane are sent one after another, in journal order. A lane is compared byte for
/// byte, as LMDB compares its key: two business ids that Swift's `String ==` calls equal (the
/// same text in NFC and in NFD) are two businesses, and so two lanes. Its parts are
/// length-prefixed, so no two (business, entity) pairs make one lane: business `a/b` with
/// entity `c` and business `a` with entity `b/c` are apart.
///
/// | lane | bytes |
/// |---|---|
/// | an entity's | 1, business length (1 byte), business (UTF-8), entity length (1 byte), entity (UTF-8) |
/// | an operation's own | 2, the operation id's 16 bytes |
///
/// No lane's bytes begin with another lane's, so a prefix scan for one lane finds only its rows.
package struct Lane: Hashable, Sendable, CustomStringConvertible {
    /// The lane's identity, as it leads its keys in the journal's lane index.
    package let bytes: [UInt8]

    private static let entityTag: UInt8 = 1
    private static let operationTag: UInt8 = 2

    /// The longest business id and entity id a lane holds, in UTF-8 bytes (each length is one
    /// byte). Requests are bounded tighter (``OutboxRequest/maxBusinessIDBytes``,
    /// ``OutboxRequest/maxEntityIDBytes``).
    package static let maxPartBytes = 255

    /// The lane of writes to `entityID` of `businessID`, or of `operation` alone when
    /// `entityID` is `nil`.
    package init(businessID: String, entityID: String?, operation: OperationID) {
        var bytes: [UInt8] = []
        Self.encode(businessID: businessID, entityID: entityID, operation: operation, into: &bytes)
        self.bytes = bytes
    }

    /// Reads a lane from the bytes ``bytes`` holds; `nil` when they are not a lane's.
    package init?(bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard Self.isWellFormed(bytes) else { return nil }
        self.bytes = bytes
    }

    /// Writes the lane's bytes straight into `bytes`, without building a `Lane`: the hot path of
    /// the lane index.
    package static func encode(businessID: String, entityID: String?, operation: OperationID, into bytes: inout [UInt8]) {
        if let entityID {
            precondition(businessID.utf8.count <= maxPartBytes && entityID.utf8.count <= maxPartBytes, "a lane's part over 255 bytes")
            bytes.append(entityTag)
            bytes.append(UInt8(businessID.utf8.count))
            bytes.append(contentsOf: businessID.utf8)
            bytes.append(UInt8(entityID.utf8.count))
            bytes.append(contentsOf: entityID.utf8)
        } else {
            bytes.append(operationTag)
            withUnsafeBytes(of: operation.uuid.uuid) { bytes.append(contentsOf: $0) }
        }
    }

    /// Whether `bytes` is one lane's, whole.
    private static func isWellFormed(_ bytes: [UInt8]) -> Bool {
        switch bytes.first {
        case entityTag?:
            guard bytes.count >= 2 else { return false }
            let businessEnd = 2 + Int(bytes[1])
            guard businessEnd < bytes.count else { return false }
            return businessEnd + 1 + Int(bytes[businessEnd]) == bytes.count
        case operationTag?:
            return bytes.count == 17
        default:
            return false
        }
    }

    /// The business and entity of an entity's lane; `nil` for an operation's own.
    package var entity: (businessID: [UInt8], entityID: [UInt8])? {
        guard bytes.first == Self.entityTag else { return nil }
        let businessEnd = 2 + Int(bytes[1])
        return (Array(bytes[2..<businessEnd]), Array(bytes[(businessEnd + 1)...]))
    }

    /// The operation of a lane of its own; `nil` for an entity's.
    package var operation: OperationID? {
        bytes.first == Self.operationTag ? OperationID(bytes: bytes.dropFirst()) : nil
    }

    /// `entity pharmacy-7/p-1`, or `operation <id>`: for logs and support, never a key.
    package var description: String {
        if let entity {
            return "entity \(String(decoding: entity.businessID, as: UTF8.self))/\(String(decoding: entity.entityID, as: UTF8.self))"
        }
        return "operation \(operation.map(\.uuidString) ?? "?")"
    }
}
