public import Foundation

extension WireErrorCode {
    /// A `POST /sync/batch` body that is not a batch (400): not JSON, a field missing or of the
    /// wrong type, no operation, two operations with one id.
    public static let batchInvalid = "batch_invalid"
    /// A batch of more operations than the server takes at once (413): split it and send again.
    public static let batchTooLarge = "batch_too_large"
}

extension WireBodyField {
    /// In a 413 `batch_too_large`: the most operations the server takes in one batch.
    public static let maxOperations = "max_operations"
}

extension BatchRequest {
    /// The most operations a server takes in one batch unless configured otherwise.
    public static let defaultMaxOperations = 100

    /// Reads a `POST /sync/batch` body, checking what must hold before any operation is looked at.
    ///
    /// ```swift
    /// do {
    ///     let batch = try BatchRequest.decoded(from: request.body, maxOperations: 100)
    ///     // answer each operation on its own
    /// } catch {
    ///     respond(status: error.status, json: error.body)   // 400 or 413, for the batch as a whole
    /// }
    /// ```
    ///
    /// What is refused here refuses the whole batch, since its operations cannot be answered one
    /// by one: a body that is not such JSON, a field missing or of the wrong type (the message
    /// names it, as `operations[2].payload`), no operation at all, an empty or repeated
    /// `operation_id` (the answer names each operation by it), or more than `maxOperations`
    /// operations. What one operation's own request would refuse (a blank key, an endpoint the
    /// server does not serve, a payload it cannot take) is that operation's answer, not the batch's.
    /// - Throws: ``BatchRefusal``: 400 `batch_invalid`, or 413 `batch_too_large`.
    public static func decoded(from body: Data, maxOperations: Int = defaultMaxOperations) throws(BatchRefusal) -> BatchRequest {
        precondition(maxOperations > 0, "maxOperations must be positive")
        let batch: BatchRequest
        do {
            batch = try JSONDecoder().decode(BatchRequest.self, from: body)
        } catch let error as DecodingError {
            throw .invalid(Self.describe(error))
        } catch {
            throw .invalid("the body is not a batch: \(error)")
        }
        if batch.operations.isEmpty {
            throw .invalid(#"a batch holds at least one operation: "operations" is empty"#)
        }
        if batch.operations.count > maxOperations {
            throw BatchRefusal(
                status: 413, code: WireErrorCode.batchTooLarge,
                message: "this batch holds \(batch.operations.count) operations; the most this server takes at once is "
                    + "\(maxOperations): split it and send the parts",
                maxOperations: maxOperations)
        }
        var seen: [String: Int] = [:]
        for (index, operation) in batch.operations.enumerated() {
            if operation.operationID.isEmpty {
                throw .invalid("operations[\(index)].operation_id is empty: the answer names each operation by its id")
            }
            if let first = seen.updateValue(index, forKey: operation.operationID) {
                throw .invalid("operations[\(first)] and operations[\(index)] have the same operation_id "
                    + "\"\(operation.operationID)\": each operation of a batch needs its own")
            }
        }
        return batch
    }

    /// A decoding error in words, naming the field by its path in the body.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let keys = codingPath + (last.map { [$0] } ?? [])
            guard !keys.isEmpty else { return "the body" }
            return keys.enumerated().map { index, key in
                if let number = key.intValue { return "[\(number)]" }
                return index == 0 ? key.stringValue : "." + key.stringValue
            }.joined()
        }
        let shape = #"expected {"operations":[{"operation_id","idempotency_key","business_id","operation_type","method","#
            + #""endpoint","payload_version","base_revision" (optional),"payload" (base64)}, ...]}"#
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath, key)) is missing; " + shape
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            return "\(path(context.codingPath)) must be \(Self.kind(of: type)); " + shape
        case .dataCorrupted(let context) where context.codingPath.last?.stringValue == BatchOperation.CodingKeys.payload.rawValue:
            return "\(path(context.codingPath)) is not base64: the payload travels as its bytes in base64"
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return "the body is not JSON; " + shape
        case .dataCorrupted(let context):
            return "\(path(context.codingPath)) cannot be read: \(context.debugDescription)"
        @unknown default:
            return "the body is not a batch; " + shape
        }
    }

    private static func kind(of type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type: "a whole number"
        case is Data.Type: "a base64 string"
        case is [BatchOperation].Type: "an array of operations"
        case is [Any].Type: "an array"
        default: "an object"
        }
    }
}

/// Why a server answers a whole batch without answering its operations: 400 `batch_invalid`
/// or 413 `batch_too_large` (see ``BatchRequest/decoded(from:maxOperations:)``).
public struct BatchRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    /// 400 or 413.
    public var status: Int
    /// ``WireErrorCode/batchInvalid`` or ``WireErrorCode/batchTooLarge``.
    public var code: String
    /// What is wrong, and what to fix.
    public var message: String
    /// The most operations the server takes at once, on a 413 for too many.
    public var maxOperations: Int?

    public init(status: Int, code: String, message: String, maxOperations: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.maxOperations = maxOperations
    }

    static func invalid(_ message: String) -> BatchRefusal {
        BatchRefusal(status: 400, code: WireErrorCode.batchInvalid, message: message)
    }

    /// The JSON error body: `{"code":...,"max_operations":...,"message":...}` (`max_operations`
    /// on a 413 for too many operations only), sent with `Content-Type: application/json`.
    public var body: Data {
        struct Body: Encodable {
            var code: String
            var message: String
            var maxOperations: Int?

            enum CodingKeys: String, CodingKey {
                case code, message
                case maxOperations = "max_operations"
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // A struct of two strings and an optional integer always encodes.
        return (try? encoder.encode(Body(code: code, message: message, maxOperations: maxOperations))) ?? Data()
    }

    public var description: String { "\(status) \(code): \(message)" }
}
