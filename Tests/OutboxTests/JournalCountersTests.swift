import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxWire
import Testing

@Suite("The counters value")
struct JournalCountersTests {
    /// Counters of every kind: statuses, outcomes, conflicts, Sync tab cards.
    private var sample: JournalCounters {
        var counters = JournalCounters()
        counters.events = 12
        counters.eventBytes = 4_321
        counters.attempts = 7
        counters.add(3, to: OutboxStatus.queued)
        counters.add(2, to: OutboxStatus.failed)
        counters.add(5, to: OutboxStatus.synced)
        counters.add(1, to: OutboxStatus.conflicted)
        counters.add(4, to: OutcomeCategory.accepted)
        counters.add(1, to: .conflicts(operationType: "product.update"))
        counters.add(1, to: .revisionConflicts(operationType: "product.update"))
        counters.add(3, to: .tab(.waiting, category: "Products ✓"))
        counters.add(1, to: .tab(.conflicted, category: "Products ✓"))
        return counters
    }

    @Test func theStoredValueReadsBackAsTheCountersItHolds() throws {
        let counters = sample
        let decoded = try JournalCounters(decoding: counters.encoded())
        #expect(decoded.byName == counters.byName)
        #expect(decoded.tabCounts(.waiting) == ["Products ✓": 3])
        #expect(decoded.count(of: .failed) == 2 && decoded.count(of: .accepted) == 4)
    }

    @Test func equalCountersStoreEqualBytesWhateverTheOrderTheyCameIn() {
        var other = JournalCounters()
        other.add(1, to: .tab(.conflicted, category: "Products ✓"))
        other.add(3, to: .tab(.waiting, category: "Products ✓"))
        other.add(1, to: .revisionConflicts(operationType: "product.update"))
        other.add(1, to: .conflicts(operationType: "product.update"))
        other.add(4, to: OutcomeCategory.accepted)
        for (status, count) in [(OutboxStatus.conflicted, 1), (.synced, 5), (.failed, 2), (.queued, 3)] { other.add(Int64(count), to: status) }
        other.attempts = 7
        other.eventBytes = 4_321
        other.events = 12
        #expect(other.encoded() == sample.encoded())
    }

    @Test func theBadgeReadFromTheStoredBytesEqualsTheDecodedCounts() throws {
        let bytes = sample.encoded()
        let badge = try bytes.withUnsafeBytes { try JournalCounters.count(ofStatuses: \.countsOnBadge, in: $0) }
        #expect(badge == 3 + 2 + 1)
        let unsettled = try bytes.withUnsafeBytes { try JournalCounters.count(ofStatuses: { !$0.isTerminal }, in: $0) }
        #expect(unsettled == 3 + 2 + 1)
    }

    @Test func aCutOrLengthenedValueIsDamageNotACount() {
        let bytes = sample.encoded()
        for damaged in [Array(bytes.dropLast()), Array(bytes.prefix(9)), bytes + [0]] {
            #expect(throws: DecodingProblem.self) { try damaged.withUnsafeBytes { try JournalCounters.count(ofStatuses: \.countsOnBadge, in: $0) } }
            #expect(throws: DecodingProblem.self) { try JournalCounters(decoding: damaged) }
        }
    }
}
