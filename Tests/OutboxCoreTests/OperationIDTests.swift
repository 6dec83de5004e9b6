import Foundation
import OutboxCore
import Testing

@Suite("A write's identity")
struct OperationIDTests {
    @Test func aFreshIdentityIsARandomVersion4UUIDThatReadsBack() throws {
        var seen = Set<OperationID>()
        for _ in 0..<2_000 {
            let id = OperationID()
            let bytes = withUnsafeBytes(of: id.uuid.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4, "version 4: \(id)")
            #expect(bytes[8] >> 6 == 0b10, "the RFC 9562 variant: \(id)")
            #expect(OperationID(id.description) == id, "its key text reads back")
            seen.insert(id)
        }
        #expect(seen.count == 2_000, "no identity drawn twice")
    }
}
