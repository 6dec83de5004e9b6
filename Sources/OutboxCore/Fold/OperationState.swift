public import Foundation
public import OutboxCrypto

/// Everything an outbox row needs, folded from the operation's events.
///
/// The payload itself is not part of the state: it lives once, in the `enqueued` event, and is
/// read from there when a request is sent or shown.
public struct OperationState: Sendable, Equatable {
    public var id: OperationID
    public var status: OutboxStatus

    // The request, as enqueued (without its payload).
    public var businessID: String
    public var operationType: String
    public var method: String
    public var endpoint: String
    public var entityID: String?
    public var category: String
    public var entityLabel: String
    public var summary: String
    public var payloadVersion: Int
    public var payloadByteCount: Int
    public var requestHash: SHA256Digest
    /// The account the write was made under.
    public var account: String
    /// The entity label and summary, sealed, in an encrypted journal (where ``entityLabel`` and
    /// ``summary`` are empty): opened with the journal's key when shown.
    public var sealedPresentation: [UInt8]?

    /// When it was enqueued (device clock, display only).
    public var createdAt: Date
    /// Attempts started so far.
    public var attemptCount: Int
    /// When a queued row is next due; `nil` means due now.
    public var nextAttemptAt: Date?
    /// When the latest attempt started.
    public var lastAttemptAt: Date?
    /// The latest attempt's outcome, as recorded.
    public var lastOutcome: AttemptOutcome?
    /// The latest outcome in the ledger's words.
    public var latestOutcome: OutcomeCategory?
    public var lastErrorCode: String?
    public var lastErrorMessage: String?
    /// The request id of a 202 that holds the write for approval.
    public var approvalRequestID: String?
    /// The record's revision, when the server returned one.
    public var serverRevision: String?

    /// The seq of the operation's `enqueued` event: its place in the queue.
    public var firstSeq: JournalSequence
    /// The seq of its latest event.
    public var latestSeq: JournalSequence
    /// The seqs of its events in the journal, oldest first: its history, kept with the state so
    /// that reading it takes no index. Empty once compacted.
    public var eventSeqs: [JournalSequence]
    /// When its latest event was recorded: the Sync tab's "moment".
    public var changedAt: Date
    /// When a compaction removed its events; `nil` while they are in the journal. A compacted
    /// operation keeps what its ledger row needs and nothing else: no request, no history.
    public var compactedAt: Date?

    /// The state right after `enqueued`.
    public init(id: OperationID, seq: JournalSequence, recordedAt: Date, enqueued: Enqueued) {
        let request = enqueued.request
        self.id = id
        self.status = .queued
        self.businessID = request.businessID
        self.operationType = request.operationType
        self.method = request.method
        self.endpoint = request.endpoint
        self.entityID = request.entityID
        self.category = request.category
        // Sealed text stays sealed in the state, whether or not the event was read with the key.
        self.entityLabel = enqueued.sealed == nil ? request.entityLabel : ""
        self.summary = enqueued.sealed == nil ? request.summary : ""
        self.sealedPresentation = enqueued.sealed?.presentation
        self.payloadVersion = request.payloadVersion
        self.payloadByteCount = enqueued.sealed.map { $0.payload.count - SealedRequest.overheadBytes } ?? request.payload.count
        self.requestHash = enqueued.requestHash
        self.account = enqueued.account
        self.createdAt = recordedAt
        self.attemptCount = 0
        self.firstSeq = seq
        self.latestSeq = seq
        self.eventSeqs = [seq]
        self.changedAt = recordedAt
    }

    /// The state a compaction leaves: the ledger row's fields; the request's are empty.
    /// - Parameters:
    ///   - seq: the seq of the `compacted` event.
    public init(compacted operation: CompactedOperation, seq: JournalSequence, compactedAt: Date) {
        let placeholder = OutboxRequest(
            businessID: "", operationType: operation.operationType, method: "", endpoint: "", payload: Data(),
            category: "", entityLabel: "", summary: "", payloadVersion: 0
        )
        // Zero bytes: a compacted operation's payload, and so its hash, are gone.
        let noHash = SHA256Digest(bytes: [UInt8](repeating: 0, count: SHA256Digest.byteCount))!
        self.init(id: operation.id, seq: operation.firstSeq, recordedAt: operation.createdAt,
                  enqueued: Enqueued(request: placeholder, requestHash: noHash, account: ""))
        status = operation.status
        attemptCount = operation.attemptCount
        latestOutcome = operation.latestOutcome
        lastErrorCode = operation.lastErrorCode
        serverRevision = operation.serverRevision
        latestSeq = seq
        eventSeqs = []
        changedAt = operation.changedAt
        self.compactedAt = compactedAt
    }

    /// The request as it will be sent, given the payload read from the `enqueued` event.
    public func request(payload: Data) -> OutboxRequest {
        OutboxRequest(
            businessID: businessID, operationType: operationType, method: method, endpoint: endpoint,
            payload: payload, entityID: entityID, category: category, entityLabel: entityLabel,
            summary: summary, payloadVersion: payloadVersion
        )
    }

    /// The lane the row is sent in: its entity within its business, or a lane of its own when it
    /// names no entity. Rows of one lane are sent one after another, in journal order.
    public var lane: String { Self.lane(businessID: businessID, entityID: entityID, operation: id) }

    /// The lane of a write to `entityID` of `businessID`, or of operation `operation` alone.
    public static func lane(businessID: String, entityID: String?, operation: OperationID) -> String {
        entityID.map { "entity:\(businessID)/\($0)" } ?? "operation:\(operation)"
    }
}
