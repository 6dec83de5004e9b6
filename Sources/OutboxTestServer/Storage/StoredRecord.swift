public import Foundation

/// A record the test server created: what `POST /products` and `POST /employees` write.
public struct StoredRecord: Hashable, Sendable, Codable {
    /// `product` or `employee`.
    public var type: String
    public var businessID: String
    /// The body's `"id"`.
    public var id: String
    /// 1 for the first create of this id in this business, one more for each later create.
    public var revision: Int
    /// The `Idempotency-Key` of the request that wrote this revision.
    public var idempotencyKey: String
    /// The request body, byte for byte as sent.
    public var body: Data

    public init(type: String, businessID: String, id: String, revision: Int, idempotencyKey: String, body: Data) {
        self.type = type
        self.businessID = businessID
        self.id = id
        self.revision = revision
        self.idempotencyKey = idempotencyKey
        self.body = body
    }

    /// Where the record is stored and sorts: by type, business, id.
    var storageKey: String { Self.storageKey(type: type, businessID: businessID, id: id) }

    static func storageKey(type: String, businessID: String, id: String) -> String {
        "\(type)\u{1F}\(businessID)\u{1F}\(id)"
    }
}

/// A write the `pending_approval` fault parked instead of applying it.
public struct PendingApproval: Hashable, Sendable, Codable {
    /// `apr-1`, `apr-2`, ... in the order created.
    public var requestID: String
    public var type: String
    public var businessID: String
    public var idempotencyKey: String
    /// The request body, byte for byte as sent.
    public var body: Data

    public init(requestID: String, type: String, businessID: String, idempotencyKey: String, body: Data) {
        self.requestID = requestID
        self.type = type
        self.businessID = businessID
        self.idempotencyKey = idempotencyKey
        self.body = body
    }

    /// The request id of the `number`th approval: `apr-1`, `apr-2`, ...
    static func requestID(_ number: Int) -> String {
        "apr-\(number)"
    }
}
