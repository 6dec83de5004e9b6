import Foundation
import OutboxCore
import Testing

@Suite("Lanes")
struct LaneTests {
    /// Parts built from a few characters that make joins collide ("/", "é" composed and not).
    static let parts = ["a", "b", "a/b", "b/c", "c", "/", "caf\u{E9}", "cafe\u{301}", "", "ab"]

    @Test func noTwoBusinessAndEntityPairsMakeOneLaneAndNoLaneBeginsAnother() {
        var lanes: [[UInt8]: (String, String)] = [:]
        for business in Self.parts where !business.isEmpty {
            for entity in Self.parts where !entity.isEmpty {
                let lane = Lane(businessID: business, entityID: entity, operation: OperationID())
                if let earlier = lanes[lane.bytes] {
                    // Only a byte-identical pair may share a lane.
                    #expect(Array(earlier.0.utf8) == Array(business.utf8) && Array(earlier.1.utf8) == Array(entity.utf8))
                }
                lanes[lane.bytes] = (business, entity)
            }
        }
        #expect(lanes.count == (Self.parts.count - 1) * (Self.parts.count - 1))
        let all = Array(lanes.keys) + [Lane(businessID: "a", entityID: nil, operation: OperationID()).bytes]
        for one in all {
            for other in all where one != other {
                #expect(!other.starts(with: one), "\(one) begins \(other)")
            }
        }
    }

    @Test func aLaneIsComparedByteForByte() {
        #expect("caf\u{E9}" == "cafe\u{301}")
        let composed = Lane(businessID: "caf\u{E9}", entityID: "p", operation: OperationID())
        let decomposed = Lane(businessID: "cafe\u{301}", entityID: "p", operation: OperationID())
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
    }

    @Test func aLaneReadsBackFromItsBytesAndDamagedBytesAreRefused() {
        let id = OperationID()
        for lane in [Lane(businessID: "pharmacy-7", entityID: "p/1", operation: id), Lane(businessID: "pharmacy-7", entityID: nil, operation: id)] {
            #expect(Lane(bytes: lane.bytes) == lane)
            #expect(Lane(bytes: lane.bytes.dropLast()) == nil)
            #expect(Lane(bytes: lane.bytes + [0]) == nil)
        }
        let entity = Lane(businessID: "pharmacy-7", entityID: "p/1", operation: id)
        #expect(entity.entity.map { String(decoding: $0.businessID, as: UTF8.self) } == "pharmacy-7")
        #expect(entity.entity.map { String(decoding: $0.entityID, as: UTF8.self) } == "p/1")
        #expect(entity.description == "entity pharmacy-7/p/1")
        #expect(Lane(businessID: "pharmacy-7", entityID: nil, operation: id).operation == id)
        #expect(Lane(bytes: []) == nil && Lane(bytes: [9, 1]) == nil && Lane(bytes: [1, 5, 0x61]) == nil)
    }
}
