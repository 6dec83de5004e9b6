import Foundation
import IdempotencyClaims
import OutboxCrypto

/// A ``ClaimRecord`` as a row of `idempotency_keys`, and back.
enum ClaimRow {
    static let keyColumns = "business_id, operation_type, key"
    /// The condition on the key columns, with the key bound as ``key(_:)`` binds it ($1 to $3).
    static let matchesKey = "business_id = $1 AND operation_type = $2 AND key = $3"
    /// The record's columns, in the order ``values(_:)`` binds them and ``record(_:)`` reads them.
    static let columns = "fingerprint, status, token, lease_expires_at, taken_at, completed_at, "
        + "response_status, response_headers, response_body"
    static let placeholders = (1...12).map { "$\($0)" }.joined(separator: ", ")
    /// ``placeholders`` with each column's type, for an `INSERT ... SELECT` (where a `NULL`
    /// parameter has no column to take its type from).
    static let typedPlaceholders = ["text", "text", "text", "bytea", "text", "uuid", "timestamptz", "timestamptz",
                                    "timestamptz", "integer", "jsonb", "bytea"]
        .enumerated().map { "$\($0.offset + 1)::\($0.element)" }.joined(separator: ", ")
    static let updates = columns.split(separator: ",").map { column in
        let name = column.trimmingCharacters(in: .whitespaces)
        return "\(name) = EXCLUDED.\(name)"
    }.joined(separator: ", ")

    static let inProgress = "in_progress"
    static let completed = "completed"

    static func key(_ id: ClaimID) -> [PostgresValue] {
        [.text(id.scope.businessID), .text(id.scope.operationType), .text(id.key.rawValue)]
    }

    /// Names the claim for the advisory lock its takers share: the SHA-256, in hex, of its three
    /// parts, each after its length, so that no two claims compose one name.
    static func lockName(_ id: ClaimID) -> String {
        let parts = [id.scope.businessID, id.scope.operationType, id.key.rawValue].flatMap { part -> [[UInt8]] in
            let bytes = Array(part.utf8)
            return [withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { Array($0) }, bytes]
        }
        return SHA256Digest(ofConcatenated: parts).hex
    }

    static func values(_ record: ClaimRecord) -> [PostgresValue] {
        let common: [PostgresValue] = [.bytes(Data(record.fingerprint.bytes))]
        switch record.state {
        case .inProgress(let token, let leaseExpiresAt):
            return common + [
                .text(inProgress), .uuid(token.uuid), .timestamp(leaseExpiresAt), .timestamp(record.takenAt), .null,
                .null, .null, .null,
            ]
        case .completed(let response, let completedAt):
            return common + [
                .text(completed), .null, .null, .timestamp(record.takenAt), .timestamp(completedAt),
                .int32(Int32(clamping: response.status)), .jsonb(headersJSON(response.headers)), .bytes(response.body),
            ]
        }
    }

    static func record(_ row: PostgresRow) throws -> ClaimRecord {
        guard let fingerprint = SHA256Digest(bytes: Array(try row.bytes(0))) else {
            throw PostgresError(.decoding, message: "a stored claim's fingerprint is not 32 bytes")
        }
        let takenAt = try row.timestamp(4)
        let state: ClaimRecord.State
        switch try row.text(1) {
        case inProgress:
            state = .inProgress(token: ClaimToken(uuid: try row.uuid(2)), leaseExpiresAt: try row.timestamp(3))
        case completed:
            let response = ClaimResponse(
                status: Int(try row.int32(6)), headers: try headers(fromJSON: row.jsonb(7)), body: try row.bytes(8))
            state = .completed(response: response, completedAt: try row.timestamp(5))
        case let other:
            throw PostgresError(.decoding, message: "a stored claim has the unknown status '\(other)'")
        }
        return ClaimRecord(fingerprint: fingerprint, takenAt: takenAt, state: state)
    }

    private struct HeaderJSON: Codable {
        var name: String
        var value: String
    }

    /// `[{"name":...,"value":...}, ...]`, in order: jsonb keeps an array's order.
    static func headersJSON(_ headers: [ClaimResponse.Header]) -> String {
        "[" + headers.map { #"{"name":"# + JSONText.quoted($0.name) + #","value":"# + JSONText.quoted($0.value) + "}" }
            .joined(separator: ",") + "]"
    }

    static func headers(fromJSON text: String) throws -> [ClaimResponse.Header] {
        do {
            return try JSONDecoder().decode([HeaderJSON].self, from: Data(text.utf8)).map { .init(name: $0.name, value: $0.value) }
        } catch {
            throw PostgresError(.decoding, message: "a stored claim's response_headers are not [{\"name\",\"value\"}]: \(error)")
        }
    }
}
