import Foundation
import Outbox
import OutboxAudit

/// The member's records the records scenarios write and read: a pharmacy's products, each
/// created with its record, edited while offline.
extension Workload {
    static let productType = "product"
    /// A second type for the record stream, so that its page is of its own records.
    static let stockType = "stock"

    /// The `number`th product's record.
    static func productKey(_ number: Int, type: String = productType) -> RecordKey {
        RecordKey(business: businessID, type: type, id: stableID(number))
    }

    /// The `number`th product's value, as the member typed it: the create's payload (~177 bytes of
    /// JSON). `edit` 0 is the value created; a later edit changes the price.
    static func productValue(_ number: Int, edit: Int = 0) -> Data {
        guard edit > 0 else { return request(number).payload }
        let payload = """
            {"id":"\(stableID(number))","name":"Antiseptic 500 ml #\(number)","sku":"SKU-\(100_000 + number)",\
            "price":"\(12 + edit % 80).50","stock":40,"supplier":"Medipharm Ltd","notes":"Keep below 25 C"}
            """
        return Data(payload.utf8)
    }

    /// The create of the `number`th product: scenario 1's request, in the product's own lane
    /// (its entity is the record's id), as an app that keeps records sends it.
    static func productCreate(_ number: Int) -> OutboxRequest {
        var create = request(number)
        create.entityID = stableID(number)
        return create
    }

    /// An edit of the `number`th product: the whole record `PUT` again, `If-Match` the record's
    /// server revision when it is sent.
    static func productUpdate(_ number: Int, edit: Int, type: String = productType, operationType: String = "product.update",
                              payload: Data? = nil) -> OutboxRequest {
        let key = productKey(number, type: type)
        return OutboxRequest(
            businessID: businessID,
            operationType: operationType,
            method: "PUT",
            endpoint: "/\(type)s/\(key.id)",
            payload: payload ?? productValue(number, edit: edit),
            entityID: key.id,
            category: "Products",
            entityLabel: "Antiseptic 500 ml #\(number)",
            summary: "New price",
            revisionFrom: key
        )
    }

    /// A value whose first bytes say which edit it is (`{"edit":"00000042",...`), so that a
    /// subscriber can tell from a page whether it shows a given commit without parsing JSON.
    static func markedValue(_ number: Int, edit: Int) -> Data {
        var value = Data(String(format: #"{"edit":"%08d","#, edit).utf8)
        value += productValue(number, edit: edit).dropFirst()
        return value
    }

    /// The edit a ``markedValue(_:edit:)`` carries; `nil` for another value.
    static func edit(of value: Data?) -> Int? {
        let mark = Data(#"{"edit":""#.utf8)
        guard let value, value.count > mark.count + 8, value.starts(with: mark) else { return nil }
        var edit = 0
        for byte in value.dropFirst(mark.count).prefix(8) {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            edit = edit * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return edit
    }

    /// The size in bytes of an `enqueued` record carrying one record change of a product's value.
    static var enqueuedRecordWithChangeBytes: Int {
        let request = productCreate(1)
        let change = RecordWrite(key: productKey(1), value: productValue(1), schemaVersion: 1)
        let event = JournalEvent(
            seq: 1, operationID: OperationID(), recordedAt: Date(),
            body: .enqueued(Enqueued(request: request, requestHash: SHA256Digest(of: request.payload), account: account, changes: [change]))
        )
        return RecordCodec.encode(event).count
    }
}
