package import Foundation

/// What an answer's body says, read once by the package's strict reader (``JSONNode``): every
/// field the engine's disposition table, its record answers and the batch word read from a
/// server's answer to a write (`Docs/wire.md`, `Docs/records.md`).
///
/// The rules, decided here and nowhere else:
/// - **JSON**: the body is one JSON text as ``JSONNode/read(_:)`` reads it (any value, an empty
///   body none). A field is read from an object only, and only when it is there once: a name
///   written twice is not guessed between.
/// - **Text** (`code`, `message`, `request_id`): a non-empty string, or a number as written.
/// - **Revision** (`revision`, else `server_revision`): an unsigned integer that fits 64 bits,
///   or a string of its decimal digits (``revision(_:)``); `true`, `-1`, `1.5` or `"r7"` are none.
/// - **Record** (`record`, and a conflict's `current`): written again with its members in key
///   order (``JSONNode/sortedText()``), kept when that is at most ``maxRecordBytes``; `null`,
///   a record over the cap and one that names a member twice are not kept.
///
/// ```swift
/// let body = AnswerBody(Data(#"{"revision":"7","record":{"b":1,"a":2}}"#.utf8))
/// body.revision                          // 7
/// body.record.map { String(decoding: $0, as: UTF8.self) }   // {"a":2,"b":1}
/// ```
package struct AnswerBody: Sendable, Equatable {
    /// Whether the body is JSON at all (a captive portal's page is not).
    package var isJSON = false
    /// An error body's `code` (``WireErrorCode``) and `message`.
    package var code: String?
    package var message: String?
    /// A 202's approval request: `request_id`, else `approval_request_id`.
    package var approvalRequestID: String?
    /// `revision`, else `server_revision`.
    package var revision: UInt64?
    /// `record`: the record as the server now holds it, in key order, capped.
    package var record: Data?
    /// The answer sent a `record` (or a `current`) that is not kept: over the cap, or naming a
    /// member twice. What the server holds is then known only by pulling it.
    package var recordWithheld = false
    /// A conflict's `current`: the server's record, in key order, capped.
    package var current: Data?
    /// `deleted: true` (the literal; `"true"` or `1` is not a delete).
    package var deleted = false
    /// Which record the answer names, when it names one.
    package var type: String?
    package var id: String?

    /// The most of the server's record (`record` or `current`) an answer keeps: larger ones are
    /// not kept. `Docs/wire.md` promises it for a conflict's `current`.
    package static let maxRecordBytes = 64 << 10

    /// Reads `body`; what is not JSON leaves every field empty.
    package init(_ body: Data) {
        guard !body.isEmpty, let node = try? JSONNode.read(Array(body)) else { return }
        isJSON = true
        code = node.member(WireBodyField.code).flatMap(Self.text)
        message = node.member(WireBodyField.message).flatMap(Self.text)
        approvalRequestID = node.member(WireBodyField.requestID).flatMap(Self.text)
            ?? node.member(WireBodyField.approvalRequestID).flatMap(Self.text)
        revision = node.member(WireBodyField.revision).flatMap(Self.revision)
            ?? node.member(WireBodyField.serverRevision).flatMap(Self.revision)
        let sentRecord = node.member(WireBodyField.record)
        let sentCurrent = node.member(WireBodyField.current)
        record = sentRecord.flatMap(Self.kept)
        current = sentCurrent.flatMap(Self.kept)
        recordWithheld = (record == nil && sentRecord.map { $0 != .null } == true)
            || (current == nil && sentCurrent.map { $0 != .null } == true)
        deleted = node.member(WireBodyField.deleted) == .bool(true)
        if case .string(let text)? = node.member(WireBodyField.type) { type = text }
        if case .string(let text)? = node.member(WireBodyField.id) { id = text }
    }

    /// A revision: an unsigned integer within 64 bits, however the number is written (`7`,
    /// `7.0`, `7e0`; not `-1` or `7.5`), or a string of its decimal digits (`"7"`); `nil`
    /// otherwise (`true`, `"r7"`, `""`, `"7.0"`).
    package static func revision(_ node: JSONNode) -> UInt64? {
        switch node {
        case .number(let text): wholeNumber(text)
        case .string(let text): revision(digits: text)
        default: nil
        }
    }

    /// `text` as a revision when it is decimal digits only, within 64 bits (an entity tag's
    /// opaque part, say); `nil` otherwise.
    package static func revision(digits text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy(isDigit) else { return nil }
        return UInt64(text)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// The value of a JSON number as ``JSONNode`` keeps it (`-? int (.frac)? (e exp)?`) when it
    /// is a whole number from 0 to `UInt64.max`, worked out on its digits, never through a
    /// `Double`.
    private static func wholeNumber(_ text: String) -> UInt64? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { return nil }
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index += 1 }
        var digits: [UInt8] = []
        var fractionDigits = 0
        var inFraction = false
        while index < bytes.count, bytes[index] != UInt8(ascii: "e"), bytes[index] != UInt8(ascii: "E") {
            if bytes[index] == UInt8(ascii: "."), !inFraction {
                inFraction = true
            } else {
                guard isDigit(bytes[index]) else { return nil }
                digits.append(bytes[index])
                if inFraction { fractionDigits += 1 }
            }
            index += 1
        }
        var exponent = 0
        if index < bytes.count {
            index += 1
            let sign = index < bytes.count && bytes[index] == UInt8(ascii: "-") ? -1 : 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
            guard index < bytes.count else { return nil }
            // Held within a million: far past 64 bits either way, and no overflow.
            for byte in bytes[index...] {
                guard isDigit(byte) else { return nil }
                exponent = min(exponent * 10 + Int(byte - UInt8(ascii: "0")), 1_000_000)
            }
            exponent *= sign
        }
        guard !digits.isEmpty else { return nil }
        guard let first = digits.firstIndex(where: { $0 != UInt8(ascii: "0") }) else { return 0 }   // 0, -0, 0.0e5
        guard !negative else { return nil }
        var significant = Array(digits[first...])
        var shift = exponent - fractionDigits
        // Trailing zeros carry no value: 1.50 is 15e-1, 100 is 1e2.
        while significant.last == UInt8(ascii: "0") {
            significant.removeLast()
            shift += 1
        }
        guard shift >= 0, significant.count + shift <= 20 else { return nil }
        return UInt64(String(decoding: significant, as: UTF8.self) + String(repeating: "0", count: shift))
    }

    /// A non-empty string, or a number as written.
    private static func text(_ node: JSONNode) -> String? {
        switch node {
        case .string(let text) where !text.isEmpty, .number(let text): text
        default: nil
        }
    }

    /// A record as kept: in key order, within the cap; `nil` for `null`.
    private static func kept(_ node: JSONNode) -> Data? {
        guard node != .null, let text = node.sortedText(), text.count <= maxRecordBytes else { return nil }
        return Data(text)
    }
}
