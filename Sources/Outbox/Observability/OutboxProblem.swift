public import Foundation
public import OutboxCore
import OutboxCrypto
import OutboxStorage

/// Problems counted by kind and the latest kept: a pure structure, bounded.
struct ProblemTally: Sendable, Equatable {
    private(set) var counts: [OutboxLogger.Problem.Kind: Int] = [:]
    /// The latest problems, oldest first, at most `limit`.
    private(set) var recent: [OutboxLogger.Problem] = []
    let limit: Int

    init(limit: Int = OutboxLogger.Problem.recentLimit) {
        precondition(limit > 0, "a tally keeps at least one problem")
        self.limit = limit
    }

    mutating func record(_ problem: OutboxLogger.Problem) {
        counts[problem.kind, default: 0] += 1
        if recent.count == limit { recent.removeFirst() }
        recent.append(problem)
    }
}

extension OutboxLogger {
    /// Something that went wrong inside the engine without reaching a caller as an error: a read of
    /// the journal that failed during a pass, an outcome that could not be recorded, a compaction
    /// that failed.
    ///
    /// Each is logged (at warning or error), counted by kind in ``OutboxMetrics/problems``, and kept
    /// in memory among the latest ``Outbox/recentProblems`` (never journaled). What the worker does
    /// after each kind is in `Docs/replay.md`.
    public struct Problem: Sendable, Equatable {
        /// What went wrong.
        public enum Kind: String, Sendable, Codable, CodingKeyRepresentable, CaseIterable {
            /// A read of the journal failed (an I/O error, the reader table full, a damaged
            /// projection): the row is skipped, or the pass ends and asks again one cap later.
            case journalRead = "journal_read"
            /// A stored payload could not be read or no longer matches its hash: the row is blocked
            /// with `payload_corrupt`, never sent.
            case payloadDamaged = "payload_damaged"
            /// `attemptStarted` could not be recorded: nothing was sent; the row stays queued.
            case attemptNotRecorded = "attempt_not_recorded"
            /// A request went out but its outcome could not be recorded: the row stays syncing until
            /// the next pass (or open) abandons the attempt, and is replayed under the same key.
            case outcomeNotRecorded = "outcome_not_recorded"
            /// An interrupted attempt's `attemptAbandoned` could not be recorded: the next pass tries
            /// again.
            case abandonmentNotRecorded = "abandonment_not_recorded"
            /// The opening could not be recorded: the journal was too full, or its commit failed.
            case openingNotRecorded = "opening_not_recorded"
            /// A compaction failed: the journal keeps its settled rows for now.
            case compactionFailed = "compaction_failed"
            /// Flushing the last commits to disk at close failed (``OutboxConfiguration.Durability/processCrash`` only).
            case flushFailed = "flush_failed"
            /// A Sync tab for ``Outbox/syncTabUpdates(isOnline:rowsPerCard:)`` could not be read: that
            /// update is skipped, the next commit brings a fresh one.
            case viewUpdateFailed = "view_update_failed"
            /// An engine fact could not be recorded (who is signed in, a dependency that ended): the
            /// next pass records it; nothing is sent meanwhile that depends on it.
            case factNotRecorded = "fact_not_recorded"
            /// A batch was answered 200 with a body that is not a batch answer: its rows count as
            /// unanswered (`missing_from_batch`) and are replayed under their keys.
            case batchAnswerUnreadable = "batch_answer_unreadable"

            /// The level it is logged at: error when a row's data or outcome is at stake.
            public var logLevel: OutboxLogger.Level {
                switch self {
                case .payloadDamaged, .outcomeNotRecorded, .flushFailed: .error
                default: .warning
                }
            }
        }

        /// The most problems kept in ``Outbox/recentProblems``; older ones are only counted.
        public static let recentLimit = 32

        public var kind: Kind
        /// When it happened, by the engine's clock.
        public var recordedAt: Date
        /// The operation it concerns, if one.
        public var operationID: OperationID?
        /// The error, in words that carry no payload, label, summary or credential.
        public var errorDescription: String

        public init(kind: Kind, recordedAt: Date, operationID: OperationID?, errorDescription: String) {
            self.kind = kind
            self.recordedAt = recordedAt
            self.operationID = operationID
            self.errorDescription = errorDescription
        }

        /// An error in words safe to log: the engine's own errors by their description (which never
        /// holds a payload or a header), anything else by its type alone.
        static func describe(_ error: any Error) -> String {
            switch error {
            case let error as OutboxError: error.description
            case let error as LMDBError: error.description
            case let error as LMDBEnvironmentError: error.description
            case let error as SealingError: error.description
            case is CancellationError: "cancelled"
            default: String(reflecting: type(of: error))
            }
        }
    }
}
