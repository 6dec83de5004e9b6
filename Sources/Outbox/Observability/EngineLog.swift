import Foundation
import OutboxCore
import Synchronization

/// The engine's side of logging: the app's ``OutboxLogger``, and the problems it counts and keeps.
///
/// Every part of the engine logs through one of these, so that every record carries the same
/// keys and every problem is logged, counted and kept the same way.
final class EngineLog: Sendable {
    let logger: OutboxLogger
    private let clock: any OutboxClock
    private let tally = Mutex(ProblemTally())

    init(logger: OutboxLogger, clock: any OutboxClock) {
        self.logger = logger
        self.clock = clock
    }

    /// Logs a moment of the engine's life at `level`.
    func log(_ level: OutboxLogger.Level, _ message: @autoclosure () -> OutboxLogger.Message,
             _ metadata: @autoclosure () -> OutboxLogger.Metadata = [:],
             file: String = #fileID, function: String = #function, line: UInt = #line) {
        logger.log(level: level, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    /// Logs, counts and keeps a problem.
    ///
    /// Work cut short because the outbox closed is no problem: it is logged at debug only. An
    /// outcome that could not be recorded is one even then, since a request went out.
    /// - Parameters:
    ///   - message: what the engine was doing and what it does instead, without the error.
    ///   - error: what failed; described by ``OutboxLogger.Problem/describe(_:)``, never by a payload.
    func problem(
        _ kind: OutboxLogger.Problem.Kind, _ message: String, error: (any Error)?, operation: OperationID? = nil,
        _ metadata: OutboxLogger.Metadata = [:],
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        let description = error.map(OutboxLogger.Problem.describe) ?? message
        var fields = metadata
        fields[Key.problem] = .string(kind.rawValue)
        fields[Key.error] = .string(description)
        if let operation { fields[Key.operation] = .string(operation.description) }
        if case OutboxError.closed? = error, kind != .outcomeNotRecorded {
            logger.log(level: .debug, "\(message) (the outbox closed)", metadata: fields, file: file, function: function, line: line)
            return
        }
        let problem = OutboxLogger.Problem(kind: kind, recordedAt: clock.now(), operationID: operation, errorDescription: description)
        tally.withLock { $0.record(problem) }
        logger.log(level: kind.logLevel, "\(message)", metadata: fields, file: file, function: function, line: line)
    }

    /// Problems so far, by kind.
    var problemCounts: [OutboxLogger.Problem.Kind: Int] {
        tally.withLock { $0.counts }
    }

    /// The latest problems, oldest first.
    var recentProblems: [OutboxLogger.Problem] {
        tally.withLock { $0.recent }
    }
}

extension EngineLog {
    /// The metadata keys the engine writes. Each names an id, a type, a status, a code, a seq, a
    /// count or a moment: never a payload, an entity label, a summary or a credential.
    enum Key {
        static let operation = "outbox.operation"
        static let operationType = "outbox.operation_type"
        static let attempt = "outbox.attempt"
        static let seq = "outbox.seq"
        static let trigger = "outbox.trigger"
        static let disposition = "outbox.disposition"
        static let outcome = "outbox.outcome"
        static let statusCode = "outbox.status_code"
        static let errorCode = "outbox.error_code"
        static let transportFailure = "outbox.transport_failure"
        static let nextAttemptAt = "outbox.next_attempt_at"
        static let problem = "outbox.problem"
        static let error = "outbox.error"
        static let count = "outbox.count"
        static let business = "outbox.business"
        static let recordType = "outbox.record_type"
        static let schemaVersion = "outbox.schema_version"
        static let sent = "outbox.sent"
        static let halted = "outbox.halted"
        static let nextPassAt = "outbox.next_pass_at"
        static let reason = "outbox.reason"
        static let eventsRemoved = "outbox.events_removed"
        static let liveBytes = "outbox.live_bytes"
        static let budgetBytes = "outbox.budget_bytes"
        static let engineVersion = "outbox.engine_version"
        static let formatVersion = "outbox.format_version"
    }

    /// A moment as metadata: ISO 8601, UTC.
    static func moment(_ date: Date) -> OutboxLogger.MetadataValue {
        .string(date.formatted(.iso8601))
    }

    /// An attempt's outcome in the log's words: `response(201)`, `no_response(offline)`, `not_sent`.
    static func describe(_ outcome: AttemptOutcome) -> String {
        switch outcome {
        case .response(let statusCode): "response(\(statusCode))"
        case .noResponse(let failure): "no_response(\(failure.rawValue))"
        case .notSent: "not_sent"
        }
    }
}
