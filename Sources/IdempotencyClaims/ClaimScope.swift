import OutboxWire

/// What a claim is scoped by, besides its key: whose data, and which kind of write.
///
/// Two businesses may use the same key, and one key may not be reused across operation types:
/// each (business, operation type, key) triple is its own claim.
///
/// Equal and hashed by the UTF-8 bytes of both parts, as PostgreSQL and LMDB compare them:
/// never by Swift's canonical equivalence, so `café` in NFC and in NFD are two businesses in
/// memory as in a database.
public struct ClaimScope: Hashable, Sendable, CustomStringConvertible {
    /// The tenant the write belongs to, e.g. a business id from the request.
    public var businessID: String
    /// The kind of write, e.g. `product.create`: derived by the server from the endpoint.
    public var operationType: String

    public init(businessID: String, operationType: String) {
        self.businessID = businessID
        self.operationType = operationType
    }

    public var description: String { "\(businessID)/\(operationType)" }

    public static func == (lhs: ClaimScope, rhs: ClaimScope) -> Bool {
        lhs.businessID.hasSameBytes(as: rhs.businessID) && lhs.operationType.hasSameBytes(as: rhs.operationType)
    }

    public func hash(into hasher: inout Hasher) {
        businessID.hashBytes(into: &hasher)
        operationType.hashBytes(into: &hasher)
    }
}

/// One claim's identity: its scope and its key, both compared byte for byte.
public struct ClaimID: Hashable, Sendable {
    /// The business and operation type.
    public var scope: ClaimScope
    /// The request's checked `Idempotency-Key`.
    public var key: IdempotencyKey

    public init(scope: ClaimScope, key: IdempotencyKey) {
        self.scope = scope
        self.key = key
    }
}
