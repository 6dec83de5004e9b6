/// What a claim is scoped by, besides its key: whose data, and which kind of write.
///
/// Two businesses may use the same key, and one key may not be reused across operation types:
/// each (business, operation type, key) triple is its own claim.
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
}

/// One claim's identity: its scope and its key.
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
