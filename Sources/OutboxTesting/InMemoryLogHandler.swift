public import Outbox
import Synchronization

/// A log handler that keeps every record in memory, for tests and for an app's own diagnostics
/// screen.
///
/// ```swift
/// let handler = InMemoryLogHandler()
/// let configuration = OutboxConfiguration(account: "member-42", logger: OutboxLogger(label: "outbox", handler: handler))
/// // ... the engine runs ...
/// handler.records.filter { $0.level >= .warning }
/// ```
///
/// Copies share their records (so the handler a test holds sees what the engine's copy logged);
/// each copy's level and metadata are its own values. The level is `.trace` unless set.
public struct InMemoryLogHandler: OutboxLogHandler {
    /// One record as it was logged.
    public struct Record: Sendable, Equatable {
        public var level: OutboxLogger.Level
        public var message: String
        /// The handler's metadata with the record's own over it.
        public var metadata: OutboxLogger.Metadata
        public var source: String

        /// The message and every metadata key and value, as one text: what a sink would write.
        public var text: String {
            ([message] + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }
    }

    /// The records shared by every copy.
    private final class Storage: Sendable {
        let records = Mutex<[Record]>([])
    }

    public var logLevel: OutboxLogger.Level
    public var metadata: OutboxLogger.Metadata
    private let storage = Storage()

    public init(logLevel: OutboxLogger.Level = .trace, metadata: OutboxLogger.Metadata = [:]) {
        self.logLevel = logLevel
        self.metadata = metadata
    }

    /// Every record so far, in the order logged.
    public var records: [Record] {
        storage.records.withLock { $0 }
    }

    /// Forgets every record so far.
    public func removeAll() {
        storage.records.withLock { $0.removeAll() }
    }

    public func log(
        level: OutboxLogger.Level, message: OutboxLogger.Message, metadata: OutboxLogger.Metadata?,
        source: String, file: String, function: String, line: UInt
    ) {
        let record = Record(
            level: level, message: message.description,
            metadata: self.metadata.merging(metadata ?? [:]) { _, own in own }, source: source
        )
        storage.records.withLock { $0.append(record) }
    }
}
