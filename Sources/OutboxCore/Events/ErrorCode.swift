/// Error codes the engine itself records or recognizes in error bodies.
public enum ErrorCode {
    // Sent by servers in error bodies (`{"code": ..., "message": ...}`).
    public static let idempotencyConflict = "idempotency_conflict"
    public static let idempotencyInProgress = "idempotency_in_progress"
    public static let idempotencyKeyRequired = "idempotency_key_required"
    public static let validationFailed = "validation_failed"
    public static let payloadCorrupt = "payload_corrupt"
    /// A stored endpoint the transport cannot send byte for byte (see `UnsendableEndpoint`).
    public static let endpointUnsendable = "endpoint_unsendable"
    public static let unauthorized = "unauthorized"
    public static let forbidden = "forbidden"
    public static let invalidResponse = "invalid_response"
    public static let approvalRejected = "approval_rejected"
}
