import OutboxWire
import TestHarness
import Testing

private func read(_ text: String) throws(JSONReadError) -> JSONNode {
    try JSONNode.read(Array(text.utf8))
}

private func problem(_ text: String) -> JSONReadError? {
    problem(Array(text.utf8))
}

private func problem(_ bytes: [UInt8]) -> JSONReadError? {
    do throws(JSONReadError) {
        _ = try JSONNode.read(bytes)
        return nil
    } catch {
        return error
    }
}

/// The strict reader the server half checks JSON with: every member kept, strings exact, every
/// problem named by its path.
@Suite("Reading JSON strictly")
struct JSONNodeTests {
    @Test func aDocumentIsReadWithItsMembersInOrderAndNumbersAsWritten() throws {
        let node = try read(#" {"id":"p-1","n":[1,-0.5,1e400,true,null,{}],"id":"p-2"} "#)
        guard case .object(let members) = node else {
            Issue.record("not an object")
            return
        }
        #expect(members.map(\.name) == ["id", "n", "id"], "a name written twice is kept twice")
        #expect(node.members(named: "id") == [.string("p-1"), .string("p-2")])
        #expect(node.member("id") == nil, "ambiguous")
        #expect(node.member("n") == .array([.number("1"), .number("-0.5"), .number("1e400"), .bool(true), .null, .object([])]))
    }

    @Test func stringsKeepTheirCharactersExactlyAndEscapesDecode() throws {
        #expect(try read(#""caf\u00e9""#) == .string("caf\u{E9}"))
        #expect(try read(#""cafe\u0301""#) == .string("cafe\u{301}"))
        #expect(try read(#""caf\u00e9""#) != read(#""cafe\u0301""#), "NFC and NFD are two strings")
        #expect(try read(#""\ud83d\ude00 \"\\\/\b\f\n\r\t\u0000""#) == .string("\u{1F600} \"\\/\u{8}\u{C}\n\r\t\u{0}"))
    }

    @Test(arguments: [
        (#"{"id":"\ud800"}"#, "id", 0xD800),
        (#"{"a":{"b":["x","\udc00"]}}"#, "a.b[1]", 0xDC00),
        (#"{"id":"\ud800\u0041"}"#, "id", 0xD800),
        (#"{"id":"\ud800\ud800"}"#, "id", 0xD800),
        (#"{"id":"\ud800"#, "id", 0xD800),
    ] as [(String, String, Int)])
    func halfASurrogatePairIsRefusedNamingItsPath(_ text: String, _ path: String, _ unit: Int) throws {
        let error = try #require(problem(text))
        #expect(error.problem == .loneSurrogate(UInt32(unit)))
        #expect(error.path.description == path)
        #expect(error.message().hasPrefix("\(path) holds \\u\(String(unit, radix: 16, uppercase: true))"), "\(error.message())")
    }

    @Test func aSurrogateInAMemberNameIsNamedAsAName() throws {
        let error = try #require(problem(#"{"a":{"\udfff":1}}"#))
        #expect(error.inName && error.path.description == "a")
        #expect(error.message().hasPrefix("a member name in a holds"))
    }

    /// The reader's own UTF-8 check judges every string's bytes as Swift's `String(validating:)`
    /// does: 20,000 seeded strings of lead and continuation bytes at the edges of each range
    /// (overlong forms, surrogates, past U+10FFFF, sequences cut short), read and checked.
    @Test func theUTF8CheckAgreesWithSwiftsOnSeededBytes() {
        var random = SeededRandom(seed: 7)
        let leads: [UInt8] = [0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        let continuations: [UInt8] = [0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0]
        var refused = 0
        for _ in 0..<20_000 {
            // One to three characters, each a lead byte and as many continuation bytes as its
            // range asks for (sometimes one fewer or one more).
            var content: [UInt8] = []
            for _ in 0..<random.int(in: 1..<4) {
                let lead = random.pick(leads)!
                let wanted = lead < 0xC0 ? 0 : lead < 0xE0 ? 1 : lead < 0xF0 ? 2 : 3
                let count = max(0, wanted + (random.chance(10) ? random.int(in: -1..<2) : 0))
                content += [lead] + (0..<count).map { _ in random.pick(continuations)! }
            }
            let text = [UInt8(ascii: "\"")] + content + [UInt8(ascii: "\"")]
            let swiftSays = String(validating: content, as: UTF8.self) != nil
            let readerSays = problem(text) == nil
            let checkSays = (try? JSONNode.check(text)) != nil
            #expect(readerSays == swiftSays && checkSays == swiftSays, "\(content)")
            if !swiftSays { refused += 1 }
        }
        #expect(refused > 1_000 && refused < 19_000, "both kinds were tried")
    }

    @Test func bytesThatAreNotUTF8AreRefused() throws {
        let error = try #require(problem(Array(#"{"k":"a"#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)))
        #expect(error.problem == .notUTF8 && error.path.description == "k")
    }

    @Test(arguments: [
        "", "{", "[1,]", #"{"a" 1}"#, "01", "1.", "-", "1e", "+1", ".5", "tru", "nul", #""a"#, "\"\t\"", #""\x""#, #""\u12""#,
        "1 2", #"{"a":1,}"#, "NaN", "Infinity",
    ])
    func whatIsNotJSONIsRefusedWithItsPlace(_ text: String) {
        guard let error = problem(text), case .syntax = error.problem else {
            Issue.record("\(text) was read")
            return
        }
        #expect(error.message().contains("at byte"))
    }

    @Test func nestingIsBounded() throws {
        let deep = String(repeating: "[", count: JSONNode.maxDepth + 1) + String(repeating: "]", count: JSONNode.maxDepth + 1)
        #expect(problem(deep)?.problem == .tooDeep)
        let allowed = String(repeating: "[", count: JSONNode.maxDepth) + String(repeating: "]", count: JSONNode.maxDepth)
        #expect(problem(allowed) == nil)
    }

    @Test func pathsNameMembersAndIndexesAndQuoteWhatIsNotPlain() {
        let path = JSONPath.root.member("operations").index(3).member("payload").member("a b").member("x\"\u{1}")
        #expect(path.description == #"operations[3].payload["a b"]["x\"\u{01}"]"#)
        let error = problem(#"{"id":"\ud800"}"#)
        #expect(error?.message(at: JSONPath.root.member("operations").index(0).member("payload"))
            .hasPrefix("operations[0].payload.id holds") == true)
    }
}
