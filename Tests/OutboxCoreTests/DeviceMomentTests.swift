import Foundation
import OutboxCore
import Testing

/// How long a period has lasted, by the device's uptime, never by a wall clock a member can move.
@Suite("Elapsed device time")
struct DeviceMomentTests {
    static let wall = Date(timeIntervalSinceReferenceDate: 800_000_000)
    static let bootA = UUID(uuidString: "00000000-0000-4000-8000-00000000000A")!
    static let bootB = UUID(uuidString: "00000000-0000-4000-8000-00000000000B")!

    static func moment(_ wallOffset: TimeInterval, uptime: Double?, boot: UUID = bootA) -> DeviceMoment {
        DeviceMoment(wall: wall.addingTimeInterval(wallOffset), uptime: uptime.map { Uptime(seconds: $0, bootID: boot) })
    }

    /// (name, from, to, cap, elapsed)
    static let table: [(String, DeviceMoment, DeviceMoment, TimeInterval, TimeInterval)] = [
        ("one boot: the uptime between", moment(0, uptime: 100), moment(50, uptime: 160), 300, 60),
        ("one boot, the wall clock moved two days on", moment(0, uptime: 100), moment(172_800, uptime: 160), 300, 60),
        ("one boot, the wall clock moved back a day", moment(0, uptime: 100), moment(-86_400, uptime: 700), 300, 600),
        ("one boot, never less than 0", moment(0, uptime: 100), moment(0, uptime: 90), 300, 0),
        ("another boot: its uptime and the gap before, capped", moment(0, uptime: 100, boot: bootA), moment(86_400, uptime: 40, boot: bootB), 300, 340),
        ("another boot, a short gap", moment(0, uptime: 100, boot: bootA), moment(100, uptime: 40, boot: bootB), 300, 100),
        ("another boot, the wall clock behind", moment(0, uptime: 100, boot: bootA), moment(-3_600, uptime: 40, boot: bootB), 300, 40),
        ("format 1, no uptime: the wall gap", moment(0, uptime: nil), moment(7_200, uptime: 40), 300, 7_200),
        ("no uptime now: the wall gap", moment(0, uptime: 100), moment(90, uptime: nil), 300, 90),
        ("no uptime, the wall clock behind: 0", moment(0, uptime: nil), moment(-90, uptime: nil), 300, 0),
    ]

    @Test(arguments: table.indices)
    func eachRowOfTheClockRule(_ index: Int) {
        let (name, from, to, cap, expected) = Self.table[index]
        #expect(DeviceMoment.elapsed(from: from, to: to, bootGapCapSeconds: cap) == expected, "\(name)")
    }
}
