import OutboxWire

/// Error codes the engine itself records or recognizes in error bodies.
public enum ErrorCode {
    // Sent by servers in error bodies (`{"code": ..., "message": ...}`).
    public static let idempotencyConflict = WireErrorCode.idempotencyConflict
    public static let idempotencyInProgress = WireErrorCode.idempotencyInProgress
    public static let idempotencyKeyRequired = WireErrorCode.idempotencyKeyRequired
    public static let validationFailed = WireErrorCode.validationFailed
    public static let payloadCorrupt = "payload_corrupt"
    /// A stored endpoint the transport cannot send byte for byte (see `UnsendableEndpoint`).
    public static let endpointUnsendable = "endpoint_unsendable"
    public static let unauthorized = "unauthorized"
    public static let forbidden = "forbidden"
    public static let invalidResponse = "invalid_response"
    public static let approvalRejected = "approval_rejected"
}
