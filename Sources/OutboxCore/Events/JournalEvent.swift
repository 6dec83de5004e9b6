// The event catalogue: every kind, its code and its body's case, listed once so the codec, the
// fold and the docs can be checked against one list. The bodies are in JournalEvent+*.swift.

public import Foundation
import OutboxCrypto
import OutboxWire

/// One immutable entry of the journal.
///
/// Everything the engine knows is folded from these: the status of each operation, the Sync
/// tab, the ledger, the retry schedule and every audit answer.
package struct JournalEvent: Sendable, Equatable {
    /// The event's position: the only order that counts.
    package var seq: JournalSequence
    /// The operation it belongs to; `nil` for engine-level events.
    package var operationID: OperationID?
    /// When it was recorded, by the device clock: for display only.
    package var recordedAt: Date
    /// The device's monotonic clock when it was recorded: time since boot, and the boot. Two
    /// events of one boot measure the time between them whatever the wall clock did; a new boot
    /// marks a restart. `nil` in records written before journal format 2.
    package var uptime: Uptime?
    /// What happened, with its details.
    package var body: JournalEventBody

    package init(seq: JournalSequence, operationID: OperationID?, recordedAt: Date, uptime: Uptime? = nil, body: JournalEventBody) {
        self.seq = seq
        self.operationID = operationID
        self.recordedAt = recordedAt
        self.uptime = uptime
        self.body = body
    }

    /// The event's kind.
    package var kind: JournalEventKind { body.kind }
}

/// The kinds of event, version 1 of the catalogue.
public enum JournalEventKind: String, Sendable, Codable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    public var description: String { rawValue }

    case enqueued
    case attemptStarted
    case attemptFinished
    case attemptAbandoned
    case withdrawn
    case requeued
    case discarded
    case approvalDecided
    case superseded
    case rebased
    case dependencyEnded
    case sessionPaused
    case sessionResumed
    case journalOpened
    case compacted
    case sessionChanged
    case heldOnRollback
    case rollbackAcknowledged
    case recordsWritten
    case recordBaseDropped
    case deletedOnServer
    case pageApplied
    case pageRefused
    case resnapshotStarted
    case snapshotPageStaged
    case resnapshotFinished
    case resnapshotAbandoned
    case summaryChecked
    case routeChanged
    case claimMayBeForgotten
    case installationAdopted
    case attachmentGranted
    case segmentLanded
    case attachmentCompleted
    case attachmentRefused

    /// The record format that introduced the kind: a record of an older version cannot hold it.
    public var formatVersion: Int {
        switch self {
        case .superseded, .rebased, .dependencyEnded, .sessionChanged: 2
        case .heldOnRollback, .rollbackAcknowledged, .recordsWritten, .recordBaseDropped: 3
        case .deletedOnServer, .pageApplied, .pageRefused, .resnapshotStarted, .snapshotPageStaged, .resnapshotFinished,
            .resnapshotAbandoned, .summaryChecked: 4
        case .routeChanged: 5
        case .claimMayBeForgotten, .installationAdopted: 6
        case .attachmentGranted, .segmentLanded, .attachmentCompleted, .attachmentRefused: 7
        default: 1
        }
    }

    /// Whether events of this kind belong to an operation (the rest are engine-level).
    public var isOperationEvent: Bool {
        switch self {
        case .enqueued, .attemptStarted, .attemptFinished, .attemptAbandoned, .withdrawn, .requeued,
            .discarded, .approvalDecided, .superseded, .rebased, .dependencyEnded, .heldOnRollback, .rollbackAcknowledged,
            .deletedOnServer, .claimMayBeForgotten, .attachmentGranted, .segmentLanded, .attachmentCompleted, .attachmentRefused:
            true
        case .sessionPaused, .sessionResumed, .journalOpened, .compacted, .sessionChanged, .recordsWritten, .recordBaseDropped,
            .pageApplied, .pageRefused, .resnapshotStarted, .snapshotPageStaged, .resnapshotFinished, .resnapshotAbandoned, .summaryChecked,
            .routeChanged, .installationAdopted:
            false
        }
    }

    /// The one-byte code of the record format.
    package var code: UInt8 {
        switch self {
        case .enqueued: 1
        case .attemptStarted: 2
        case .attemptFinished: 3
        case .attemptAbandoned: 4
        case .withdrawn: 5
        case .requeued: 6
        case .discarded: 7
        case .approvalDecided: 8
        case .superseded: 9
        case .rebased: 10
        case .dependencyEnded: 11
        case .heldOnRollback: 12
        case .rollbackAcknowledged: 13
        case .deletedOnServer: 14
        case .claimMayBeForgotten: 15
        case .attachmentGranted: 16
        case .segmentLanded: 17
        case .attachmentCompleted: 18
        case .attachmentRefused: 19
        case .sessionPaused: 64
        case .sessionResumed: 65
        case .journalOpened: 66
        case .compacted: 67
        case .sessionChanged: 68
        case .recordsWritten: 69
        case .recordBaseDropped: 70
        case .pageApplied: 71
        case .pageRefused: 72
        case .resnapshotStarted: 73
        case .snapshotPageStaged: 74
        case .resnapshotFinished: 75
        case .resnapshotAbandoned: 76
        case .summaryChecked: 77
        case .routeChanged: 78
        case .installationAdopted: 79
        }
    }

}

/// An event's details, one case per kind.
package enum JournalEventBody: Sendable, Equatable {
    case enqueued(Enqueued)
    case attemptStarted(AttemptStarted)
    case attemptFinished(AttemptFinished)
    case attemptAbandoned(AttemptAbandoned)
    case withdrawn(Withdrawn)
    case requeued(Requeued)
    case discarded(Discarded)
    case approvalDecided(ApprovalDecided)
    case superseded(Superseded)
    case rebased(Rebased)
    case dependencyEnded(DependencyEnded)
    case sessionPaused(SessionPaused)
    case sessionResumed
    case journalOpened(JournalOpened)
    case compacted(Compacted)
    case sessionChanged(SessionChanged)
    case heldOnRollback(HeldOnRollback)
    case rollbackAcknowledged(RollbackAcknowledged)
    case recordsWritten(RecordsWritten)
    case recordBaseDropped(RecordBaseDropped)
    case deletedOnServer(DeletedOnServer)
    case pageApplied(PageApplied)
    case pageRefused(PageRefused)
    case resnapshotStarted(ResnapshotStarted)
    case snapshotPageStaged(SnapshotPageStaged)
    case resnapshotFinished(ResnapshotFinished)
    case resnapshotAbandoned(ResnapshotAbandoned)
    case summaryChecked(SummaryChecked)
    case routeChanged(RouteChanged)
    case claimMayBeForgotten(ClaimMayBeForgotten)
    case installationAdopted(InstallationAdopted)
    case attachmentGranted(AttachmentGranted)
    case segmentLanded(SegmentLanded)
    case attachmentCompleted(AttachmentCompleted)
    case attachmentRefused(AttachmentRefused)

    package var kind: JournalEventKind {
        switch self {
        case .enqueued: .enqueued
        case .attemptStarted: .attemptStarted
        case .attemptFinished: .attemptFinished
        case .attemptAbandoned: .attemptAbandoned
        case .withdrawn: .withdrawn
        case .requeued: .requeued
        case .discarded: .discarded
        case .approvalDecided: .approvalDecided
        case .superseded: .superseded
        case .rebased: .rebased
        case .dependencyEnded: .dependencyEnded
        case .sessionPaused: .sessionPaused
        case .sessionResumed: .sessionResumed
        case .journalOpened: .journalOpened
        case .compacted: .compacted
        case .sessionChanged: .sessionChanged
        case .heldOnRollback: .heldOnRollback
        case .rollbackAcknowledged: .rollbackAcknowledged
        case .recordsWritten: .recordsWritten
        case .recordBaseDropped: .recordBaseDropped
        case .deletedOnServer: .deletedOnServer
        case .pageApplied: .pageApplied
        case .pageRefused: .pageRefused
        case .resnapshotStarted: .resnapshotStarted
        case .snapshotPageStaged: .snapshotPageStaged
        case .resnapshotFinished: .resnapshotFinished
        case .resnapshotAbandoned: .resnapshotAbandoned
        case .summaryChecked: .summaryChecked
        case .routeChanged: .routeChanged
        case .claimMayBeForgotten: .claimMayBeForgotten
        case .installationAdopted: .installationAdopted
        case .attachmentGranted: .attachmentGranted
        case .segmentLanded: .segmentLanded
        case .attachmentCompleted: .attachmentCompleted
        case .attachmentRefused: .attachmentRefused
        }
    }
}
