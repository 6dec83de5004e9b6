import Foundation
@testable import Outbox
import OutboxAudit
import Testing

@Suite("The storage budget's policy")
struct StorageBudgetPolicyTests {
    /// 1 MiB: the threshold is 838,856 bytes (eight tenths, rounded down by tenths), the map
    /// 1,310,720, the reserve 64 KiB and 2 KiB per unsettled row.
    static let budget = StorageBudget(budgetBytes: 1 << 20)

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var reading: StorageBudget.Reading
        var expected: StorageBudget.Action
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "little written: proceed without measuring",
            reading: .init(payloadBytes: 100, usedBytes: 100_000), expected: .proceed),
        Row(name: "written size unknown: measure",
            reading: .init(payloadBytes: 100, usedBytes: nil), expected: .measure),
        Row(name: "the write ends exactly at half the budget: proceed",
            reading: .init(payloadBytes: 100, usedBytes: 524_288 - 2048 - 100), expected: .proceed),
        Row(name: "the write ends a byte past half the budget: measure",
            reading: .init(payloadBytes: 100, usedBytes: 524_288 - 2048 - 99), expected: .measure),
        Row(name: "a payload too large for the unmeasured half: measure",
            reading: .init(payloadBytes: 600_000, usedBytes: 10_000), expected: .measure),
        Row(name: "measured, below the threshold, room left: proceed",
            reading: .init(payloadBytes: 100, usedBytes: 900_000, liveBytes: 500_000, unsettledRows: 10), expected: .proceed),
        Row(name: "measured, one byte below the threshold: no compaction",
            reading: .init(payloadBytes: 100, liveBytes: 838_855, unsettledRows: 10), expected: .proceed),
        Row(name: "measured, at the threshold: compact first",
            reading: .init(payloadBytes: 100, liveBytes: 838_856, unsettledRows: 10), expected: .compactFirst),
        Row(name: "compacted, still high, outside the reserve: proceed",
            reading: .init(payloadBytes: 100, liveBytes: 900_000, unsettledRows: 10, compacted: true), expected: .proceed),
        Row(name: "compacted, the write ends exactly at the reserve: proceed",
            reading: .init(payloadBytes: 100, liveBytes: 1_048_576 - 86_016 - 2148, unsettledRows: 10, compacted: true), expected: .proceed),
        Row(name: "compacted, the write reaches a byte into the reserve: refuse",
            reading: .init(payloadBytes: 100, liveBytes: 1_048_576 - 86_016 - 2147, unsettledRows: 10, compacted: true), expected: .refuse),
        Row(name: "many rows waiting widen the reserve: refuse below the threshold",
            reading: .init(payloadBytes: 100, liveBytes: 200_000, unsettledRows: 400), expected: .refuse),
        Row(name: "nothing waiting: the reserve is 64 KiB",
            reading: .init(payloadBytes: 0, liveBytes: 1_048_576 - 65_536 - 2048, unsettledRows: 0, compacted: true), expected: .proceed),
        Row(name: "measured live bytes but not the rows waiting: measure",
            reading: .init(payloadBytes: 100, liveBytes: 10, unsettledRows: nil), expected: .measure),
    ]

    @Test(arguments: rows)
    func eachReadingLeadsToItsAction(_ row: Row) {
        #expect(Self.budget.action(for: row.reading) == row.expected)
    }

    @Test func aFullFileIsCompactedOnceThenTheRefusalStands() {
        #expect(Self.budget.actionAfterFullFile(compacted: false) == .compactFirst)
        #expect(Self.budget.actionAfterFullFile(compacted: true) == .refuse)
    }

    @Test func theNumbersDerivedFromTheBudgetAreTheDocumentedOnes() {
        #expect(Self.budget.mapSizeBytes == 1_310_720, "a quarter more than the budget")
        #expect(Self.budget.compactionThresholdBytes == 838_856, "80 % of the budget")
        #expect(Self.budget.reserveBytes(unsettledRows: 0) == 64 << 10)
        #expect(Self.budget.reserveBytes(unsettledRows: 3) == (64 << 10) + 3 * (2 << 10))
        #expect(StorageBudget(budgetBytes: OutboxConfiguration.minimumJournalBytes).mapSizeBytes == 320 << 10)
    }

    @Test func everyReadingEndsInProceedOrRefuseWithinThreeSteps() {
        // Whatever the journal measures, the driver's loop ends: measuring and compacting each
        // happen at most once.
        for used in [nil, 0, 400_000, 1_000_000] as [Int?] {
            for live in [0, 500_000, 838_856, 1_000_000] {
                for unsettled in [0, 50, 500] {
                    var reading = StorageBudget.Reading(payloadBytes: 4096, usedBytes: used)
                    var steps = 0
                    loop: while true {
                        steps += 1
                        switch Self.budget.action(for: reading) {
                        case .proceed, .refuse: break loop
                        case .measure:
                            reading.liveBytes = live
                            reading.unsettledRows = unsettled
                        case .compactFirst:
                            reading.compacted = true
                            reading.liveBytes = live / 2
                        }
                    }
                    #expect(steps <= 3, "used \(String(describing: used)), live \(live), unsettled \(unsettled)")
                }
            }
        }
    }
}
