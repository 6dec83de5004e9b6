/// Thrown by a write to answer a request without applying it and without keeping its claim:
/// a precondition that failed (`If-Match` naming a revision the record has moved past: 412),
/// a record that is not there (404), a body the write cannot take (422).
///
/// ```swift
/// let answer = try claims.handle(scope: scope, key: key, body: body) { txn in
///     let record = try txn.lockedRecord(id)
///     guard record.revision == expected else {
///         throw ClaimRefusal(.problem(status: 412, code: "revision_conflict", message: "..."))
///     }
///     // ... the update ...
/// }
/// // answer.outcome == .refused: answer.response is the 412, and no claim is left.
/// ```
///
/// The write's transaction rolls back (nothing it did commits), the claim is removed, and
/// ``IdempotencyClaims/handle(scope:key:body:whileClaimed:write:)`` answers `response` with the
/// outcome ``ClaimAnswer/Outcome/refused``. The response is not stored: the same key may come
/// again, with the same body, and run the write then (after a client rebased its edit on the
/// record's new revision, say). Only requests that reach the write are refused this way: a
/// completed claim for the key is answered from the claim first, so a copy of an applied request
/// is replayed, never refused by a record that has moved on since.
public struct ClaimRefusal: Error, Hashable, Sendable {
    /// The answer to send, exactly; not stored.
    public var response: ClaimResponse

    public init(_ response: ClaimResponse) {
        self.response = response
    }
}
