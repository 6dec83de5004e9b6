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
    /// by one: a body that is not such JSON, a field missing, of the wrong type or written twice
    /// (the message names it by its path, as `operations[2].payload`), a `payload_version` that
    /// is not a whole number in an `Int`'s range (`1.5`, `1e400`), a string holding half a UTF-16
    /// surrogate pair or bytes that are not UTF-8, no operation at all, an empty or repeated
    /// `operation_id` (compared byte for byte: the answer names each operation by it), or more
    /// than `maxOperations` operations. What one operation's own request would refuse (a blank key, an endpoint the
    /// server does not serve, a payload it cannot take) is that operation's answer, not the batch's.
    /// - Throws: ``BatchRefusal``: 400 `batch_invalid`, or 413 `batch_too_large`.
    public static func decoded(from body: Data, maxOperations: Int = defaultMaxOperations) throws(BatchRefusal) -> BatchRequest {
        precondition(maxOperations > 0, "maxOperations must be positive")
        let root: JSONNode
        do {
            root = try JSONNode.read(Array(body))
        } catch {
            if case .syntax = error.problem, error.path.isRoot { throw .invalid(error.message() + "; " + shape) }
            throw .invalid(error.message())
        }
        let batch = try BatchReading.batch(root)
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
        var seen: [ExactString: Int] = [:]
        for (index, operation) in batch.operations.enumerated() {
            if operation.operationID.isEmpty {
                throw .invalid("operations[\(index)].operation_id is empty: the answer names each operation by its id")
            }
            if let first = seen.updateValue(index, forKey: ExactString(operation.operationID)) {
                throw .invalid("operations[\(first)] and operations[\(index)] have the same operation_id "
                    + "\"\(operation.operationID)\": each operation of a batch needs its own")
            }
        }
        return batch
    }

    /// The batch's shape, for messages.
    static let shape = #"expected {"operations":[{"operation_id","idempotency_key","business_id","operation_type","method","#
        + #""endpoint","payload_version","base_revision" (optional),"payload" (base64)}, ...]}"#
}

/// Reads a batch from its JSON tree, naming every field at fault by its path.
private enum BatchReading {
    static func batch(_ root: JSONNode) throws(BatchRefusal) -> BatchRequest {
        guard case .object = root else { throw .invalid("the body must be an object, not \(root.kind); " + BatchRequest.shape) }
        let operations = try field("operations", of: root, at: .root)
        guard case .array(let elements) = operations else {
            throw .invalid("operations must be an array of operations, not \(operations.kind); " + BatchRequest.shape)
        }
        var read: [BatchOperation] = []
        read.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            read.append(try operation(element, at: JSONPath.root.member("operations").index(index)))
        }
        return BatchRequest(operations: read)
    }

    static func operation(_ node: JSONNode, at path: JSONPath) throws(BatchRefusal) -> BatchOperation {
        guard case .object = node else { throw .invalid("\(path) must be an object, not \(node.kind); " + BatchRequest.shape) }
        // Read in the order the fields are listed, so the first one at fault is named.
        let operationID = try string("operation_id", of: node, at: path)
        let idempotencyKey = try string("idempotency_key", of: node, at: path)
        let businessID = try string("business_id", of: node, at: path)
        let operationType = try string("operation_type", of: node, at: path)
        let method = try string("method", of: node, at: path)
        let endpoint = try string("endpoint", of: node, at: path)
        let payloadVersion = try wholeNumber("payload_version", of: node, at: path)
        let baseRevision: String?
        switch try optionalField("base_revision", of: node, at: path) {
        case nil, .null?: baseRevision = nil
        case .string(let text)?: baseRevision = text
        case let other?: throw .invalid("\(path.member("base_revision")) must be a string or absent, not \(other.kind)")
        }
        let payloadText = try string("payload", of: node, at: path, kind: "a base64 string")
        guard let payload = Data(base64Encoded: payloadText) else {
            throw .invalid("\(path.member("payload")) is not base64: the payload travels as its bytes in base64")
        }
        return BatchOperation(
            operationID: operationID, idempotencyKey: idempotencyKey, businessID: businessID, operationType: operationType,
            method: method, endpoint: endpoint, payloadVersion: payloadVersion, baseRevision: baseRevision, payload: payload)
    }

    /// The member `name`, present once.
    static func field(_ name: String, of object: JSONNode, at path: JSONPath) throws(BatchRefusal) -> JSONNode {
        guard let found = try optionalField(name, of: object, at: path) else {
            throw .invalid("\(path.member(name)) is missing; " + BatchRequest.shape)
        }
        return found
    }

    /// The member `name` if present; written twice, it is refused rather than guessed at.
    static func optionalField(_ name: String, of object: JSONNode, at path: JSONPath) throws(BatchRefusal) -> JSONNode? {
        let found = object.members(named: name)
        if found.count > 1 {
            throw .invalid("\(path.member(name)) appears \(found.count) times; send each field once")
        }
        return found.first
    }

    static func string(_ name: String, of object: JSONNode, at path: JSONPath, kind: String = "a string") throws(BatchRefusal) -> String {
        let value = try field(name, of: object, at: path)
        guard case .string(let text) = value else {
            throw .invalid("\(path.member(name)) must be \(kind), not \(value.kind); " + BatchRequest.shape)
        }
        return text
    }

    /// A whole number in digits, within what an `Int` holds: `1.5`, `1e2`, `9223372036854775808`
    /// and `1e400` are each refused, naming the field and what is wrong with the number.
    static func wholeNumber(_ name: String, of object: JSONNode, at path: JSONPath) throws(BatchRefusal) -> Int {
        let field = path.member(name)
        let value = try self.field(name, of: object, at: path)
        guard case .number(let text) = value else {
            throw .invalid("\(field) must be a whole number, not \(value.kind); " + BatchRequest.shape)
        }
        let shown = text.count > 40 ? String(text.prefix(40)) + "..." : text
        guard text.utf8.allSatisfy({ ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "-") }) else {
            if let number = Double(text), !number.isFinite {
                throw .invalid("\(field) is \(shown), a number out of range: it must be a whole number from \(Int.min) to \(Int.max)")
            }
            throw .invalid("\(field) is \(shown): it must be a whole number written in digits, like 1")
        }
        guard let number = Int(text) else {
            throw .invalid("\(field) is \(shown), out of range: it must be a whole number from \(Int.min) to \(Int.max)")
        }
        return number
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
