import Foundation
import OutboxCore
import Testing

@Suite("Exact strings")
struct ExactStringTests {
    @Test func canonicallyEquivalentTextsAreTwoKeys() {
        let composed: ExactString = "caf\u{E9}"
        let decomposed: ExactString = "cafe\u{301}"
        #expect(composed.string == decomposed.string, "Swift's String calls them equal")
        #expect(composed != decomposed)
        let counts: [ExactString: Int] = [composed: 1, decomposed: 2]
        #expect(counts.count == 2 && counts["caf\u{E9}"] == 1 && counts["cafe\u{301}"] == 2)
        #expect(Set([composed, decomposed, "caf\u{E9}"]).count == 2)
    }

    @Test func orderIsByteOrder() {
        let texts: [ExactString] = ["b", "a", "\u{E9}", "e\u{301}", "ab", ""]
        #expect(texts.sorted().map { Array($0.utf8) } == texts.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test func aDictionaryOfExactStringsEncodesAsAJSONObject() throws {
        let counts: [ExactString: Int] = ["product.create": 2]
        let json = String(decoding: try JSONEncoder().encode(counts), as: UTF8.self)
        #expect(json == #"{"product.create":2}"#)
        #expect(try JSONDecoder().decode([ExactString: Int].self, from: Data(json.utf8)) == counts)
    }
}
