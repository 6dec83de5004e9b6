import IdempotencyClaims
import Testing

@Suite("Idempotency-Key parsing")
struct IdempotencyKeyTests {
    @Test func absentEmptyAndBlankValuesAreMissing() {
        for value in [nil, "", " ", " \t "] as [String?] {
            #expect(IdempotencyKey.parse(value) == .failure(.missing))
        }
    }

    @Test func surroundingWhiteSpaceIsDropped() throws {
        let key = try IdempotencyKey.parse("  0f8fad5b-d9cb-469f-a165-70867728950e\t").get()
        #expect(key.rawValue == "0f8fad5b-d9cb-469f-a165-70867728950e")
    }

    @Test func keysLongerThanTheLimitOrWithControlCharactersAreInvalid() {
        let longest = String(repeating: "k", count: IdempotencyKey.maxBytes)
        #expect((try? IdempotencyKey.parse(longest).get()) != nil)
        #expect(IdempotencyKey.parse(longest + "k") == .failure(.tooLong(bytes: IdempotencyKey.maxBytes + 1)))
        #expect(IdempotencyKey.parse("a\u{0}b") == .failure(.controlCharacter))
    }

    @Test func rawValueAcceptsOnlyWhatParseKeepsUnchanged() {
        #expect(IdempotencyKey(rawValue: "k-1") != nil)
        #expect(IdempotencyKey(rawValue: " k-1") == nil)
        #expect(IdempotencyKey(rawValue: "") == nil)
    }
}
