import Foundation

/// The body of a create: a JSON object with an `"id"` string. Pure checks and the one edit the
/// server makes to it.
enum CreateBody {
    /// Why a body cannot be created: answered 422 `validation_failed`, not stored.
    struct Invalid: Error {
        var message: String
    }

    /// The body's `"id"`.
    /// - Throws: ``Invalid`` unless the body is a UTF-8 JSON object with a non-empty `"id"`
    ///   string and no `"revision"` (the server assigns it).
    static func id(of body: Data) throws(Invalid) -> String {
        guard firstSignificantByte(of: body) == UInt8(ascii: "{"),
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        else { throw Invalid(message: "the body must be a JSON object") }
        guard let id = object["id"] as? String, !id.isEmpty else {
            throw Invalid(message: #"the body must have a non-empty "id" string"#)
        }
        guard object["revision"] == nil else {
            throw Invalid(message: #""revision" is assigned by the server and may not be sent"#)
        }
        return id
    }

    /// The body as sent, byte for byte, with `"revision": n` added as its last member.
    /// `body` must have passed ``id(of:)``.
    static func withRevision(_ body: Data, _ revision: Int) -> Data {
        let bytes = Array(body)
        guard let close = bytes.lastIndex(of: UInt8(ascii: "}")) else { return body }
        return Data(bytes[..<close]) + Data(#","revision":\#(revision)}"#.utf8)
    }

    private static func firstSignificantByte(of body: Data) -> UInt8? {
        body.first { ![UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")].contains($0) }
    }
}
