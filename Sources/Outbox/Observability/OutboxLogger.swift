/// What the engine logs through: a label, a level and metadata, handed to a handler the app
/// supplies (``OutboxConfiguration/logger``).
///
/// The shape is swift-log's `Logger`, so an app forwards it to swift-log, `os.Logger` or its own
/// sink in a few lines (see `Docs/observability.md`):
///
/// ```swift
/// var logger = OutboxLogger(label: "com.example.outbox", handler: MySwiftLogHandler())
/// logger.logLevel = .debug
/// logger[metadataKey: "store"] = "pharmacy-7"
/// OutboxConfiguration(account: "member-42", logger: logger)
/// ```
///
/// The engine never sets up anything global: it logs only through the logger it was given, and
/// the default logger writes nothing. Records carry operation ids, types, statuses, error codes,
/// seqs and attempt numbers; never a payload, an entity label, a summary or a credential.
///
/// Level and metadata behave as values: changing them on a copy leaves the original as it was.
public struct OutboxLogger: Sendable {
    /// Who logs: recorded with every message, for the app's sink to file it under.
    public let label: String
    /// Where the records go; its level and metadata are this logger's.
    public var handler: any OutboxLogHandler

    /// A logger writing to `handler`.
    public init(label: String, handler: any OutboxLogHandler) {
        self.label = label
        self.handler = handler
    }

    /// A logger that writes nothing: the default.
    public init(label: String = "outbox") {
        self.init(label: label, handler: NoOpOutboxLogHandler())
    }

    /// The least severe level logged; below it, a message is not even built.
    public var logLevel: Level {
        get { handler.logLevel }
        set { handler.logLevel = newValue }
    }

    /// Metadata carried by every record of this logger.
    public subscript(metadataKey key: String) -> MetadataValue? {
        get { handler[metadataKey: key] }
        set { handler[metadataKey: key] = newValue }
    }

    /// Logs `message` at `level` when the level is at least ``logLevel``.
    /// - Parameters:
    ///   - metadata: the record's own metadata, beside the logger's.
    ///   - source: the module the record comes from; the engine's say `Outbox`.
    public func log(
        level: Level,
        _ message: @autoclosure () -> Message,
        metadata: @autoclosure () -> Metadata? = nil,
        source: String = "Outbox",
        file: String = #fileID,
        function: String = #function,
        line: UInt = #line
    ) {
        guard level >= logLevel else { return }
        handler.log(
            level: level, message: message(), metadata: metadata(), source: source,
            file: file, function: function, line: line
        )
    }

    public func trace(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .trace, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    public func debug(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .debug, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    public func info(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                     file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .info, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    public func notice(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                       file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .notice, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    public func warning(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                        file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .warning, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    public func error(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .error, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    public func critical(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                         file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .critical, message(), metadata: metadata(), file: file, function: function, line: line)
    }
}

extension OutboxLogger {
    /// How severe a record is; the same seven levels, with the same names, as swift-log.
    public enum Level: String, Sendable, Codable, CaseIterable, Comparable {
        case trace
        case debug
        case info
        case notice
        case warning
        case error
        case critical

        private var rank: Int {
            switch self {
            case .trace: 0
            case .debug: 1
            case .info: 2
            case .notice: 3
            case .warning: 4
            case .error: 5
            case .critical: 6
            }
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    /// A record's metadata: the engine's keys start with `outbox.`.
    public typealias Metadata = [String: MetadataValue]

    /// One metadata value: text, or a list or dictionary of values.
    public enum MetadataValue: Sendable, Equatable, CustomStringConvertible,
        ExpressibleByStringLiteral, ExpressibleByStringInterpolation,
        ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
    {
        case string(String)
        case array([MetadataValue])
        case dictionary(Metadata)

        public init(stringLiteral value: String) { self = .string(value) }
        public init(arrayLiteral elements: MetadataValue...) { self = .array(elements) }
        public init(dictionaryLiteral elements: (String, MetadataValue)...) {
            self = .dictionary(Dictionary(elements) { _, last in last })
        }

        public var description: String {
            switch self {
            case .string(let text): text
            case .array(let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
            case .dictionary(let values):
                "[" + values.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "]"
            }
        }
    }

    /// A record's message: text, written with a string literal or interpolation.
    public struct Message: Sendable, Equatable, CustomStringConvertible,
        ExpressibleByStringLiteral, ExpressibleByStringInterpolation
    {
        public var description: String

        public init(stringLiteral value: String) { description = value }
        public init(_ text: String) { description = text }
    }
}
