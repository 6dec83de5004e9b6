// Kept in one file: one function builds an entry from every kind of event, and the fields it
// fills are declared beside it; split, a kind's fields and their filling would part.

public import Foundation
public import OutboxCore

/// One event of the journal as the engine shows it: when, what kind, what happened in words, and
/// the fields of its kind under stable names. ``Outbox/history(_:)`` returns a write's entries;
/// support tools encode them as JSON (what `journal-inspect` prints with `--json`):
///
/// ```swift
/// let encoder = JSONEncoder()
/// encoder.outputFormatting = [.sortedKeys]
/// encoder.dateEncodingStrategy = .iso8601
/// let json = try encoder.encode(try outbox.history(id))
/// ```
///
/// Every entry has `seq`, `recordedAt`, `kind` and `words`, and `operationID` unless it is an
/// engine event; the other fields appear only for the kinds that carry them (absent, never
/// `null`). Vocabulary fields (`trigger`, `disposition`, `discardReason`...) are the journal's
/// words as strings. The payload is redacted to its size and SHA-256 unless asked for.
public struct HistoryEntry: Sendable, Equatable, Codable {
    public var seq: JournalSequence
    public var recordedAt: Date
    public var kind: JournalEventKind
    /// What happened, in one line support reads (`attempt 2: 503 -> transientFailure, next at
    /// 2027-01-15T08:00:04Z`): never the payload, only its size. Moments in UTC.
    public var words: String
    public var operationID: OperationID?
    /// The device's uptime when it was recorded, and its boot (since journal format 2): two
    /// events of one boot measure the time between them whatever the wall clock did.
    public var uptimeSeconds: Double?
    public var bootID: UUID?

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
    /// The revision the edit started from (sent as `If-Match`); also a rebase's new one.
    public var baseRevision: String?
    /// The operations it waits for.
    public var dependsOn: [OperationID]?
    /// The row it replaces (`enqueued`), or the operation that replaced it (`superseded`).
    public var supersedes: OperationID?
    public var supersededBy: OperationID?
    /// Why: `revised`, `resolvedMine` or `coalesced`.
    public var supersedeReason: String?

    // attempts
    public var attempt: Int?
    /// What woke the worker (`attemptStarted`).
    public var trigger: String?
    /// `response`, `no_response` or `not_sent` (`attemptFinished`).
    public var outcome: String?
    public var httpStatus: Int?
    public var transportFailure: String?
    public var disposition: String?
    public var errorCode: String?
    public var errorMessage: String?
    public var retryAfter: Date?
    public var approvalRequestID: String?
    public var serverRevision: String?
    public var nextAttemptAt: Date?
    /// The size of the server's current record a conflict kept (its bytes only with the payload).
    public var serverCurrentBytes: Int?
    public var serverCurrent: String?

    // decisions
    public var requestedBy: String?
    public var discardReason: String?
    public var approved: Bool?
    public var reference: String?
    /// The dependency whose chain ended unapplied, and how (`dependencyEnded`).
    public var dependency: OperationID?
    public var dependencyStatus: OutboxStatus?

    // engine events
    public var reason: String?
    public var triggeredBy: OperationID?
    public var formatVersion: Int?
    public var engineVersion: String?
    public var appVersion: String?
    /// The device's time zone when the journal was opened.
    public var timeZone: String?
    /// Who the worker found signed in (`sessionChanged`).
    public var session: String?
    /// Whether a route to the server is seen from `routeAt` on (`routeChanged`).
    public var routeSeen: Bool?
    public var routeAt: Date?
    /// The installation the engine was opened on (`journalOpened`), or that adopted the writes
    /// made on `previousInstallation` (`installationAdopted`).
    public var installation: String?
    public var previousInstallation: String?
    /// When a blocked write was first sent, and the claim retention it outlived
    /// (`claimMayBeForgotten`), in seconds.
    public var firstAttemptAt: Date?
    public var claimRetentionSeconds: Double?
    /// The connected clock when a write was made (`enqueued`), and its connected age when
    /// acknowledged (`attemptFinished`), in seconds.
    public var connectedClock: Double?
    public var connectedAgeSeconds: Double?
    public var firstSeq: JournalSequence?
    public var lastSeq: JournalSequence?
    public var removedCount: Int?
    public var digest: String?

    // records (format 3)
    /// The records an `enqueued` write changes, or a `recordsWritten` event writes.
    public var records: [HistoryEntry.WrittenRecord]?
    /// Where the write's `If-Match` comes from: a record's server revision.
    public var revisionFrom: String?
    /// The revision an attempt sent, taken from a record's base (`attemptStarted`).
    public var sentRevision: String?
    /// What an answer confirmed of the records (`attemptFinished`): revision and value hash each.
    public var confirmations: [HistoryEntry.ConfirmedRecord]?
    /// The rolled-back write a held row was built on (`heldOnRollback`).
    public var builtOn: OperationID?
    /// The record of `rollbackAcknowledged` and `deletedOnServer`, or the type of
    /// `recordBaseDropped` (`business/type`).
    public var record: String?
    /// The tombstone's revision (`deletedOnServer`).
    public var tombstoneRevision: UInt64?
    /// A page of a change feed (`pageApplied`): its start and cursor, whether it reached the end.
    public var pageFrom: String?
    public var pageTo: String?
    public var reachedEnd: Bool?

    // attachments (format 7)
    /// The files an `enqueued` write carries: id, name, type, size and SHA-256 each.
    public var attachments: [HistoryEntry.Attachment]?
    /// The attachment an upload event is about.
    public var attachmentID: AttachmentID?
    /// A grant's segment size and count, and its URLs' lifetime in seconds (never the URLs).
    public var segmentSize: Int64?
    public var segmentCount: Int?
    public var grantLifetimeSeconds: Double?
    /// A landed segment: its number, size and the store's ETag.
    public var segmentNumber: Int?
    public var segmentBytes: Int64?
    public var etag: String?
    /// A completed object: the server's reference, its size and SHA-256 (hex).
    public var object: String?
    public var objectBytes: Int64?
    public var objectSha256: String?

    /// - Parameter includePayload: put the payload's text in ``payload``; otherwise only its size
    ///   and hash appear.
    ///
    /// The one function that turns a journal event into what the engine shows of it: the app's
    /// ``Outbox/history(_:)``, `journal-inspect --json` and an exported audit trail all call it.
    package init(_ event: JournalEvent, includePayload: Bool = false) {
        seq = event.seq
        recordedAt = event.recordedAt
        kind = event.kind
        words = EventText.detail(event)
        operationID = event.operationID
        uptimeSeconds = event.uptime?.seconds
        bootID = event.uptime?.bootID
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
            payloadHashMatches = SHA256Digest(of: request.payload) == enqueued.requestHash
            if includePayload { payload = String(decoding: request.payload, as: UTF8.self) }
            account = enqueued.account
            baseRevision = request.baseRevision
            dependsOn = request.dependsOn.isEmpty ? nil : request.dependsOn
            supersedes = enqueued.supersedes?.operation
            supersedeReason = enqueued.supersedes?.reason.rawValue
            if !enqueued.changes.isEmpty { records = enqueued.changes.map { HistoryEntry.WrittenRecord($0, includeValue: includePayload) } }
            revisionFrom = request.revisionFrom?.description
            connectedClock = enqueued.connectedClock
            if !enqueued.attachments.isEmpty { attachments = enqueued.attachments.map(HistoryEntry.Attachment.init) }
        case .attachmentGranted(let granted):
            attachmentID = granted.attachment
            segmentSize = granted.segmentSize
            segmentCount = granted.segmentCount
            grantLifetimeSeconds = granted.lifetimeSeconds
        case .segmentLanded(let landed):
            attachmentID = landed.attachment
            segmentNumber = landed.segment.number
            segmentBytes = landed.segment.size
            etag = landed.segment.etag
        case .attachmentCompleted(let completed):
            attachmentID = completed.attachment
            object = completed.object
            objectBytes = completed.size
            objectSha256 = completed.sha256.hex
        case .attachmentRefused(let refused):
            attachmentID = refused.attachment
            httpStatus = refused.statusCode
            errorCode = refused.errorCode
            errorMessage = refused.message
        case .attemptStarted(let started):
            attempt = started.attempt.rawValue
            trigger = started.trigger.rawValue
            sentRevision = started.sentRevision
        case .attemptFinished(let finished):
            attempt = finished.attempt.rawValue
            let fields = OutcomeFields(finished.outcome)
            (outcome, httpStatus, transportFailure) = (fields.outcome, fields.httpStatus, fields.transportFailure?.rawValue)
            disposition = finished.disposition.rawValue
            errorCode = finished.errorCode
            errorMessage = finished.errorMessage
            retryAfter = finished.retryAfter
            approvalRequestID = finished.approvalRequestID
            serverRevision = finished.serverRevision
            nextAttemptAt = finished.nextAttemptAt
            connectedAgeSeconds = finished.connectedAgeSeconds
            let current = finished.serverCurrent.map { $0.count } ?? finished.sealedServerCurrent.map { $0.count - SealedRequest.overheadBytes }
            serverCurrentBytes = current
            if includePayload, let bytes = finished.serverCurrent { serverCurrent = String(decoding: bytes, as: UTF8.self) }
            if !finished.confirmations.isEmpty { confirmations = finished.confirmations.map(HistoryEntry.ConfirmedRecord.init) }
        case .attemptAbandoned(let abandoned):
            attempt = abandoned.attempt.rawValue
        case .withdrawn(let withdrawn):
            errorCode = withdrawn.errorCode
            errorMessage = withdrawn.errorMessage
        case .requeued(let requeued):
            requestedBy = requeued.requestedBy.rawValue
        case .discarded(let discarded):
            requestedBy = discarded.requestedBy.rawValue
            discardReason = discarded.reason.rawValue
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
            timeZone = opened.timeZone
            installation = opened.installation
        case .installationAdopted(let adopted):
            installation = adopted.installation
            previousInstallation = adopted.previous
        case .claimMayBeForgotten(let claim):
            firstAttemptAt = claim.firstAttemptAt
            claimRetentionSeconds = claim.retentionSeconds
        case .superseded(let superseded):
            supersededBy = superseded.by
            supersedeReason = superseded.reason.rawValue
        case .rebased(let rebased):
            baseRevision = rebased.baseRevision
        case .dependencyEnded(let ended):
            dependency = ended.dependency
            dependencyStatus = ended.status
        case .sessionChanged(let changed):
            session = changed.observation.rawValue
        case .routeChanged(let changed):
            routeSeen = changed.seen
            routeAt = changed.at
        case .compacted(let compacted):
            firstSeq = compacted.firstSeq
            lastSeq = compacted.lastSeq
            removedCount = compacted.removedCount
            digest = compacted.digest.hex
        case .heldOnRollback(let held):
            builtOn = held.builtOn
        case .rollbackAcknowledged(let acknowledged):
            record = acknowledged.key.description
        case .recordsWritten(let written):
            records = written.writes.map { HistoryEntry.WrittenRecord($0, includeValue: includePayload) }
        case .recordBaseDropped(let dropped):
            record = "\(dropped.business)/\(dropped.type)"
            formatVersion = dropped.schemaVersion
        case .deletedOnServer(let deleted):
            record = deleted.key.description
            tombstoneRevision = deleted.revision
        case .pageApplied(let page):
            businessID = page.business
            pageFrom = page.from.text
            pageTo = page.to.text
            reachedEnd = page.reachedEnd
            digest = page.digest.hex
            confirmations = page.confirmations.map(HistoryEntry.ConfirmedRecord.init)
        case .pageRefused(let refused):
            businessID = refused.business
            pageFrom = refused.from?.text
            errorCode = refused.code
            errorMessage = refused.detail
        case .resnapshotStarted(let started):
            businessID = started.business
            record = started.type
            reason = started.reason
            pageFrom = started.from?.text
            pageTo = started.position.text
        case .snapshotPageStaged(let page):
            businessID = page.business
            pageTo = page.position.text
            reachedEnd = page.reachedEnd
            digest = page.digest.hex
            confirmations = page.confirmations.map(HistoryEntry.ConfirmedRecord.init)
        case .resnapshotFinished(let finished):
            businessID = finished.business
            pageTo = finished.cursor.text
            confirmations = finished.vanished.map(HistoryEntry.ConfirmedRecord.init)
        case .resnapshotAbandoned(let abandoned):
            businessID = abandoned.business
            errorCode = abandoned.code
            errorMessage = abandoned.detail
        case .summaryChecked(let checked):
            businessID = checked.business
            record = checked.type
            pageTo = checked.position.text
            reason = "\(checked.verdict)"
            digest = checked.serverDigest.hex
        }
    }
}

extension HistoryEntry {
    /// One attachment's manifest as exported.
    public struct Attachment: Sendable, Equatable, Codable {
        public var id: AttachmentID
        public var name: String
        public var contentType: String
        public var size: Int64
        public var sha256: String

        init(_ manifest: AttachmentManifest) {
            id = manifest.id
            name = manifest.name
            contentType = manifest.contentType
            size = manifest.size
            sha256 = manifest.sha256.hex
        }
    }

    /// One record change as exported: the record, whether it was deleted, the value's SHA-256 and
    /// its type's schema version; the value's text only when asked for.
    public struct WrittenRecord: Sendable, Equatable, Codable {
        public var record: String
        public var deleted: Bool
        public var valueHash: String?
        public var schemaVersion: Int
        public var value: String?

        init(_ write: RecordWrite, includeValue: Bool) {
            record = write.key.description
            deleted = write.isDelete
            valueHash = write.valueHash?.hex
            schemaVersion = write.schemaVersion
            if includeValue, let bytes = write.value { value = String(decoding: bytes, as: UTF8.self) }
        }
    }

    /// What an answer confirmed of one record: its revision, its value's SHA-256 (absent: deleted)
    /// and where the value came from (`answer`, `written`, `conflict`).
    public struct ConfirmedRecord: Sendable, Equatable, Codable {
        public var record: String
        public var revision: UInt64
        public var valueHash: String?
        public var source: String

        init(_ confirmation: RecordConfirmation) {
            record = confirmation.key.description
            revision = confirmation.revision
            valueHash = confirmation.valueHash?.hex
            source = confirmation.source.description
        }
    }
}

/// The JSON fields of an attempt's outcome, shared by every export that shows one: `outcome`
/// (`response`, `no_response` or `not_sent`), then `httpStatus` or `transportFailure`.
package struct OutcomeFields {
    package var outcome: String
    package var httpStatus: Int?
    package var transportFailure: TransportRequest.Failure?

    package init(_ outcome: AttemptOutcome) {
        switch outcome {
        case .response(let statusCode):
            self.outcome = "response"
            httpStatus = statusCode
        case .noResponse(let failure):
            self.outcome = "no_response"
            transportFailure = failure
        case .notSent:
            self.outcome = "not_sent"
        }
    }
}
