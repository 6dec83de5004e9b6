import Foundation
import IdempotencyClaims
import OutboxWire

/// The body of a record's create or update: a JSON object with an `"id"` string. Pure checks,
/// and the edits the server makes to it.
///
/// A body is checked whole before any store sees it, so the three stores answer it alike: what
/// one of them could not keep (U+0000 in any string, which PostgreSQL's `text` and `jsonb`
/// refuse; a number beyond a 64-bit float's range; an id longer than a key holds) is 422
/// `validation_failed` naming its JSON path, never a store's error answered 500 and retried
/// forever.
enum RecordBody {
    /// Why a body cannot be stored: answered 422 `validation_failed`, nothing written.
    struct Invalid: Error {
        var message: String
        /// The JSON path of what is wrong (`id`, `operations[3].payload.price`); `nil` for the
        /// body as a whole.
        var field: String?
    }

    /// The longest record id (and `product_id`), in UTF-8 bytes: with the longest business id
    /// and type, a record's key stays within LMDB's 511 bytes.
    static let maxIDBytes = 255

    /// Why `id` cannot be a record's id, completing "the id ..."; `nil` when it can. A path's
    /// id that fails names no record.
    static func idProblem(_ id: String) -> String? {
        if id.isEmpty { return "is empty" }
        if id.unicodeScalars.contains("\u{0}") { return "holds U+0000, which the server cannot store" }
        if id.utf8.count > maxIDBytes { return "is \(id.utf8.count) bytes long; the most accepted is \(maxIDBytes)" }
        return nil
    }

    /// A create's or a `PUT`'s body, checked whole: a JSON object every store can keep, with no
    /// `"revision"` (the server assigns it).
    /// - Parameter prefix: where the body stands in what was sent: the root for a request of
    ///   its own, `operations[i].payload` for an operation of a batch.
    static func record(_ body: Data, at prefix: JSONPath) throws(Invalid) -> JSONNode {
        let object = try object(body, what: "the body", at: prefix)
        try refuseRevision(in: object, at: prefix)
        return object
    }

    /// The record's `"id"`: a non-empty string, once, that a key can hold.
    static func id(of object: JSONNode, at prefix: JSONPath) throws(Invalid) -> String {
        try text(named: "id", in: object, at: prefix, what: "the record's id")
    }

    /// A `PUT`'s body, checked: the whole record, its `"id"` the one in the path (byte for byte).
    static func replacement(_ body: Data, id: String, at prefix: JSONPath) throws(Invalid) -> Data {
        let object = try record(body, at: prefix)
        let sent = try Self.id(of: object, at: prefix)
        guard sent.hasSameBytes(as: id) else {
            throw Invalid(message: "\(place(prefix.member("id"))): a PUT sends the whole record: its \"id\" must be "
                + JSONText.quoted(id) + ", as in the path", field: prefix.member("id").description)
        }
        return body
    }

    /// The record `current` with a `PATCH`'s body merged into it (RFC 7396).
    /// - Throws: ``Invalid`` unless the patch is a JSON object every store can keep that leaves
    ///   `"id"` as it is and does not set `"revision"`.
    static func patched(_ current: Data, with patch: Data, id: String, at prefix: JSONPath) throws(Invalid) -> Data {
        let object = try object(patch, what: "a PATCH body (a JSON merge patch)", at: prefix)
        let ids = object.members(named: "id")
        if !ids.isEmpty, ids.count > 1 || !(ids[0] == .string(id)) {
            throw Invalid(message: "\(place(prefix.member("id"))): a PATCH may not change or remove the record's \"id\" ("
                + JSONText.quoted(id) + ")", field: prefix.member("id").description)
        }
        try refuseRevision(in: object, at: prefix)
        do {
            return Data(try JSONMergePatch.apply(Array(patch), to: Array(current)))
        } catch {
            throw Invalid(message: "the patch could not be applied: \(error)", field: prefix.isRoot ? nil : prefix.description)
        }
    }

    /// Why `patch` cannot be merged into a record (not a JSON object, or holding what no store
    /// can keep), in words; `nil` when it can.
    static func problem(ofPatch patch: Data) -> String? {
        do {
            _ = try object(patch, what: "the patch", at: .root)
            return nil
        } catch {
            return error.message
        }
    }

    /// The `"product_id"` a stock movement names: a non-empty string, once, that a key can hold.
    static func productID(of object: JSONNode, at prefix: JSONPath) throws(Invalid) -> String {
        try text(named: "product_id", in: object, at: prefix, what: "a stock movement's product")
    }

    /// The record as the server shows it: its body, byte for byte, with `"revision": n` added
    /// as its last member. `body` must be a JSON object.
    static func withRevision(_ body: Data, _ revision: Int) -> Data {
        let bytes = Array(body)
        guard let close = bytes.lastIndex(of: UInt8(ascii: "}")) else { return body }
        let isEmpty = bytes[..<close].last { !Self.whitespace.contains($0) } == UInt8(ascii: "{")
        return Data(bytes[..<close]) + Data(((isEmpty ? "" : ",") + #""revision":\#(revision)}"#).utf8)
    }

    // MARK: Checks

    /// `path` in a message: `the body` for the root.
    private static func place(_ path: JSONPath) -> String {
        path.isRoot ? "the body" : path.description
    }

    /// The body read strictly as a JSON object, and checked for what no store can keep.
    private static func object(_ body: Data, what: String, at prefix: JSONPath) throws(Invalid) -> JSONNode {
        let node: JSONNode
        do {
            node = try JSONNode.read(Array(body))
        } catch {
            let field = prefix.appending(error.path)
            throw Invalid(message: error.message(at: prefix), field: field.isRoot ? nil : field.description)
        }
        guard case .object = node else {
            throw Invalid(message: "\(prefix.isRoot ? what : prefix.description) must be a JSON object, not \(node.kind)",
                          field: prefix.isRoot ? nil : prefix.description)
        }
        if let (path, problem) = node.firstProblem(at: prefix, storableProblem) {
            throw Invalid(message: "\(place(path)) \(problem)", field: path.isRoot ? nil : path.description)
        }
        return node
    }

    /// Why a value (or a member name) cannot be kept by every store, completing "path ...".
    private static func storableProblem(_ node: JSONNode, name: String?) -> String? {
        switch node {
        case .string(let text) where text.unicodeScalars.contains("\u{0}"):
            return (name == nil ? "" : "has a member name that ") + "holds U+0000 (\\u0000), which the server cannot store"
                + " (PostgreSQL's text and jsonb refuse it); leave it out or send another character"
        case .number(let text):
            // JSON's grammar allows any number; beyond a Double's range a reader gets infinity or fails.
            guard let value = Double(text), value.isFinite else {
                return "is \(text.count > 40 ? String(text.prefix(40)) + "..." : text), a number out of range: the most a number may be"
                    + " is about 1.8e308 in magnitude (a 64-bit floating point number); send it as a string if it must be exact"
            }
            return nil
        default:
            return nil
        }
    }

    /// The member `name` of `object`: present once, a string that ``idProblem(_:)`` accepts.
    private static func text(named name: String, in object: JSONNode, at prefix: JSONPath, what: String) throws(Invalid) -> String {
        let path = prefix.member(name)
        let found = object.members(named: name)
        guard found.count <= 1 else {
            throw Invalid(message: "\(path) appears \(found.count) times in the object; send it once", field: path.description)
        }
        guard case .string(let text)? = found.first else {
            let sent = found.first.map { ", not \($0.kind)" } ?? " (it is missing)"
            throw Invalid(message: "\(path) must be a non-empty string, \(what)\(sent)", field: path.description)
        }
        if let problem = idProblem(text) {
            throw Invalid(message: "\(path) \(problem)", field: path.description)
        }
        return text
    }

    private static func refuseRevision(in object: JSONNode, at prefix: JSONPath) throws(Invalid) {
        guard object.members(named: "revision").isEmpty else {
            let path = prefix.member("revision")
            throw Invalid(message: "\(path) is assigned by the server and may not be sent", field: path.description)
        }
    }

    private static let whitespace: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")]
}
