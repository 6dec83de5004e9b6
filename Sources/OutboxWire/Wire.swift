/// What crosses the wire between the engine and a server, spelled once for both halves: the
/// headers the engine sets and the server reads, the error codes a server answers with, and the
/// fields of its JSON bodies. See `Docs/wire.md` for the contract they make up.
public enum WireHeader {
    /// The operation id: the same on every attempt, so the server applies the write once.
    public static let idempotencyKey = "Idempotency-Key"
    /// Set to `true` on a response the server replayed from its claim.
    public static let idempotentReplayed = "Idempotent-Replayed"
    /// The business the write belongs to: part of the server's idempotency scope.
    public static let businessID = "X-Business-ID"
    /// The payload's schema version, so a server can accept an older shape.
    public static let payloadVersion = "Outbox-Payload-Version"
    public static let contentType = "Content-Type"
    /// The revision an edit started from, as an entity tag: `"<revision>"`.
    public static let ifMatch = "If-Match"
    /// A record's revision in a response, as an entity tag.
    public static let eTag = "ETag"
    public static let retryAfter = "Retry-After"
    /// On an answer to a write: the feed position from which its change is visible
    /// (``FeedPosition``'s text), taken inside the writing transaction and stored with the claim,
    /// so a replay carries it too.
    public static let visibleAt = "Outbox-Visible-At"
    /// On any answer: how long the server keeps an idempotency key's claim, in whole seconds. A
    /// client replays a write under its key only while its first attempt is younger than that.
    public static let claimRetention = "Outbox-Claim-Retention"
}

/// The `code` strings of error bodies (`{"code": ..., "message": ...}`) the contract names.
public enum WireErrorCode {
    /// The key was used with another payload.
    public static let idempotencyConflict = "idempotency_conflict"
    /// The first request with the key is still finalizing.
    public static let idempotencyInProgress = "idempotency_in_progress"
    /// The request carried no key, or a blank one.
    public static let idempotencyKeyRequired = "idempotency_key_required"
    /// The key cannot be one: too long, a control character, bytes that are not UTF-8, or the
    /// header sent more than once (400).
    public static let idempotencyKeyInvalid = "idempotency_key_invalid"
    /// The business id cannot be one: too long, a control character, bytes that are not UTF-8,
    /// or the header sent more than once (400).
    public static let businessIDInvalid = "business_id_invalid"
    /// `If-Match` is neither `*` nor a list of quoted entity tags, or it is sent more than once (400).
    public static let ifMatchInvalid = "if_match_invalid"
    /// The payload is invalid.
    public static let validationFailed = "validation_failed"
    /// The record changed since the revision the edit started from (with 409; 412 means the same).
    public static let revisionConflict = "revision_conflict"
    /// The feed cannot go on from the cursor sent (409, with a `reason` and the server's
    /// `epoch`): the client fetches a snapshot and starts again from its position.
    public static let resnapshotRequired = "resnapshot_required"
    /// A `GET /sync/changes` whose `limit` or `until` is not one (400): the message names it.
    public static let feedRequestInvalid = "feed_request_invalid"
}

/// The fields of the JSON bodies the contract names.
public enum WireBodyField {
    /// An error body's code (``WireErrorCode``).
    public static let code = "code"
    /// An error body's sentence for people.
    public static let message = "message"
    /// A 202's approval request id; ``approvalRequestID`` is accepted too.
    public static let requestID = "request_id"
    public static let approvalRequestID = "approval_request_id"
    /// A record's revision in a response, or the server's revision in a conflict.
    public static let serverRevision = "server_revision"
    /// The server's current record, in a conflict.
    public static let current = "current"
    /// An answer to a write of records (`Docs/records.md`, "The wire"): the record's revision
    /// now, the record as the server holds it, whether it was deleted, and which record it is.
    public static let revision = "revision"
    public static let record = "record"
    public static let deleted = "deleted"
    public static let type = "type"
    public static let id = "id"
    /// A feed page (`Docs/wire-feed.md`): its business, the cursor it started
    /// from and the one it ends at, whether more follow, how many changes it holds and their
    /// digest, the server's limits, and the changes.
    public static let business = "business"
    public static let from = "from"
    public static let cursor = "cursor"
    public static let hasMore = "has_more"
    public static let count = "count"
    public static let digest = "digest"
    public static let changes = "changes"
    public static let limits = "limits"
    /// A snapshot's or a summary's feed position, and a snapshot page's records.
    public static let position = "position"
    public static let records = "records"
    /// In a 409 `resnapshot_required`: why (``FeedResnapshot/Reason``), and the server's epoch.
    public static let reason = "reason"
    public static let epoch = "epoch"
    /// In a feed page's `limits`.
    public static let maxLimit = "max_limit"
    public static let maxPageBytes = "max_page_bytes"
    public static let tombstoneRetentionSeconds = "tombstone_retention_seconds"
}
