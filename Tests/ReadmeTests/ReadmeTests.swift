import Foundation
import Outbox
import OutboxTesting
import Testing

/// The README's samples cannot rot: every Swift block of README.md is in `ReadmeSamples.swift`
/// word for word (so it compiles with the engine as it is), and the first hour's four run.
@Suite("The README's samples")
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The Swift blocks of the README, each its lines.
    static func swiftBlocks() throws -> [[String]] {
        let lines = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8).components(separatedBy: "\n")
        var blocks: [[String]] = []
        var current: [String]?
        for line in lines {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!)
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test func everySwiftBlockOfTheReadmeIsCompiledHere() throws {
        let samples = try String(contentsOf: Self.root.appendingPathComponent("Tests/ReadmeTests/ReadmeSamples.swift"), encoding: .utf8)
        let blocks = try Self.swiftBlocks()
        #expect(blocks.count >= 6, "the README's Swift blocks: \(blocks.count)")
        for block in blocks {
            // Inside a function of the samples: each line indented twice.
            let indented = block.map { $0.isEmpty ? "" : "        " + $0 }.joined(separator: "\n")
            #expect(samples.contains(indented), "not in ReadmeSamples.swift word for word:\n\(block.joined(separator: "\n"))")
        }
    }

    @Test func theFirstHourRunsAndTheProductLandsOnce() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = InMemoryServer()
        server.setOnline(false)
        let outbox = try ReadmeSamples.open(journalURL: directory, myTransport: server)
        defer { outbox.close() }
        let (id, _) = try await ReadmeSamples.write(outbox)

        // The screen's first page, with no signal.
        let shown = AsyncStream.makeStream(of: String.self)
        let watching = Task {
            await ReadmeSamples.observe(outbox, isOnline: false) { _, words in shown.continuation.yield(words) }
        }
        var words = shown.stream.makeAsyncIterator()
        #expect(await words.next() == "waiting for internet")
        watching.cancel()

        server.setOnline(true)
        let report = await ReadmeSamples.wakeAndDrain(outbox, deadline: .distantFuture)
        #expect(report.nextWake == nil, "nothing left to send")
        #expect(try outbox.operation(id)?.status == .synced)
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }
}
