import Foundation
@testable import OutboxDemo
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
        let outcome = try await PharmacyAfternoon.run(DemoOptions(speed: 120, patience: 300)) { output.write($0) }
        #expect(outcome.promises.count == 15)
        for promise in outcome.promises {
            #expect(promise.held, "\(promise.text)\n\(output.all)")
        }
        let text = output.all
        // What the member reads, as the engine said it.
        #expect(text.contains("Saved on this device, waiting for internet: Antiseptic 500 ml"))
        #expect(text.contains("Sync tab: Connect to the internet to sync these changes. Badge 1."))
        #expect(text.contains("Products: 1 change"))
        // Her phone's list, from the records: the price as she typed it, and its state in words.
        #expect(text.contains("Antiseptic 500 ml: 12.50, waiting for internet"))
        #expect(text.contains("Antiseptic 500 ml: 12.50, saved, revision 1"))
        #expect(text.contains("Amaka Eze: pharmacist, waiting for the owner's approval"))
        // The lost response and its replay, as the server saw them.
        #expect(text.contains("POST /employees for Chidi Okafor: applied, connection dropped before any answer"))
        #expect(text.contains("POST /employees for Chidi Okafor: already applied: the stored answer replayed, answered 201"))
        // The final tab: the blocked row with its reason, the approval card.
        #expect(text.contains("Tramadol 50 mg, new product, blocked: Only the owner may add a controlled substance."))
        #expect(text.contains("Waiting for approval: 1 change"))
        // Refused changes rolled back on the screen, with the server's reason.
        #expect(text.contains("Tramadol 50 mg: not on the list, rolled back: Only the owner may add a controlled substance."))
        #expect(text.contains("Chidi Okafor: supervisor, waiting for internet"))
        #expect(text.contains("PUT /employees/chidi for Chidi Okafor, If-Match \"1\": refused (validation_failed), answered 422"))
        #expect(text.contains("Chidi Okafor: cashier, rolled back: Chidi Okafor started today: a supervisor needs 90 days of service."))
        // Two offline edits of one product: shown as typed, sent in order, each against the revision before it.
        #expect(text.contains("Antiseptic 500 ml: 13.50, waiting for internet"))
        #expect(text.contains(#"Why the phone shows 13.50 (recordHistory): shows the member's {"id":"antiseptic-500","name":"Antiseptic 500 ml","price":13.5} from write "#))
        #expect(text.contains(#"waiting for internet; the server last confirmed {"id":"antiseptic-500","name":"Antiseptic 500 ml","price":12.5,"revision":1} at revision 1"#))
        #expect(text.contains("Antiseptic 500 ml: 13.50, sending..."))
        #expect(text.contains("PUT /products/antiseptic-500 for Antiseptic 500 ml, If-Match \"1\": applied, answered 200"))
        #expect(text.contains("PUT /products/antiseptic-500 for Antiseptic 500 ml, If-Match \"2\": applied, answered 200"))
        #expect(text.contains("in this order: 13.00 with If-Match \"1\", then 13.50 with If-Match \"2\"; the phone's base is now revision 3."))
        #expect(text.contains("Antiseptic 500 ml: 13.50, saved, revision 3"))
        #expect(text.contains("sent against revision 2"))
        // The proof from journal-inspect.
        #expect(text.contains("Verdict: synced on attempt"))
        #expect(text.contains("replayed, not applied twice"))
        #expect(text.contains("✓ Every write the server accepted was applied exactly once"))
        // The price edited on two devices: the conflict shown with the other price, the choice applied.
        #expect(text.contains("PUT /products/antiseptic-500 for Antiseptic 500 ml, If-Match \"3\": changed elsewhere since the edit began, answered 412"))
        #expect(text.contains("Changed elsewhere: 1 change"))
        #expect(text.contains(#"on the server now: {"id":"antiseptic-500","name":"Antiseptic 500 ml","price":14"#))
        #expect(text.contains("Antiseptic 500 ml: 14.50, changed elsewhere: 14.00 on the server (revision 4)"))
        #expect(text.contains("PUT /products/antiseptic-500 for Antiseptic 500 ml, If-Match \"4\": applied, answered 200"))
        #expect(text.contains(#"The antiseptic on the server: {"id":"antiseptic-500","name":"Antiseptic 500 ml","price":14.5}, revision 5"#))
        #expect(text.contains("Antiseptic 500 ml: 14.50, saved, revision 5"))
        // The new scenes' promises, as printed.
        #expect(text.contains("✓ The phone showed the member's price while offline, waiting for internet"))
        #expect(text.contains("✓ A refused change was rolled back on screen with the server's reason"))
        #expect(text.contains("✓ Two offline edits of one record reached the server in order, without a conflict"))
        // The pull: the counter's gauze on the phone from launch; at closing time its new price
        // reaches the phone while the member's unsent antiseptic price stays on screen.
        #expect(text.contains("POST /products for Gauze 10 cm: applied, answered 201"))
        #expect(text.contains("pulled 1 change from the shop's feed"))
        #expect(text.contains("Lists refreshed (pull): "))
        #expect(text.contains("✓ At launch the phone pulled the shop's products"))
        #expect(text.contains("✓ The counter's gauze price reached the phone by the feed while Folake's unsent 15.00 for the antiseptic stayed on screen"))
        #expect(text.contains("✓ Folake's 15.00 was sent, applied once and confirmed by the feed at the next revision, and never flickered back"))
        let tramadol = "Tramadol 50 mg: not on the list, rolled back: Only the owner may add a controlled substance."
        #expect(try Self.screens(in: text, after: "Closing time.") == [
            ["Antiseptic 500 ml: 15.00, waiting for internet", "Gauze 10 cm: 2.00, saved, revision 1", tramadol],
            ["Antiseptic 500 ml: 15.00, sending...", "Gauze 10 cm: 2.25, saved, revision 2", tramadol],
            ["Antiseptic 500 ml: 15.00, saved, revision 6", "Gauze 10 cm: 2.25, saved, revision 2", tramadol],
        ], "the closing scene's lists, in order:\n\(text)")
        #expect(text.contains("At the counter, Ade changes the gauze to 2.25 on the shop's tablet (POST /_control/records/product/gauze-10): revision 2 on the server."))
        #expect(text.contains(#"PUT /products/antiseptic-500 for Antiseptic 500 ml, If-Match "5": refused (unavailable), answered 503"#))
        #expect(text.contains(#"PUT /products/antiseptic-500 for Antiseptic 500 ml, If-Match "5": applied, answered 200"#))
        #expect(text.contains("the antiseptic 15.00 (waiting for internet), then 15.00 (sending...)"))
        #expect(!text.contains("the antiseptic 14.50") && !text.contains("the gauze 2.25, then 2.00"), "nothing went back")
        // The delivery note photographed with no signal, uploaded, then its product sent.
        #expect(text.contains("Her phone: Cotton wool 100 g: delivery-note.jpg waiting for internet"))
        #expect(text.contains("The delivery note in the object store: 2500000 bytes"))
        #expect(text.contains("✓ The delivery note photographed with no signal reached the object store whole"))
        #expect(!text.contains("✗"))
        #expect(!FileManager.default.fileExists(atPath: outcome.journal.path), "a temporary journal is removed")
    }

    @Test func whatTheListShowedIsToldOnceARun() {
        #expect(PharmacyAfternoon.distinctRuns(["15.00", "15.00", "14.50", "15.00"]) == ["15.00", "14.50", "15.00"], "a value going back is told")
        #expect(PharmacyAfternoon.distinctRuns([]).isEmpty)
    }

    /// The product lists the phone showed after the line starting `scene`, in order: each screen
    /// its list's lines, without their indentation.
    static func screens(in text: String, after scene: String) throws -> [[String]] {
        let start = try #require(text.range(of: scene), "no \(scene)")
        var screens: [[String]] = []
        var current: [String]?
        for line in text[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if line.hasSuffix("On Folake's phone:") {
                current.map { screens.append($0) }
                current = []
            } else if current != nil, line.hasPrefix("          "), !trimmed.isEmpty {
                // The list's heading is not one of its lines.
                if trimmed != "Products" { current?.append(trimmed) }
            } else if current != nil {
                current.map { screens.append($0) }
                current = nil
            }
        }
        current.map { screens.append($0) }
        return screens
    }

    @Test func theJSONRunCarriesTheSameLines() async throws {
        let output = Output()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-demo-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outcome = try await PharmacyAfternoon.run(DemoOptions(journal: directory, speed: 120, json: true, patience: 300)) { output.write($0) }
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
