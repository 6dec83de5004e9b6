public import Foundation
package import OutboxWire

/// A record of the test server: what `POST /products` creates, `PUT` or `PATCH
/// /products/{id}` updates and `DELETE /products/{id}` turns into a tombstone (and the same for
/// employees; stock movements are only created).
public struct StoredRecord: Hashable, Sendable, Codable {
    /// `product`, `employee` or `stock_movement`.
    public var type: String
    public var businessID: String
    /// The body's `"id"`.
    public var id: String
    /// 1 for the first create of this id in this business, one more for each later create,
    /// update, delete, or change made elsewhere. Sent as the entity tag `"<revision>"`.
    public var revision: Int
    /// The `Idempotency-Key` of the request that wrote this revision;
    /// ``changedElsewhereKey`` for a change made through the control API or the `change_record`
    /// fault.
    public var idempotencyKey: String
    /// The record's JSON: a create's or a `PUT`'s body byte for byte as sent; after a `PATCH` or
    /// a change made elsewhere, the body merged with the patch (RFC 7396; what the patch does
    /// not touch keeps its bytes). Empty for a tombstone.
    public var body: Data
    /// Whether the record was deleted at ``revision``: a tombstone, kept so that the revision
    /// never moves back (a create of its id makes revision + 1) and an update of it is 404.
    public var isDeleted: Bool

    /// The ``idempotencyKey`` of a revision written as another device would, outside the
    /// claims: `POST /_control/records/{type}/{id}` or the `change_record` fault.
    public static let changedElsewhereKey = "changed-elsewhere"

    public init(type: String, businessID: String, id: String, revision: Int, idempotencyKey: String, body: Data, isDeleted: Bool = false) {
        self.type = type
        self.businessID = businessID
        self.id = id
        self.revision = revision
        self.idempotencyKey = idempotencyKey
        self.body = body
        self.isDeleted = isDeleted
    }

    /// Reads a record as an LMDB storage keeps it; one stored before deletes existed has no
    /// `isDeleted` and is a live record.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(String.self, forKey: .type)
        businessID = try container.decode(String.self, forKey: .businessID)
        id = try container.decode(String.self, forKey: .id)
        revision = try container.decode(Int.self, forKey: .revision)
        idempotencyKey = try container.decode(String.self, forKey: .idempotencyKey)
        body = try container.decode(Data.self, forKey: .body)
        isDeleted = try container.decodeIfPresent(Bool.self, forKey: .isDeleted) ?? false
    }

    private enum CodingKeys: String, CodingKey {
        case type, businessID, id, revision, idempotencyKey, body, isDeleted
    }

    /// This record deleted by the request with `key`: a tombstone at the next revision.
    func tombstone(key: String) -> StoredRecord {
        StoredRecord(type: type, businessID: businessID, id: id, revision: revision + 1, idempotencyKey: key, body: Data(), isDeleted: true)
    }

    /// The change of the feed this revision is: the record as an answer to its write shows it
    /// (the stored body with its revision added), or its tombstone.
    package var feedChange: FeedChange {
        FeedChange(type: type, id: id, revision: UInt64(revision), record: isDeleted ? nil : RecordBody.withRevision(body, revision))
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
    package static func requestID(_ number: Int) -> String {
        "apr-\(number)"
    }
}
