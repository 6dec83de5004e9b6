import Foundation
@testable import OutboxCore
import Testing

/// When a feed is pulled next, row by row of ``FeedSchedule``'s table.
@Suite("The feed's schedule")
struct FeedScheduleTests {
    static let boot = UUID(uuidString: "9E621E1F-C36C-495A-93FC-0C247A3E6E5F")!
    static let otherBoot = UUID(uuidString: "1E621E1F-C36C-495A-93FC-0C247A3E6E5F")!
    static let noon = Date(timeIntervalSince1970: 1_900_000_000)
    static func moment(_ wall: TimeInterval, uptime: Double?, boot: UUID = boot) -> DeviceMoment {
        DeviceMoment(wall: noon.addingTimeInterval(wall), uptime: uptime.map { Uptime(seconds: $0, bootID: boot) })
    }
    static let now = moment(0, uptime: 10_000)
    static let hour: TimeInterval = 3_600

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var feed: FeedSchedule.Feed
        /// Seconds from now the feed is due (0 or less: due now).
        var dueIn: TimeInterval
        var dueUnforced: Bool
        var dueForced: Bool
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "never caught up", feed: .init(), dueIn: 0, dueUnforced: true, dueForced: true),
        Row(name: "caught up 10 minutes ago", feed: .init(caughtUpAt: moment(-600, uptime: 9_400)), dueIn: 3_000, dueUnforced: false, dueForced: true),
        Row(name: "caught up 2 hours ago", feed: .init(caughtUpAt: moment(-7_200, uptime: 2_800)), dueIn: 0, dueUnforced: true, dueForced: true),
        Row(name: "caught up 10 minutes ago by uptime, the wall clock since moved back 3 hours",
            feed: .init(caughtUpAt: moment(3 * hour - 600, uptime: 9_400)), dueIn: 3_000, dueUnforced: false, dueForced: true),
        Row(name: "caught up 10 minutes ago by uptime, the wall clock since moved on a day",
            feed: .init(caughtUpAt: moment(-86_400, uptime: 9_400)), dueIn: 3_000, dueUnforced: false, dueForced: true),
        Row(name: "caught up two days ago, before a reboot (the wall gap counts, uncapped)",
            feed: .init(caughtUpAt: moment(-2 * 86_400, uptime: 500, boot: otherBoot)), dueIn: 0, dueUnforced: true, dueForced: true),
        Row(name: "caught up 20 minutes ago by the wall clock, before this boot of 2.8 hours (the boot's own time counts)",
            feed: .init(caughtUpAt: moment(-1_200, uptime: 80_000, boot: otherBoot)), dueIn: 0, dueUnforced: true, dueForced: true),
        Row(name: "two failures, the last 1 s ago: the backoff after the second (4 s)",
            feed: .init(caughtUpAt: moment(-600, uptime: 9_400), failures: 2, lastFailureAt: noon.addingTimeInterval(-1)),
            dueIn: 3, dueUnforced: false, dueForced: true),
        Row(name: "nine failures: capped at 300 s", feed: .init(failures: 9, lastFailureAt: noon), dueIn: 300, dueUnforced: false, dueForced: true),
        Row(name: "a failure with the server's Retry-After later than the backoff",
            feed: .init(failures: 1, lastFailureAt: noon, retryAfter: noon.addingTimeInterval(120)), dueIn: 120, dueUnforced: false, dueForced: false),
        Row(name: "the server's Retry-After, not yet passed, even after a success",
            feed: .init(caughtUpAt: moment(-7_200, uptime: 2_800), retryAfter: noon.addingTimeInterval(30)), dueIn: 30, dueUnforced: false, dueForced: false),
        Row(name: "the server's Retry-After passed", feed: .init(caughtUpAt: moment(-7_200, uptime: 2_800), retryAfter: noon.addingTimeInterval(-5)),
            dueIn: 0, dueUnforced: true, dueForced: true),
    ]

    @Test(arguments: rows)
    func eachFeedIsDueWhenTheTableSays(_ row: Row) {
        let due = FeedSchedule.due(row.feed, business: "pharmacy-7", freshnessSeconds: Self.hour, policy: .standard, now: Self.now)
        #expect(max(0, due.timeIntervalSince(Self.noon)) == row.dueIn)
        #expect(FeedSchedule.isDue(row.feed, business: "pharmacy-7", freshnessSeconds: Self.hour, policy: .standard, now: Self.now, forced: false) == row.dueUnforced)
        #expect(FeedSchedule.isDue(row.feed, business: "pharmacy-7", freshnessSeconds: Self.hour, policy: .standard, now: Self.now, forced: true) == row.dueForced)
    }

    @Test func twoBusinessesBackOffApartWithJitterTheSameWayEveryTime() {
        let policy = OperationTypePolicy.RetryPolicy.standard.jittered(0.5)
        let feed = FeedSchedule.Feed(failures: 6, lastFailureAt: Self.noon)
        func due(_ business: String) -> Date { FeedSchedule.due(feed, business: business, freshnessSeconds: Self.hour, policy: policy, now: Self.now) }
        #expect(due("pharmacy-7") == due("pharmacy-7"))
        #expect(due("pharmacy-7") != due("pharmacy-8"))
        for business in ["pharmacy-7", "pharmacy-8"] {
            let seconds = due(business).timeIntervalSince(Self.noon)
            #expect(seconds >= 32 && seconds <= 64, "\(business): \(seconds)")
        }
    }
}
