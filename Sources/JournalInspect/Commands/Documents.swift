import Foundation
import Outbox
import OutboxAudit

// The JSON documents of each command. Their field names are part of the tool's interface,
// documented in Docs/journal-inspect.md: add fields, never rename one.

struct SummaryDocument: Encodable {
    struct Pending: Encodable {
        var operationID: OperationID
        var status: OutboxStatus
        var operationType: String
        var entityLabel: String
        var createdAt: Date
        var ageSeconds: Double
    }

    struct Worker: Encodable {
        var paused: Bool
        var pauseReason: String?
        var pausedAt: Date?
        var pausedBy: OperationID?
        /// Who the engine last saw signed in: `signedIn` (the journal's account), `signedOut`,
        /// `otherAccount`; and since when.
        var session: SessionObservation
        var sessionSince: Date?
    }

    struct LastOpened: Encodable {
        var formatVersion: Int
        var engineVersion: String
        var appVersion: String?
        var openCount: Int
        /// The device's time zone identifier when the engine opened the journal (since journal
        /// format 2).
        var timeZone: String?
    }

    /// A business's change feed: its cursor, the page that set it and when.
    struct Feed: Encodable {
        var business: String
        var cursor: String?
        var pageSeq: JournalSequence
        var pageAt: Date?
        /// When the feed last reached its end; its lag (`ageSeconds`) counts from it.
        var caughtUpAt: Date?
        var ageSeconds: Double?
        var staging: JournalSummary.Feed.Staging?
    }

    var path: String
    var formatVersion: Int
    var projectionVersion: Int?
    var projectionsAreCurrent: Bool
    var account: String?
    var firstSeq: JournalSequence?
    var lastSeq: JournalSequence
    var eventCount: Int
    var eventBytes: Int
    var fileBytes: Int
    var usedBytes: Int
    var statusCounts: [OutboxStatus: Int]
    var operationCount: Int
    var oldestPending: Pending?
    var oldestPendingConnectedAgeSeconds: Double?
    var oldestHealthyPending: OutboxMetrics.PendingAge?
    var routeSeen: Bool
    var acknowledgement: OutboxMetrics.AcknowledgementObjective
    var abandonedAttempts: Int
    var cancelledAttempts: Int
    var worker: Worker
    var lastOpened: LastOpened?
    var lastEventAt: Date?
    var damaged: [Outbox.DamagedRecord]
    /// Absent for a journal that never pulled.
    var feeds: [Feed]?
    var generatedAt: Date

    init(_ summary: JournalSummary, now: Date, damaged: [Outbox.DamagedRecord]) {
        path = summary.path
        formatVersion = summary.formatVersion
        projectionVersion = summary.projectionVersion
        projectionsAreCurrent = summary.projectionsAreCurrent
        account = summary.account
        firstSeq = summary.firstSeq
        lastSeq = summary.lastSeq
        eventCount = summary.eventCount
        eventBytes = summary.eventBytes
        fileBytes = summary.fileBytes
        usedBytes = summary.usedBytes
        statusCounts = summary.statusCounts
        operationCount = summary.operationCount
        oldestPending = summary.oldestPending.map {
            Pending(operationID: $0.id, status: $0.status, operationType: $0.operationType, entityLabel: $0.entityLabel,
                    createdAt: $0.createdAt, ageSeconds: now.timeIntervalSince($0.createdAt))
        }
        oldestPendingConnectedAgeSeconds = summary.oldestPendingConnectedAgeSeconds
        oldestHealthyPending = summary.oldestHealthyPending
        routeSeen = summary.routeSeen
        acknowledgement = summary.acknowledgement
        abandonedAttempts = summary.abandonedAttempts
        cancelledAttempts = summary.cancelledAttempts
        worker = Worker(paused: summary.engine.isPaused, pauseReason: summary.engine.pauseReason,
                        pausedAt: summary.engine.pausedAt, pausedBy: summary.engine.pausedBy, session: summary.engine.session,
                        sessionSince: summary.engine.sessionSince)
        lastOpened = summary.engine.lastOpened.map {
            LastOpened(formatVersion: $0.formatVersion, engineVersion: $0.engineVersion, appVersion: $0.appVersion,
                       openCount: summary.engine.openCount, timeZone: $0.timeZone)
        }
        lastEventAt = summary.lastEventAt
        self.damaged = damaged
        feeds = summary.feeds.isEmpty ? nil : summary.feeds.map {
            Feed(business: $0.business, cursor: $0.cursor, pageSeq: $0.pageSeq, pageAt: $0.pageAt, caughtUpAt: $0.caughtUpAt,
                 ageSeconds: $0.caughtUpAt.map { max(0, now.timeIntervalSince($0)) }, staging: $0.staging)
        }
        generatedAt = now
    }
}

struct OperationsDocument: Encodable {
    var operations: [OperationState]
}

struct LedgerDocument: Encodable {
    var ledger: [LedgerEntry]
}

struct EventsDocument: Encodable {
    var events: [HistoryEntry]
    var damaged: [Outbox.DamagedRecord]
    /// Where the next page would start, when the limit cut the range short.
    var nextSeq: JournalSequence?
}

struct PayloadDocument: Encodable {
    var bytes: Int
    /// The hash of the bytes now; absent once compacted (the bytes are gone).
    var sha256: String?
    var recordedSHA256: String
    var matches: Bool?
    /// The payload's text, only with `--payload`.
    var content: String?
    /// The payload was removed by a compaction: its size and recorded hash remain.
    var compacted: Bool?

    init(_ check: PayloadCheck, includeContent: Bool) {
        bytes = check.byteCount
        sha256 = check.computedHash.hex
        recordedSHA256 = check.recordedHash.hex
        matches = check.matches
        content = includeContent ? String(decoding: check.payload, as: UTF8.self) : nil
    }

    /// What a compaction kept of a payload; `nil` when it kept nothing (before journal format 2).
    init?(compacted state: OperationState) {
        guard state.compactedAt != nil, state.keptRequest else { return nil }
        bytes = state.payloadByteCount
        recordedSHA256 = state.requestHash.hex
        compacted = true
    }
}

struct TimelineDocument: Encodable {
    /// What the app starting again says about the time around it.
    struct RestartDocument: Encodable {
        var seq: JournalSequence
        var recordedAt: Date
        /// The seq of the journal's last event before it.
        var lastSeqBefore: JournalSequence?
        var deviceRestarted: Bool?
        /// At most how long the app was not running before it; absent when the clock cannot tell.
        var notRunningAtMostSeconds: Double?
    }

    var operationID: OperationID
    var operation: OperationState?
    /// Its events, with the journal's `journalOpened` events between them and, for a compacted
    /// operation, the `compacted` event.
    var events: [HistoryEntry]
    var attempts: [AttemptSummary]
    var payload: PayloadDocument?
    var damaged: [Outbox.DamagedRecord]
    var complete: Bool
    var restarts: [RestartDocument]
    /// What the device clock did between events, where it jumped: one sentence each.
    var clockNotes: [String]
    var verdict: String

    init(_ facts: OperationFacts, includePayload: Bool, moments: MomentFormat) {
        let timeline = facts.timeline
        operationID = timeline.id
        operation = timeline.state
        events = facts.events.map { HistoryEntry($0, includePayload: includePayload) }
        attempts = timeline.attempts
        payload = timeline.payload.map { PayloadDocument($0, includeContent: includePayload) }
            ?? timeline.state.flatMap(PayloadDocument.init(compacted:))
        damaged = timeline.damaged
        complete = timeline.isComplete
        restarts = facts.restarts.map {
            RestartDocument(seq: $0.opened.seq, recordedAt: $0.opened.recordedAt, lastSeqBefore: $0.lastBefore?.seq,
                            deviceRestarted: $0.deviceRestarted, notRunningAtMostSeconds: $0.downtime?.seconds)
        }
        clockNotes = zip(facts.events, facts.events.dropFirst()).compactMap { earlier, later in
            ClockChange.between(earlier, later).map { "seq \(later.seq): " + $0.note(since: earlier) }
        }
        verdict = Verdict.text(for: facts, moments: moments)
    }
}

struct VerifyDocument: Encodable {
    var clean: Bool
    var recordsChecked: Int
    var operationsChecked: Int
    var projectionsCompared: Bool
    var projectionsNote: String?
    var findings: [VerificationFinding]
    /// The attachments' files hashed: every one a write not settled still needs.
    var attachmentFilesChecked: Int

    init(_ report: VerificationReport) {
        clean = report.isClean
        recordsChecked = report.recordsChecked
        operationsChecked = report.operationsChecked
        projectionsCompared = report.projectionsCompared
        projectionsNote = report.projectionsNote
        findings = report.findings
        attachmentFilesChecked = report.attachmentFilesChecked
    }
}

struct ExportDocument: Encodable {
    var exportedAt: Date
    var journal: String
    var payloadsIncluded: Bool
    var operations: [TimelineDocument]
    var ledger: [LedgerEntry]
}

struct ReportDocument: Encodable {
    var file: String
    var bytes: Int
    var operations: Int
    var damaged: [Outbox.DamagedRecord]
}
