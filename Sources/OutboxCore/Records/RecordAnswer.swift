package import Foundation
package import OutboxWire

/// What an answer says of a record a write changed: its revision, the record as the server now
/// holds it, whether it was deleted, and which record it is when the answer names one.
///
/// The wire (`Docs/records.md`): a 2xx body with `revision` (an unsigned integer, or a string of
/// its digits; else the `ETag`'s), `record` (the record, JSON), `deleted: true` for a delete, and
/// optionally `type` and `id`; a 412's `server_revision` and `current`.
package struct RecordAnswer: Sendable, Equatable {
    package var revision: UInt64?
    /// The record's JSON, as the engine stores it (its members re-encoded in key order).
    package var record: Data?
    package var deleted = false
    package var type: String?
    package var id: String?
    /// Where the change is visible in the server's change feed (`Outbox-Visible-At`): a pull
    /// whose cursor reaches it has brought the change back. `nil`: the answer named none, or a
    /// position that is not one.
    package var visibleAt: FeedPosition?

    /// The largest record an answer's value may be: larger ones are not kept (the overlay then
    /// waits for the server's value another way).
    package static let maxRecordBytes = 1 << 20

    package init(_ response: TransportResponse) {
        if let tag = response.header("ETag") { revision = Self.revision(DispositionTable.entityTagValue(tag)) }
        visibleAt = response.header(WireHeader.visibleAt).flatMap { try? FeedPosition(text: $0) }
        guard !response.body.isEmpty,
            let object = (try? JSONSerialization.jsonObject(with: response.body, options: [])) as? [String: Any]
        else { return }
        for name in [WireBodyField.revision, WireBodyField.serverRevision] {
            if let value = object[name], let parsed = Self.revision(value) {
                revision = parsed
                break
            }
        }
        deleted = (object[WireBodyField.deleted] as? NSNumber).map { String(cString: $0.objCType) == "c" && $0.boolValue } ?? false
        type = object[WireBodyField.type] as? String
        id = object[WireBodyField.id] as? String
        if let value = object[WireBodyField.record] ?? object[WireBodyField.current], !(value is NSNull),
            let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]),
            data.count <= Self.maxRecordBytes
        {
            record = data
        }
    }

    /// An unsigned revision from a number or a string of decimal digits; `nil` otherwise.
    static func revision(_ value: Any) -> UInt64? {
        switch value {
        case let text as String: return text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) ? UInt64(text) : nil
        case let number as NSNumber:
            // JSON's true and false arrive as numbers too, of the C type `char`.
            guard String(cString: number.objCType) != "c" else { return nil }
            let double = number.doubleValue
            guard double >= 0, double.rounded() == double, double < 1.8e19 else { return nil }
            return number.uint64Value
        default: return nil
        }
    }
}
