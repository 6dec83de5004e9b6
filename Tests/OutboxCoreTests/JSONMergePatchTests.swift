import OutboxWire
import Testing

@Suite("JSON merge patch on text")
struct JSONMergePatchTests {
    private func merged(_ patch: String, into target: String) throws -> String {
        String(decoding: try JSONMergePatch.apply(Array(patch.utf8), to: Array(target.utf8)), as: UTF8.self)
    }

    /// RFC 7396, Appendix A: every example, as text.
    @Test(arguments: [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ])
    func theRFCExamplesHold(_ target: String, _ patch: String, _ expected: String) throws {
        #expect(try merged(patch, into: target) == expected)
    }

    @Test func untouchedMembersKeepTheirBytesAndOrder() throws {
        let target = #"{"id":"p-1", "price":12.50, "name":"Caf\u00e9 \"Zo\u00eb\"", "tags":[ 1, 2 ]}"#
        #expect(try merged(#"{"price":13}"#, into: target) == #"{"id":"p-1","price":13,"name":"Caf\u00e9 \"Zo\u00eb\"","tags":[ 1, 2 ]}"#)
    }

    @Test func namesAreComparedDecoded() throws {
        #expect(try merged(#"{"caf\u00e9":2}"#, into: #"{"café":1}"#) == #"{"café":2}"#)
        #expect(try merged(#"{"😀":null}"#, into: #"{"\ud83d\ude00":1,"b":2}"#) == #"{"b":2}"#)
    }

    @Test func aNameWrittenTwiceIsLeftOnceWhereItFirstStood() throws {
        #expect(try merged(#"{"a":{"y":2}}"#, into: #"{"a":{"x":0},"b":1,"a":{"x":1}}"#) == #"{"a":{"x":1,"y":2},"b":1}"#)
    }

    @Test(arguments: [#"{"a":}"#, #"{"a":1"#, #"{"a":tru}"#, #"{a:1}"#, #"{"a":1} x"#, #""#, #"{"a":01.}"#, "{\"a\":\"\u{1}\"}"])
    func whatIsNotJSONIsRefused(_ text: String) {
        #expect(throws: JSONMergePatch.Invalid.self) { try JSONMergePatch.apply(Array(text.utf8), to: Array("{}".utf8)) }
        #expect(throws: JSONMergePatch.Invalid.self) { try JSONMergePatch.apply(Array("{}".utf8), to: Array(text.utf8)) }
    }

    /// The merge reads with the package's one strict reader: half a surrogate pair, in a name
    /// or a value, is not read as U+FFFD and merged.
    @Test func halfASurrogatePairIsRefusedInANameOrAValue() {
        for text in [#"{"\ud800":1}"#, #"{"a":"\udc00"}"#] {
            #expect(throws: JSONMergePatch.Invalid.self) { try JSONMergePatch.apply(Array(text.utf8), to: Array("{}".utf8)) }
            #expect(throws: JSONMergePatch.Invalid.self) { try JSONMergePatch.apply(Array("{}".utf8), to: Array(text.utf8)) }
        }
    }

    @Test func nestingIsCapped() {
        let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        #expect(throws: JSONMergePatch.Invalid.self) { try JSONMergePatch.apply(Array(deep.utf8), to: Array("{}".utf8)) }
    }
}
