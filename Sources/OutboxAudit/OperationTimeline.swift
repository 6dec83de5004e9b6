public import Outbox
public import Foundation
public import OutboxCore
public import OutboxCrypto

/// Everything the journal holds about one operation: the proof of what happened to it.
///
/// ```swift
/// let timeline = try reader.timeline(of: id)
/// timeline.attempts.map(\.disposition)   // [.transientFailure, .transientFailure, .accepted]
/// timeline.payload?.matches              // the stored bytes still hash to the recorded SHA-256
/// ```
public struct OperationTimeline: Sendable, Equatable {
    public var id: OperationID
    /// The operation's state as the journal's projections hold it: what the app shows.
    /// `nil` when the projections do not know it (its `enqueued` record is damaged).
    package var state: OperationState?
    /// The operation's status as the projections hold it; `nil` when they do not know it.
    public var status: OutboxStatus? { state?.status }
    /// Every readable event of the operation, in journal order.
    package var events: [JournalEvent]
    /// The same events as the engine shows them (``HistoryEntry``), in the same order.
    public var entries: [HistoryEntry] { events.map { HistoryEntry($0) } }
    /// Its records that could not be read. When any is listed, the timeline is incomplete.
    public var damaged: [Outbox.DamagedRecord]
    /// One entry per attempt, in order, with its outcome and the gap before it.
    package var attempts: [AttemptSummary]
    /// The payload and its hash check; `nil` when the `enqueued` record is unreadable.
    public var payload: PayloadCheck?

    package init(id: OperationID, state: OperationState?, events: [JournalEvent], damaged: [Outbox.DamagedRecord],
                attempts: [AttemptSummary], payload: PayloadCheck?) {
        self.id = id
        self.state = state
        self.events = events
        self.damaged = damaged
        self.attempts = attempts
        self.payload = payload
    }

    /// Whether every record of the operation was read.
    public var isComplete: Bool { damaged.isEmpty }

    /// The moment the operation was saved: its `enqueued` event.
    public var savedAt: Date? {
        events.first { $0.kind == .enqueued }?.recordedAt ?? state?.createdAt
    }

    /// The attempt summaries of `events`, in order.
    package static func attempts(of events: [JournalEvent]) -> [AttemptSummary] {
        var attempts: [AttemptSummary] = []
        for event in events {
            switch event.body {
            case .attemptStarted(let started):
                let previous = attempts.last
                let previousEnd = previous.map { $0.endedAt ?? $0.startedAt }
                attempts.append(AttemptSummary(
                    number: started.attempt,
                    startedSeq: event.seq,
                    startedAt: event.recordedAt,
                    trigger: started.trigger,
                    secondsSincePreviousAttempt: previousEnd.map { event.recordedAt.timeIntervalSince($0) }
                ))
            case .attemptFinished(let finished):
                guard let index = attempts.lastIndex(where: { $0.number == finished.attempt }) else { continue }
                attempts[index].endedSeq = event.seq
                attempts[index].endedAt = event.recordedAt
                attempts[index].finished = finished
            case .attemptAbandoned(let abandoned):
                guard let index = attempts.lastIndex(where: { $0.number == abandoned.attempt }) else { continue }
                attempts[index].endedSeq = event.seq
                attempts[index].endedAt = event.recordedAt
                attempts[index].wasAbandoned = true
            default:
                continue
            }
        }
        return attempts
    }
}

/// One attempt to send an operation, from its start to its outcome.
///
/// Its outcome is the `attemptFinished` event itself: `attempt.disposition`, `attempt.errorCode`
/// and every other field of the attempt's ``Classification`` read through it, so a field added
/// to the event is here too.
@dynamicMemberLookup
package struct AttemptSummary: Sendable, Equatable {
    package var number: AttemptNumber
    package var startedSeq: JournalSequence
    package var startedAt: Date
    /// What woke the worker for it.
    package var trigger: WakeReason
    /// The seq of its `attemptFinished` or `attemptAbandoned`; `nil` while in flight.
    package var endedSeq: JournalSequence?
    package var endedAt: Date?
    /// Its `attemptFinished`; `nil` while in flight or when abandoned.
    package var finished: AttemptFinished?
    /// The process ended before the attempt had an outcome; it was replayed under the same key.
    package var wasAbandoned: Bool
    /// Seconds from the end of the previous attempt (or its start, if it never ended) to this
    /// one's start; `nil` for the first. Negative when the device clock moved backwards.
    package var secondsSincePreviousAttempt: Double?

    package init(number: AttemptNumber, startedSeq: JournalSequence, startedAt: Date, trigger: WakeReason,
                endedSeq: JournalSequence? = nil, endedAt: Date? = nil, finished: AttemptFinished? = nil,
                wasAbandoned: Bool = false, secondsSincePreviousAttempt: Double? = nil) {
        self.number = number
        self.startedSeq = startedSeq
        self.startedAt = startedAt
        self.trigger = trigger
        self.endedSeq = endedSeq
        self.endedAt = endedAt
        self.finished = finished
        self.wasAbandoned = wasAbandoned
        self.secondsSincePreviousAttempt = secondsSincePreviousAttempt
    }

    /// A field of the attempt's classification; `nil` while it has none.
    package subscript<Value>(dynamicMember field: KeyPath<Classification, Value>) -> Value? {
        finished?.classification[keyPath: field]
    }

    /// An optional field of the attempt's classification, flattened.
    package subscript<Value>(dynamicMember field: KeyPath<Classification, Value?>) -> Value? {
        finished?.classification[keyPath: field] ?? nil
    }

    /// When the next attempt was scheduled, for a rescheduled row.
    package var nextAttemptAt: Date? { finished?.nextAttemptAt }

    /// Still in flight: started, with no outcome or abandonment yet.
    package var isInFlight: Bool { endedSeq == nil }
}

/// An operation's payload and the check of its bytes against the SHA-256 recorded at enqueue.
public struct PayloadCheck: Sendable, Equatable {
    /// The bytes exactly as stored (and sent).
    public var payload: Data
    /// The hash recorded in the `enqueued` event.
    public var recordedHash: SHA256Digest
    /// The hash of the bytes as they are now.
    public var computedHash: SHA256Digest
    /// The payload is sealed and the journal's key was not given: it was not checked, and
    /// ``payload`` is empty.
    public var isSealed: Bool

    public init(payload: Data, recordedHash: SHA256Digest, isSealed: Bool = false) {
        self.payload = payload
        self.recordedHash = recordedHash
        self.computedHash = SHA256Digest(of: payload)
        self.isSealed = isSealed
    }

    public var byteCount: Int { payload.count }
    /// Whether the stored bytes are the ones that were saved (a sealed payload read without its
    /// key cannot be judged, and counts as matching).
    public var matches: Bool { isSealed || recordedHash == computedHash }
}
