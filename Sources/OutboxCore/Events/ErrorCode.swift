import OutboxWire

/// Error codes the engine itself records or recognizes in error bodies.
package enum ErrorCode {
    // Sent by servers in error bodies (`{"code": ..., "message": ...}`).
    package static let idempotencyConflict = WireErrorCode.idempotencyConflict
    package static let idempotencyInProgress = WireErrorCode.idempotencyInProgress
    package static let idempotencyKeyRequired = WireErrorCode.idempotencyKeyRequired
    package static let validationFailed = WireErrorCode.validationFailed
    package static let payloadCorrupt = "payload_corrupt"
    /// A stored endpoint the transport cannot send byte for byte (see `URLSessionTransport.UnsendableEndpoint`).
    package static let endpointUnsendable = "endpoint_unsendable"
    package static let unauthorized = "unauthorized"
    package static let forbidden = "forbidden"
    package static let invalidResponse = "invalid_response"
    package static let approvalRejected = "approval_rejected"
    /// A 409 whose body says the record changed elsewhere (a 412 means the same).
    package static let revisionConflict = "revision_conflict"
    /// The engine's code for a precondition that failed (412 without a body code).
    package static let preconditionFailed = "precondition_failed"
    /// A transient failure past the retry policy's limits.
    package static let gaveUp = "gave_up"
    /// A write this one depends on ended discarded or withdrawn: it cannot be sent as it is.
    package static let dependencyEnded = "dependency_ended"
    /// A write of a record made on top of an earlier one that was rolled back.
    package static let builtOnRolledBack = "built_on_rolled_back"
    /// The record a waiting write changes was deleted on the server (a pulled tombstone).
    package static let deletedOnServer = "deleted_on_server"
    /// A write first sent longer ago than the server keeps its idempotency claims: sent again
    /// under its key, the server may have forgotten it and apply it a second time.
    package static let claimMayBeForgotten = "claim_may_be_forgotten"
    /// The server or the object store refused an attachment (not an expired grant).
    package static let attachmentRefused = "attachment_refused"
    /// An attachment's local file is missing or its bytes no longer hash to its manifest's.
    package static let attachmentDamaged = "attachment_damaged"
    /// The server completed an object whose size or SHA-256 is not the file's.
    package static let attachmentMismatch = "attachment_mismatch"
    /// A discard by a person, and a discard keeping the server's version of a conflict.
    package static let discarded = "discarded"
    package static let serverVersionKept = "server_version_kept"

    // The engine's codes for failures it sends again by itself.

    package static let offline = "offline"
    package static let cancelled = "cancelled"
    package static let noResponse = "no_response"
    /// 408 or a 5xx whose body carried no code.
    package static let serverUnavailable = "server_unavailable"
    package static let rateLimited = "rate_limited"
    /// A 1xx or 3xx: never guessed synced.
    package static let unexpectedStatus = "unexpected_status"

    // The engine's codes for a 4xx whose body carried none (a proxy's page, say): one per status.

    package static let badRequest = "bad_request"
    package static let notFound = "not_found"
    package static let gone = "gone"
    package static let payloadTooLarge = "payload_too_large"

    /// The code of a 4xx whose body carried none: its own per status, `http_<status>` for a
    /// status not named here.
    package static let statusCodes: [Int: String] = [
        400: badRequest, 404: notFound, 405: "method_not_allowed", 406: "not_acceptable", 409: "conflict", 410: gone,
        411: "length_required", 413: payloadTooLarge, 414: "uri_too_long", 415: "unsupported_media_type",
        422: validationFailed, 431: "headers_too_large",
    ]

    package static func forStatus(_ status: Int) -> String {
        statusCodes[status] ?? "http_\(status)"
    }
}
