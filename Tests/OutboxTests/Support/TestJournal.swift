import Foundation
@testable import Outbox
import OutboxAudit
import TestHarness
import OutboxTesting

/// A journal in a fresh temporary directory, with a manual clock and a scripted transport.
final class TestJournal: Sendable {
    let directory: URL
    let clock: ManualClock
    let transport: ScriptedTransport
    let account: String

    init(account: String = "member-42", transport: ScriptedTransport = ScriptedTransport(otherwise: .fail(.offline))) {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("outbox-test-\(UUID().uuidString)", isDirectory: true)
        clock = ManualClock()
        self.transport = transport
        self.account = account
    }

    /// Every type queues as ``OperationTypePolicy/idempotent`` unless a test lists it.
    func configuration() -> OutboxConfiguration {
        OutboxConfiguration(account: account, clock: clock, defaultPolicy: .idempotent)
    }

    func open(_ configure: (inout OutboxConfiguration) -> Void = { _ in }) throws -> Outbox {
        var configuration = configuration()
        configure(&configuration)
        return try Outbox(directory: directory, transport: transport, configuration: configuration).withOpeningRecorded()
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    deinit {
        remove()
    }
}

/// A product the pharmacy creates: valid, distinct per `number`.
func productRequest(_ number: Int = 1, entityID: String? = nil, category: String = "Products") -> OutboxRequest {
    OutboxRequest(
        businessID: "pharmacy-7",
        operationType: "product.create",
        endpoint: "/products",
        payload: Data(#"{"id":"product-\#(number)","name":"Antiseptic \#(number)","price":12.5}"#.utf8),
        entityID: entityID,
        category: category,
        entityLabel: "Antiseptic \(number)",
        summary: "New product"
    )
}

/// The seed of a randomized test: `OUTBOX_SEED` when set (to try another history, or replay a
/// failure), else always the same one; `round` added, so each round of a test walks a history
/// of its own (a failure prints its round's seed: `OUTBOX_SEED` set to it replays it as round 0).
/// A seed drawn afresh each run made `swift test` answer differently on unchanged code whenever
/// a rare history broke something; a hunt for new histories sets `OUTBOX_SEED`, or
/// `OUTBOX_SOAK=1` for ten times the rounds (``historyRounds(_:)``).
func testSeed(round: Int = 0) -> UInt64 {
    let base = ProcessInfo.processInfo.environment["OUTBOX_SEED"].flatMap(UInt64.init) ?? defaultTestSeed
    return base &+ UInt64(round)
}

/// The rounds of a random-history test: `quick` of them, ten times as many under `OUTBOX_SOAK=1`,
/// or `OUTBOX_HISTORY_ROUNDS`.
func historyRounds(_ quick: Int) -> Range<Int> {
    0..<Soak.size("OUTBOX_HISTORY_ROUNDS", quick: quick, soak: quick * 10)
}

/// The seed every randomized test of this target uses by default.
let defaultTestSeed: UInt64 = 20_261_206

extension Outbox {
    /// This engine once its opening is committed: an opening with nothing to abandon is recorded
    /// on the writer's queue while the app goes on, and a test that reads the journal at once
    /// reads it with its opening.
    func withOpeningRecorded() -> Outbox {
        untilWritesLanded()
        return self
    }
}
