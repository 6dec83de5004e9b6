import Foundation
import IdempotencyClaims
import OutboxWire

/// The body of a record's create or update: a JSON object with an `"id"` string. Pure checks,
/// and the edits the server makes to it.
enum RecordBody {
    /// Why a body cannot be stored: answered 422 `validation_failed`, nothing written.
    struct Invalid: Error {
        var message: String
    }

    /// The body's `"id"`, for a create.
    /// - Throws: ``Invalid`` unless the body is a UTF-8 JSON object with a non-empty `"id"`
    ///   string and no `"revision"` (the server assigns it).
    static func id(of body: Data) throws(Invalid) -> String {
        let object = try object(body)
        guard let id = object["id"] as? String, !id.isEmpty else {
            throw Invalid(message: #"the body must have a non-empty "id" string"#)
        }
        try refuseRevision(in: object)
        return id
    }

    /// A `PUT`'s body, checked: the whole record, its `"id"` the one in the path.
    /// - Throws: ``Invalid`` unless the body is a JSON object whose `"id"` is `id`, without
    ///   `"revision"`.
    static func replacement(_ body: Data, id: String) throws(Invalid) -> Data {
        let object = try object(body)
        guard object["id"] as? String == id else {
            throw Invalid(message: #"a PUT sends the whole record: its "id" must be "# + JSONText.quoted(id) + ", as in the path")
        }
        try refuseRevision(in: object)
        return body
    }

    /// The record `current` with a `PATCH`'s body merged into it (RFC 7396).
    /// - Throws: ``Invalid`` unless the patch is a JSON object that leaves `"id"` as it is and
    ///   does not set `"revision"`.
    static func patched(_ current: Data, with patch: Data, id: String) throws(Invalid) -> Data {
        let object = try object(patch, what: "a PATCH body (a JSON merge patch)")
        if let patchedID = object["id"], patchedID as? String != id {
            throw Invalid(message: #"a PATCH may not change or remove the record's "id" ("# + id + ")")
        }
        try refuseRevision(in: object)
        do {
            return Data(try JSONMergePatch.apply(Array(patch), to: Array(current)))
        } catch {
            throw Invalid(message: "the patch could not be applied: \(error)")
        }
    }

    /// The `"product_id"` a stock movement names.
    /// - Throws: ``Invalid`` unless it is a non-empty string.
    static func productID(of body: Data) throws(Invalid) -> String {
        guard let product = try object(body)["product_id"] as? String, !product.isEmpty else {
            throw Invalid(message: #"a stock movement must name its product: a non-empty "product_id" string"#)
        }
        return product
    }

    /// The record as the server shows it: its body, byte for byte, with `"revision": n` added
    /// as its last member. `body` must be a JSON object.
    static func withRevision(_ body: Data, _ revision: Int) -> Data {
        let bytes = Array(body)
        guard let close = bytes.lastIndex(of: UInt8(ascii: "}")) else { return body }
        let isEmpty = bytes[..<close].last { !Self.whitespace.contains($0) } == UInt8(ascii: "{")
        return Data(bytes[..<close]) + Data(((isEmpty ? "" : ",") + #""revision":\#(revision)}"#).utf8)
    }

    private static func object(_ body: Data, what: String = "the body") throws(Invalid) -> [String: Any] {
        guard body.first(where: { !Self.whitespace.contains($0) }) == UInt8(ascii: "{"),
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        else { throw Invalid(message: "\(what) must be a JSON object") }
        return object
    }

    private static func refuseRevision(in object: [String: Any]) throws(Invalid) {
        guard object["revision"] == nil else {
            throw Invalid(message: #""revision" is assigned by the server and may not be sent"#)
        }
    }

    private static let whitespace: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")]
}
