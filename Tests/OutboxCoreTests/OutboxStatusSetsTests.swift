import OutboxCore
import Testing

/// Which statuses the badge, the banner and the Sync tab count: one set each, each named once.
@Suite("The statuses each view counts")
struct OutboxStatusSetsTests {
    @Test func theBadgeIsTheNetworksRowsAndThePersonsAndNothingElse() {
        #expect(OutboxStatus.allCases.filter(\.waitsForNetwork) == [.queued, .syncing])
        #expect(Set(OutboxStatus.allCases.filter(\.needsAPerson)) == [.failed, .blocked, .conflicted])
        for status in OutboxStatus.allCases {
            #expect(!(status.waitsForNetwork && status.needsAPerson), "\(status) in both")
            #expect(status.countsOnBadge == (status.waitsForNetwork || status.needsAPerson))
            #expect(status.isOnSyncTab == (status.countsOnBadge || status == .pendingApproval))
            #expect(!(status.countsOnBadge && status.isTerminal), "a settled row is never on the badge: \(status)")
        }
    }
}
