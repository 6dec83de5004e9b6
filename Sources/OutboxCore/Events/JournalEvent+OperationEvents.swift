// The bodies of the events that belong to one operation: its write, attempts and outcomes,
// and what a person or the engine decided about it.

public import Foundation
package import OutboxCrypto
package import OutboxWire

/// A write became durable on the device. Its operation id is the idempotency key.
package struct Enqueued: Sendable, Equatable {
    /// The request, payload included, exactly as it will be sent. In an encrypted journal read
    /// without its key, the payload, entity label and summary are empty. Its `operationID` is
    /// the event's; it is not stored twice.
    package var request: OutboxRequest
    /// SHA-256 of ``OutboxRequest/payload``: checked before every send.
    package var requestHash: SHA256Digest
    /// The account the write was made under; it is never sent under another.
    package var account: String
    /// The payload and presentation as stored when the journal is encrypted at rest.
    package var sealed: SealedRequest?
    /// The row this operation replaces, when it corrects, resolves or coalesces one: the other
    /// row's `superseded` event lands in the same commit.
    package var supersedes: Supersession?
    /// The member's records the write changes (format 3), in the order given: their overlays
    /// land in the same commit as this event.
    package var changes: [RecordWrite]
    /// For a write whose `If-Match` comes from a record's base (``OutboxRequest/revisionFrom``):
    /// the base's revision when the member made the change (format 4). A pull that brings another
    /// device's revision beneath the write before it is sent leaves it sent against this one, so
    /// the server answers 412 instead of the write overwriting a change the member never saw.
    package var basisRevision: UInt64?
    /// The journal's connected clock when the write was made (format 5): the seconds a route to
    /// the server had been seen, over the journal's life (``EngineState/connectedClock(at:)``).
    /// A write's connected age is the clock now less this. `nil` in older records.
    package var connectedClock: Double?
    /// For a write imported from an export (format 6): when its first attempt started in the
    /// journal it was exported from. The server's claim on its key is that old, so the claims
    /// retention counts from it, not from the import. `nil` for every other write.
    package var firstSentAt: Date?
    /// The files the write carries (format 7), each durable in the journal's directory before
    /// this event: the write is sent only once each is uploaded and completed.
    package var attachments: [AttachmentManifest]

    package init(
        request: OutboxRequest, requestHash: SHA256Digest, account: String, sealed: SealedRequest? = nil,
        supersedes: Supersession? = nil, changes: [RecordWrite] = [], basisRevision: UInt64? = nil, connectedClock: Double? = nil,
        firstSentAt: Date? = nil, attachments: [AttachmentManifest] = []
    ) {
        self.attachments = attachments
        self.connectedClock = connectedClock
        self.firstSentAt = firstSentAt
        self.request = request
        self.requestHash = requestHash
        self.account = account
        self.sealed = sealed
        self.supersedes = supersedes
        self.changes = changes
        self.basisRevision = basisRevision
    }
}

/// What an operation that replaces another keeps of it.
package struct Supersession: Sendable, Equatable {
    /// The row replaced.
    package var operation: OperationID
    package var reason: SupersedeReason
    /// The replaced row's place in its lane, which the new operation takes: ahead of later
    /// writes to the same entity.
    package var laneSeq: JournalSequence

    package init(operation: OperationID, reason: SupersedeReason, laneSeq: JournalSequence) {
        self.operation = operation
        self.reason = reason
        self.laneSeq = laneSeq
    }
}

/// A reading of the device's monotonic clock: seconds since the device booted, and which boot.
public struct Uptime: Sendable, Equatable, Hashable {
    /// Seconds since boot, by a clock that never goes back within one boot.
    public var seconds: Double
    /// The boot: a new one after every restart of the device.
    public var bootID: UUID

    public init(seconds: Double, bootID: UUID) {
        self.seconds = seconds
        self.bootID = bootID
    }
}

/// A request's private fields, sealed with the journal's key (ChaChaPoly, the operation id as
/// associated data): the payload, and the entity label with the summary.
package struct SealedRequest: Sendable, Equatable {
    /// What sealing adds to each value: a 12-byte nonce and a 16-byte tag.
    package static let overheadBytes = 28

    package var payload: [UInt8]
    package var presentation: [UInt8]

    package init(payload: [UInt8], presentation: [UInt8]) {
        self.payload = payload
        self.presentation = presentation
    }
}

/// An attempt to send began. Durable before the request leaves the device.
package struct AttemptStarted: Sendable, Equatable {
    package var attempt: AttemptNumber
    /// What woke the worker.
    package var trigger: WakeReason
    /// The revision sent in `If-Match` when it was taken from a record's server base as the
    /// attempt started (``OutboxRequest/revisionFrom``; format 3): the proof of what was sent.
    package var sentRevision: String?

    package init(attempt: AttemptNumber, trigger: WakeReason, sentRevision: String? = nil) {
        self.attempt = attempt
        self.trigger = trigger
        self.sentRevision = sentRevision
    }
}

/// An attempt ended with an outcome, and the engine decided what follows.
///
/// Its fields are the attempt's ``Classification`` (what came back and what it means) and the
/// schedule that follows; each is declared once, on the classification, and read through here
/// (`finished.errorCode`).
@dynamicMemberLookup
package struct AttemptFinished: Sendable, Equatable {
    package var attempt: AttemptNumber
    /// What came back and what the engine decided from it.
    package var classification: Classification
    /// When the next attempt is due, for a rescheduled row.
    package var nextAttemptAt: Date?
    /// The server's current record (``Classification/serverCurrent``) as stored when the journal
    /// is encrypted at rest: sealed, the plaintext field then empty.
    package var sealedServerCurrent: [UInt8]?
    /// What the answer confirmed of the records the write changed (format 3): each revision and
    /// value hash, the trail of the records' server base, which holds the values.
    package var confirmations: [RecordConfirmation] = []
    /// Where the server's change feed shows the write (format 4, `Outbox-Visible-At`): the
    /// member's change stays on screen until a pull reaches it. `nil`: the answer named none.
    package var visibleAt: FeedPosition?
    /// For an acknowledgement (accepted, replayed, pending approval; format 5): how long the
    /// write had waited while a route to the server was seen, its connected age, in seconds.
    package var connectedAgeSeconds: Double?

    package subscript<Value>(dynamicMember field: WritableKeyPath<Classification, Value>) -> Value {
        get { classification[keyPath: field] }
        set { classification[keyPath: field] = newValue }
    }

    /// The event recording attempt `attempt` as classified, due again at `nextAttemptAt`.
    package init(attempt: AttemptNumber, _ classification: Classification, nextAttemptAt: Date?, sealedServerCurrent: [UInt8]? = nil) {
        self.attempt = attempt
        self.classification = classification
        self.nextAttemptAt = nextAttemptAt
        self.sealedServerCurrent = sealedServerCurrent
    }

    package init(
        attempt: AttemptNumber,
        outcome: AttemptOutcome,
        disposition: Disposition,
        errorCode: String? = nil,
        errorMessage: String? = nil,
        retryAfter: Date? = nil,
        approvalRequestID: String? = nil,
        serverRevision: String? = nil,
        nextAttemptAt: Date? = nil
    ) {
        self.init(
            attempt: attempt,
            Classification(
                outcome: outcome, disposition: disposition, errorCode: errorCode, errorMessage: errorMessage,
                retryAfter: retryAfter, approvalRequestID: approvalRequestID, serverRevision: serverRevision
            ),
            nextAttemptAt: nextAttemptAt
        )
    }
}

/// An attempt that started has no outcome because the process ended; written at the next open.
/// The row is due at once and replayed under the same key.
package struct AttemptAbandoned: Sendable, Equatable {
    package var attempt: AttemptNumber

    package init(attempt: AttemptNumber) {
        self.attempt = attempt
    }
}

/// An inline save the server rejected as invalid: the form shows the error, and the operation
/// never existed for the member.
package struct Withdrawn: Sendable, Equatable {
    package var errorCode: String
    package var errorMessage: String

    package init(errorCode: String, errorMessage: String) {
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}

/// A failed or blocked row was put back in the queue, due at once.
package struct Requeued: Sendable, Equatable {
    package var requestedBy: Requester

    package init(requestedBy: Requester) {
        self.requestedBy = requestedBy
    }
}

/// A row was dropped. Its payload stays readable in the history.
package struct Discarded: Sendable, Equatable {
    package var requestedBy: Requester
    package var reason: DiscardReason

    package init(requestedBy: Requester, reason: DiscardReason) {
        self.requestedBy = requestedBy
        self.reason = reason
    }
}

/// Someone approved or rejected a write the server held for approval.
package struct ApprovalDecided: Sendable, Equatable {
    package var approved: Bool
    /// The decision's reference, when the app has one.
    package var reference: String?

    package init(approved: Bool, reference: String?) {
        self.approved = approved
        self.reference = reference
    }
}

/// A row was replaced by another operation: a correction, a conflict resolved keeping the
/// member's version, or a newer write coalescing it. Its payload stays in the history; the
/// operation that replaces it names it back (`Enqueued/supersedes`). Both land in one commit.
package struct Superseded: Sendable, Equatable {
    /// The operation that replaces it.
    package var by: OperationID
    package var reason: SupersedeReason

    package init(by: OperationID, reason: SupersedeReason) {
        self.by = by
        self.reason = reason
    }
}

/// A conflicted row is sent again under the same operation and key, against the server's
/// revision: its type's conflict rule rebases it (for whole-record drafts one member owns).
package struct Rebased: Sendable, Equatable {
    /// The revision the next attempt sends in `If-Match`.
    package var baseRevision: String

    package init(baseRevision: String) {
        self.baseRevision = baseRevision
    }
}

/// A write this row depends on ended without being applied (discarded or withdrawn): the row
/// cannot be sent as it is and waits for a person.
package struct DependencyEnded: Sendable, Equatable {
    /// The dependency, as the row names it (the end of its chain of replacements ended).
    package var dependency: OperationID
    /// How that chain ended.
    package var status: OutboxStatus

    package init(dependency: OperationID, status: OutboxStatus) {
        self.dependency = dependency
        self.status = status
    }
}

/// A queued write was not sent again: its first attempt is older than the server keeps its
/// idempotency claims (less a margin), so the server may have forgotten the key and apply it a
/// second time. It is blocked (code `claim_may_be_forgotten`) for a person to check whether it
/// landed, then resend it (`retry`) or correct it under a new key (`revise`), or discard it.
package struct ClaimMayBeForgotten: Sendable, Equatable {
    /// When its first attempt started.
    package var firstAttemptAt: Date
    /// The retention the engine judged it by, in seconds (the server's, less the margin).
    package var retentionSeconds: Double

    package init(firstAttemptAt: Date, retentionSeconds: Double) {
        self.firstAttemptAt = firstAttemptAt
        self.retentionSeconds = retentionSeconds
    }
}
