import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

@Suite("The engine's logger")
struct LoggerTests {
    @Test func levelAndMetadataBehaveAsValues() {
        for handler in [InMemoryLogHandler() as any OutboxLogHandler, NoOpOutboxLogHandler()] {
            var first = OutboxLogger(label: "first", handler: handler)
            first.logLevel = .debug
            first[metadataKey: "only-on"] = "first"

            var second = first
            second.logLevel = .error
            second[metadataKey: "only-on"] = "second"

            #expect(first.logLevel == .debug)
            #expect(second.logLevel == .error)
            #expect(first[metadataKey: "only-on"] == "first")
            #expect(second[metadataKey: "only-on"] == "second")
        }
    }

    @Test func theDefaultLoggerWritesNothingAndBuildsNoMessage() {
        let configuration = OutboxConfiguration(account: "member-42")
        #expect(configuration.logger.handler is NoOpOutboxLogHandler)
        #expect(configuration.logger.logLevel == .critical)
        var built = 0
        func message() -> OutboxLogger.Message {
            built += 1
            return "built"
        }
        configuration.logger.debug(message())
        configuration.logger.error(message(), metadata: ["outbox.seq": "1"])
        #expect(built == 0, "below the level, a message is never built")
    }

    @Test func recordsBelowTheLevelAreDroppedAndTheRestKeptWithTheirMetadata() throws {
        var handler = InMemoryLogHandler(logLevel: .warning)
        handler[metadataKey: "app"] = "pharmacy"
        let logger = OutboxLogger(label: "outbox", handler: handler)
        logger.info("dropped")
        logger.warning("kept", metadata: ["outbox.seq": "7", "app": "overridden"])
        #expect(handler.records.map(\.message) == ["kept"])
        let record = try #require(handler.records.first)
        #expect(record.level == .warning)
        #expect(record.metadata == ["outbox.seq": "7", "app": "overridden"], "the record's own metadata wins")
        #expect(record.source == "Outbox")
    }

    @Test func copiesOfAnInMemoryHandlerShareTheirRecords() {
        let handler = InMemoryLogHandler()
        var logger = OutboxLogger(label: "outbox", handler: handler)
        logger[metadataKey: "copy"] = "engine"
        logger.notice("from the engine's copy")
        #expect(handler.records.count == 1)
        #expect(handler.records.first?.metadata["copy"] == "engine")
        #expect(handler.metadata.isEmpty, "the copy's metadata is its own")
        handler.removeAll()
        #expect(handler.records.isEmpty)
    }

    @Test func levelsAreOrderedAsSwiftLogOrdersThem() {
        #expect(OutboxLogger.Level.allCases.map(\.rawValue) == ["trace", "debug", "info", "notice", "warning", "error", "critical"])
        #expect(OutboxLogger.Level.allCases == OutboxLogger.Level.allCases.sorted())
    }

    @Test func metadataValuesPrintAsText() {
        let value: OutboxLogger.MetadataValue = ["b": "2", "a": ["x", "y"]]
        #expect(value.description == "[a: [x, y], b: 2]")
        #expect(OutboxLogger.MetadataValue.string("17").description == "17")
    }
}
