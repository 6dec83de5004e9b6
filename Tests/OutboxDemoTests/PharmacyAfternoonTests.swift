import Foundation
import OutboxDemo
import Synchronization
import Testing

/// The demo's scenario, run as the demo runs it: every promise it prints must hold, so the demo
/// cannot rot.
@Suite("outbox-demo's afternoon", .timeLimit(.minutes(10)))
struct PharmacyAfternoonTests {
    final class Output: Sendable {
        private let text = Mutex("")
        func write(_ line: String) { text.withLock { $0 += line } }
        var all: String { text.withLock { $0 } }
    }

    @Test func everyPromiseItPrintsHolds() async throws {
        let output = Output()
        let outcome = try await PharmacyAfternoon.run(DemoOptions(speed: 120)) { output.write($0) }
        #expect(outcome.promises.count == 8)
        for promise in outcome.promises {
            #expect(promise.held, "\(promise.text)\n\(output.all)")
        }
        let text = output.all
        // What the member reads, as the engine said it.
        #expect(text.contains("Saved on this device, waiting for internet: Antiseptic 500 ml"))
        #expect(text.contains("Sync tab: Connect to the internet to sync these changes. Badge 1."))
        #expect(text.contains("Products: 1 change"))
        // The lost response and its replay, as the server saw them.
        #expect(text.contains("POST /employees for Chidi Okafor: applied, connection dropped before any answer"))
        #expect(text.contains("POST /employees for Chidi Okafor: already applied: the stored answer replayed, answered 201"))
        // The final tab: the blocked row with its reason, the approval card.
        #expect(text.contains("Tramadol 50 mg, new product, blocked: Only the owner may add a controlled substance."))
        #expect(text.contains("Waiting for approval: 1 change"))
        // The proof from journal-inspect.
        #expect(text.contains("Verdict: synced on attempt"))
        #expect(text.contains("replayed, not applied twice"))
        #expect(text.contains("✓ Every write the server accepted was applied exactly once"))
        // The price edited on two devices: the conflict shown with the other price, the choice applied.
        #expect(text.contains("PATCH /products/antiseptic-500 for Antiseptic 500 ml: changed elsewhere since the edit began, answered 412"))
        #expect(text.contains("Changed elsewhere: 1 change"))
        #expect(text.contains(#"on the server now: {"id":"antiseptic-500","name":"Antiseptic 500 ml","price":14"#))
        #expect(text.contains("PATCH /products/antiseptic-500 for Antiseptic 500 ml: applied, answered 200"))
        #expect(text.contains(#"The antiseptic on the server: {"id":"antiseptic-500","name":"Antiseptic 500 ml","price":13.5}, revision 3"#))
        #expect(!text.contains("✗"))
        #expect(!FileManager.default.fileExists(atPath: outcome.journal.path), "a temporary journal is removed")
    }

    @Test func theJSONRunCarriesTheSameLines() async throws {
        let output = Output()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-demo-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outcome = try await PharmacyAfternoon.run(DemoOptions(journal: directory, speed: 120, json: true)) { output.write($0) }
        #expect(outcome.allHeld)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let lines = try output.all.split(separator: "\n").map { try decoder.decode(Narrator.Line.self, from: Data($0.utf8)) }
        #expect(lines.count == outcome.lines.count)
        #expect(Set(lines.map(\.source)) == ["scene", "engine", "server", "check"])
        #expect(lines.filter { $0.source == "check" }.allSatisfy { $0.fields["held"] == "true" })
        // The journal is kept where asked, for journal-inspect afterwards.
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path))
    }
}
