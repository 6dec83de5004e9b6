import Foundation

extension OutboxRequest {
    /// The payload limit unless the configuration says otherwise: 1 MiB. Attachments do not
    /// belong in the outbox.
    public static let defaultMaxPayloadBytes = 1 << 20

    /// The methods of a write.
    public static let allowedMethods: Set<String> = ["POST", "PUT", "PATCH", "DELETE"]

    /// The longest text a field other than the payload may hold, in UTF-8 bytes.
    public static let maxFieldBytes = 1024

    /// The longest endpoint, in UTF-8 bytes.
    public static let maxEndpointBytes = 2048

    /// Checks every field before anything is written.
    ///
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` naming the first field at fault
    ///   and how to fix it. The payload's content is never quoted.
    public func validate(maxPayloadBytes: Int = OutboxRequest.defaultMaxPayloadBytes) throws(OutboxError) {
        try Self.requireText(businessID, field: "businessID", example: "the business's id")
        try Self.requireText(operationType, field: "operationType", example: "\"product.create\"")
        if operationType.unicodeScalars.contains(where: { $0.properties.isWhitespace }) {
            throw .invalidRequest(field: "operationType", problem: "must not contain white space, like \"product.create\"")
        }
        guard Self.allowedMethods.contains(method) else {
            throw .invalidRequest(
                field: "method",
                problem: "must be one of POST, PUT, PATCH or DELETE (upper case); got \"\(method.prefix(16))\""
            )
        }
        try Self.validateEndpoint(endpoint)
        guard payload.count <= maxPayloadBytes else {
            throw .invalidRequest(
                field: "payload",
                problem: "is \(payload.count) bytes, over the limit of \(maxPayloadBytes); send attachments outside the outbox"
            )
        }
        do {
            try JSONSyntax.validate(payload)
        } catch {
            throw .invalidRequest(field: "payload", problem: "must be JSON: \(error)")
        }
        if let entityID {
            try Self.requireText(entityID, field: "entityID", example: "the record's id, or nil for a lane of its own")
        }
        try Self.requireText(category, field: "category", example: "the Sync tab card, like \"Products\"")
        try Self.limitText(entityLabel, field: "entityLabel")
        try Self.limitText(summary, field: "summary")
        guard payloadVersion >= 1 && payloadVersion <= Int(UInt32.max) else {
            throw .invalidRequest(field: "payloadVersion", problem: "must be 1 or more; got \(payloadVersion)")
        }
    }

    private static func requireText(_ text: String, field: String, example: String) throws(OutboxError) {
        if text.isEmpty || text.allSatisfy(\.isWhitespace) {
            throw .invalidRequest(field: field, problem: "must not be empty; give \(example)")
        }
        try limitText(text, field: field)
    }

    private static func limitText(_ text: String, field: String) throws(OutboxError) {
        if text.utf8.count > maxFieldBytes {
            throw .invalidRequest(field: field, problem: "is \(text.utf8.count) bytes, over the limit of \(maxFieldBytes)")
        }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw .invalidRequest(field: field, problem: "must not contain control characters")
        }
    }

    private static func validateEndpoint(_ endpoint: String) throws(OutboxError) {
        let fix = "must be a path on the server starting with \"/\", like \"/products\""
        guard endpoint.hasPrefix("/"), !endpoint.hasPrefix("//") else {
            throw .invalidRequest(field: "endpoint", problem: "\(fix); got \"\(endpoint.prefix(64))\"")
        }
        guard endpoint.utf8.count <= maxEndpointBytes else {
            throw .invalidRequest(field: "endpoint", problem: "is over the limit of \(maxEndpointBytes) bytes")
        }
        guard !endpoint.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }),
            let components = URLComponents(string: endpoint),
            components.scheme == nil, components.host == nil, components.fragment == nil
        else {
            throw .invalidRequest(field: "endpoint", problem: "\(fix), percent-encoded, without a fragment; got \"\(endpoint.prefix(64))\"")
        }
    }
}
