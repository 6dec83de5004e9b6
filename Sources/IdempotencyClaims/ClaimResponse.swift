public import Foundation
import OutboxWire

/// A response as a claim stores it and replays it: status, the headers that matter, body.
///
/// ```swift
/// ClaimResponse(
///     status: 201,
///     headers: [.init(name: "Content-Type", value: "application/json"),
///               .init(name: "Location", value: "/products/p-1")],
///     body: Data(#"{"id":"p-1","revision":1}"#.utf8)
/// )
/// ```
public struct ClaimResponse: Hashable, Sendable {
    /// One header line. Order is kept: a replay sends the headers in the stored order.
    public struct Header: Hashable, Sendable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The header a replay carries, with the value `true`.
    public static let replayedHeaderName = WireHeader.idempotentReplayed

    /// The HTTP status, e.g. 201.
    public var status: Int
    /// The header lines, in the order sent.
    public var headers: [Header]
    /// The body, byte for byte.
    public var body: Data

    public init(status: Int, headers: [Header] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of the header `name`, matched without regard to case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Keeps only the headers named in `names` (case-insensitively), in their order.
    func keepingHeaders(_ names: Set<String>) -> ClaimResponse {
        let lowered = Set(names.map { $0.lowercased() })
        var copy = self
        copy.headers = headers.filter { lowered.contains($0.name.lowercased()) }
        return copy
    }

    /// This response marked as a replay of a stored one.
    func markedReplayed() -> ClaimResponse {
        var copy = self
        copy.headers.append(Header(name: Self.replayedHeaderName, value: "true"))
        return copy
    }

    /// A JSON error body `{"code":"...","message":"..."}` with its status.
    ///
    /// ```swift
    /// ClaimResponse.problem(status: 409, code: "idempotency_conflict", message: "...")
    /// ```
    public static func problem(status: Int, code: String, message: String) -> ClaimResponse {
        let text = #"{"code":"# + JSONText.quoted(code) + #","message":"# + JSONText.quoted(message) + "}"
        return ClaimResponse(
            status: status,
            headers: [Header(name: "Content-Type", value: "application/json")],
            body: Data(text.utf8)
        )
    }
}

extension ClaimResponse {
    /// The one answer of an update or a delete whose `If-Match` names another revision than the
    /// record's: 412, its `ETag`, and a body with `code` (`revision_conflict`), `message`,
    /// `server_revision` and `current` (the record as the server holds it; `null` once deleted).
    /// Every server of the package answers a stale edit with it (`Docs/records.md`).
    /// - Parameters:
    ///   - current: the record's JSON as this server represents it; `nil` for a deleted record.
    ///   - message: this server's words for a person.
    package static func revisionConflict(revision: UInt64, current: Data?, message: String) -> ClaimResponse {
        var body = Data(("{" + JSONText.quoted(WireBodyField.code) + ":" + JSONText.quoted(WireErrorCode.revisionConflict)
            + "," + JSONText.quoted(WireBodyField.message) + ":" + JSONText.quoted(message)
            + "," + JSONText.quoted(WireBodyField.serverRevision) + ":" + JSONText.quoted(String(revision))
            + "," + JSONText.quoted(WireBodyField.current) + ":").utf8)
        body += current ?? Data("null".utf8)
        body += Data("}".utf8)
        return ClaimResponse(status: 412, headers: [Header(name: "Content-Type", value: "application/json"),
                                                    Header(name: WireHeader.eTag, value: "\"\(revision)\"")], body: body)
    }
}

extension String {
    func caseInsensitiveEquals(_ other: String) -> Bool {
        utf8.count == other.utf8.count && lowercased() == other.lowercased()
    }
}

/// Writes JSON text by hand where the shape is fixed and small.
package enum JSONText {
    /// `text` as a JSON string literal, quotes included (RFC 8259 escaping).
    package static func quoted(_ text: String) -> String { JSONNode.quoted(text) }
}
