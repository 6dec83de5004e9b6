import Foundation
@testable import Outbox
import OutboxAudit
import Testing

@Suite("The clock-skew clamp")
struct ClockSkewClampTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let a = OperationID(uuid: UUID(uuidString: "00000000-0000-4000-8000-00000000000A")!)
    let b = OperationID(uuid: UUID(uuidString: "00000000-0000-4000-8000-00000000000B")!)

    @Test func aRowSeenBeyondTheCapIsDueOneCapAfterItWasFirstSeen() {
        var clamp = ClockSkewClamp(policy: .standard)
        #expect(clamp.observe(beyondCap: [a], now: start).isEmpty)
        #expect(clamp.observe(beyondCap: [a], now: start.addingTimeInterval(299)).isEmpty)
        #expect(clamp.observe(beyondCap: [a], now: start.addingTimeInterval(300)) == [a])
        #expect(clamp.firstSeen[a] == start, "seen again, it keeps the moment it was first seen")
    }

    @Test func aRowNoLongerBeyondTheCapIsForgotten() {
        var clamp = ClockSkewClamp(policy: .standard)
        _ = clamp.observe(beyondCap: [a, b], now: start)
        _ = clamp.observe(beyondCap: [b], now: start.addingTimeInterval(10))
        #expect(clamp.firstSeen == [b: start])
        // Seen beyond the cap again later, it starts over.
        _ = clamp.observe(beyondCap: [a, b], now: start.addingTimeInterval(20))
        #expect(clamp.firstSeen[a] == start.addingTimeInterval(20))
    }

    @Test func aClockMovedBackAgainCountsTheRowAsFirstSeenNow() {
        var clamp = ClockSkewClamp(policy: .standard)
        _ = clamp.observe(beyondCap: [a], now: start)
        let earlier = start.addingTimeInterval(-3600)
        #expect(clamp.observe(beyondCap: [a], now: earlier).isEmpty)
        #expect(clamp.firstSeen[a] == earlier)
        #expect(clamp.observe(beyondCap: [a], now: earlier.addingTimeInterval(300)) == [a])
    }

    @Test func rowsDueByTheClampComeInTheOrderGiven() {
        var clamp = ClockSkewClamp(policy: .standard)
        _ = clamp.observe(beyondCap: [b, a], now: start)
        #expect(clamp.observe(beyondCap: [b, a], now: start.addingTimeInterval(300)) == [b, a])
    }

    @Test func theEffectiveDueMomentIsNeverLaterThanOneCapFromFirstSight() {
        var clamp = ClockSkewClamp(policy: .standard)
        let now = start
        let farAhead = now.addingTimeInterval(6 * 3600)
        #expect(clamp.horizon(now: now) == now.addingTimeInterval(300))
        #expect(clamp.effectiveDue(nil, of: a, now: now) == nil, "no stored moment: due at once")
        #expect(clamp.effectiveDue(now.addingTimeInterval(20), of: a, now: now) == now.addingTimeInterval(20))
        #expect(clamp.effectiveDue(farAhead, of: a, now: now) == now.addingTimeInterval(300), "not seen yet: one cap from now")
        _ = clamp.observe(beyondCap: [a], now: now)
        let later = now.addingTimeInterval(100)
        #expect(clamp.effectiveDue(farAhead, of: a, now: later) == now.addingTimeInterval(300), "one cap from first sight")
    }
}
