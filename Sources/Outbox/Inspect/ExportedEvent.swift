public import Foundation
public import OutboxCore

/// One journal event as a flat JSON object with stable field names: what `journal-inspect`
/// prints with `--json`, and what an app exports for its own audit trail.
///
/// ```swift
/// let encoder = JSONEncoder()
/// encoder.outputFormatting = [.sortedKeys]
/// encoder.dateEncodingStrategy = .iso8601
/// let json = try encoder.encode(page.events.map { ExportedEvent($0) })
/// ```
///
/// Every event has `seq`, `recordedAt` and `kind`, and `operationID` unless it is an engine
/// event; the other fields appear only for the kinds that carry them (absent, never `null`).
/// The payload is redacted to its size and SHA-256 unless asked for.
public struct ExportedEvent: Sendable, Equatable, Codable {
    public var seq: JournalSequence
    public var recordedAt: Date
    public var kind: JournalEventKind
    public var operationID: OperationID?

    // enqueued
    public var businessID: String?
    public var operationType: String?
    public var method: String?
    public var endpoint: String?
    public var entityID: String?
    public var category: String?
    public var entityLabel: String?
    public var summary: String?
    public var payloadVersion: Int?
    public var payloadBytes: Int?
    /// The SHA-256 recorded at enqueue, hex.
    public var requestHash: String?
    /// Whether the stored payload still hashes to ``requestHash``.
    public var payloadHashMatches: Bool?
    /// The payload as UTF-8 text (it is JSON), only when asked for.
    public var payload: String?
    public var account: String?

    // attempts
    public var attempt: Int?
    /// What woke the worker (`attemptStarted`).
    public var trigger: WakeReason?
    /// `response`, `no_response` or `not_sent` (`attemptFinished`).
    public var outcome: String?
    public var httpStatus: Int?
    public var transportFailure: TransportFailure?
    public var disposition: Disposition?
    public var errorCode: String?
    public var errorMessage: String?
    public var retryAfter: Date?
    public var approvalRequestID: String?
    public var serverRevision: String?
    public var nextAttemptAt: Date?

    // decisions
    public var requestedBy: Requester?
    public var discardReason: DiscardReason?
    public var approved: Bool?
    public var reference: String?

    // engine events
    public var reason: String?
    public var triggeredBy: OperationID?
    public var formatVersion: Int?
    public var engineVersion: String?
    public var appVersion: String?
    public var firstSeq: JournalSequence?
    public var lastSeq: JournalSequence?
    public var removedCount: Int?
    public var digest: String?

    /// - Parameter includePayload: put the payload's text in ``payload``; otherwise only its size
    ///   and hash appear.
    public init(_ event: JournalEvent, includePayload: Bool = false) {
        seq = event.seq
        recordedAt = event.recordedAt
        kind = event.kind
        operationID = event.operationID
        switch event.body {
        case .enqueued(let enqueued):
            let request = enqueued.request
            businessID = request.businessID
            operationType = request.operationType
            method = request.method
            endpoint = request.endpoint
            entityID = request.entityID
            category = request.category
            entityLabel = request.entityLabel
            summary = request.summary
            payloadVersion = request.payloadVersion
            payloadBytes = request.payload.count
            requestHash = enqueued.requestHash.hex
            payloadHashMatches = PayloadCheck(payload: request.payload, recordedHash: enqueued.requestHash).matches
            if includePayload { payload = String(decoding: request.payload, as: UTF8.self) }
            account = enqueued.account
        case .attemptStarted(let started):
            attempt = started.attempt.rawValue
            trigger = started.trigger
        case .attemptFinished(let finished):
            attempt = finished.attempt.rawValue
            let fields = OutcomeFields(finished.outcome)
            (outcome, httpStatus, transportFailure) = (fields.outcome, fields.httpStatus, fields.transportFailure)
            disposition = finished.disposition
            errorCode = finished.errorCode
            errorMessage = finished.errorMessage
            retryAfter = finished.retryAfter
            approvalRequestID = finished.approvalRequestID
            serverRevision = finished.serverRevision
            nextAttemptAt = finished.nextAttemptAt
        case .attemptAbandoned(let abandoned):
            attempt = abandoned.attempt.rawValue
        case .withdrawn(let withdrawn):
            errorCode = withdrawn.errorCode
            errorMessage = withdrawn.errorMessage
        case .requeued(let requeued):
            requestedBy = requeued.requestedBy
        case .discarded(let discarded):
            requestedBy = discarded.requestedBy
            discardReason = discarded.reason
        case .approvalDecided(let decision):
            approved = decision.approved
            reference = decision.reference
        case .sessionPaused(let paused):
            reason = paused.reason
            triggeredBy = paused.triggeredBy
        case .sessionResumed:
            break
        case .journalOpened(let opened):
            formatVersion = opened.formatVersion
            engineVersion = opened.engineVersion
            appVersion = opened.appVersion
        case .compacted(let compacted):
            firstSeq = compacted.firstSeq
            lastSeq = compacted.lastSeq
            removedCount = compacted.removedCount
            digest = compacted.digest.hex
        }
    }
}
