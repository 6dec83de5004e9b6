package import Foundation
package import OutboxWire

/// What an answer says of a record a write changed: its revision, the record as the server now
/// holds it, whether it was deleted, and which record it is when the answer names one.
///
/// The wire (`Docs/records.md`): a 2xx body with `revision` (an unsigned integer, or a string of
/// its digits; else the `ETag`'s), `record` (the record, JSON), `deleted: true` for a delete, and
/// optionally `type` and `id`; a 412's `server_revision` and `current`. The body is read by
/// ``AnswerBody``, its rules (the revision's, the record's cap) decided there.
package struct RecordAnswer: Sendable, Equatable {
    package var revision: UInt64?
    /// The record's JSON, as the engine stores it (its members re-encoded in key order), when
    /// within ``AnswerBody/maxRecordBytes``: a larger one is not kept.
    package var record: Data?
    /// The answer sent a record that is not kept (``AnswerBody/recordWithheld``): the value
    /// the server holds at ``revision`` is not known until a pull brings it.
    package var recordWithheld = false
    package var deleted = false
    package var type: String?
    package var id: String?
    /// Where the change is visible in the server's change feed (`Outbox-Visible-At`): a pull
    /// whose cursor reaches it has brought the change back. `nil`: the answer named none, or a
    /// position that is not one.
    package var visibleAt: FeedPosition?

    package init(_ response: TransportResponse) {
        if let tag = response.header(WireHeader.eTag) { revision = AnswerBody.revision(digits: DispositionTable.entityTagValue(tag)) }
        visibleAt = response.header(WireHeader.visibleAt).flatMap { try? FeedPosition(text: $0) }
        // The body read by the one reader the disposition table reads it with too.
        let body = AnswerBody(response.body)
        if let said = body.revision { revision = said }
        deleted = body.deleted
        type = body.type
        id = body.id
        record = body.record ?? body.current
        recordWithheld = record == nil && body.recordWithheld
    }
}
