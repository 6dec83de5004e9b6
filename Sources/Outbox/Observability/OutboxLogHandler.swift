/// Where an ``OutboxLogger``'s records go: the app's adapter to its own logging.
///
/// The shape is swift-log's `LogHandler`. Implement it as a struct whose ``logLevel`` and
/// ``metadata`` are stored properties, so that they behave as values: setting them on one
/// logger never changes another.
///
/// ```swift
/// struct PrintHandler: OutboxLogHandler {
///     var logLevel: OutboxLogger.Level = .info
///     var metadata: OutboxLogger.Metadata = [:]
///     func log(level: OutboxLogger.Level, message: OutboxLogger.Message, metadata: OutboxLogger.Metadata?,
///              source: String, file: String, function: String, line: UInt) {
///         print(level, message, self.metadata.merging(metadata ?? [:]) { $1 })
///     }
/// }
/// ```
public protocol OutboxLogHandler: Sendable {
    /// Emits one record. ``OutboxLogger`` has already checked the level.
    /// - Parameters:
    ///   - metadata: the record's own metadata; the handler's ``metadata`` is added by the handler.
    ///   - source: the module the record comes from.
    func log(
        level: OutboxLogger.Level,
        message: OutboxLogger.Message,
        metadata: OutboxLogger.Metadata?,
        source: String,
        file: String,
        function: String,
        line: UInt
    )

    /// One item of the metadata every record carries.
    subscript(metadataKey key: String) -> OutboxLogger.MetadataValue? { get set }

    /// The metadata every record carries.
    var metadata: OutboxLogger.Metadata { get set }

    /// The least severe level logged.
    var logLevel: OutboxLogger.Level { get set }
}

extension OutboxLogHandler {
    public subscript(metadataKey key: String) -> OutboxLogger.MetadataValue? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}

/// A handler that writes nothing: the engine's default, so that an app that gives no logger pays
/// for no message (its level is `.critical`, which the engine never uses).
package struct NoOpOutboxLogHandler: OutboxLogHandler {
    public var logLevel: OutboxLogger.Level
    public var metadata: OutboxLogger.Metadata

    public init(logLevel: OutboxLogger.Level = .critical, metadata: OutboxLogger.Metadata = [:]) {
        self.logLevel = logLevel
        self.metadata = metadata
    }

    public func log(
        level: OutboxLogger.Level, message: OutboxLogger.Message, metadata: OutboxLogger.Metadata?,
        source: String, file: String, function: String, line: UInt
    ) {}
}
