import Foundation
import OutboxWire
import OutboxCore
import Testing

@Suite("Request validation")
struct RequestValidationTests {
    @Test func aGoodRequestPasses() throws {
        try Samples.request().validate()
        try Samples.request(entityID: nil).validate()
    }

    /// Each bad field, and the words its error must contain.
    static let badRequests: [(String, @Sendable (inout OutboxRequest) -> Void, String)] = [
        ("operationType", { $0.operationType = "" }, "must not be empty"),
        ("operationType", { $0.operationType = "product create" }, "white space"),
        ("businessID", { $0.businessID = "  " }, "must not be empty"),
        ("category", { $0.category = "" }, "must not be empty"),
        ("endpoint", { $0.endpoint = "products" }, "starting with \"/\""),
        ("endpoint", { $0.endpoint = "/" + String(repeating: "a", count: 2048) }, "over the limit of 2048"),
        ("method", { $0.method = "GET" }, "POST, PUT, PATCH or DELETE"),
        ("method", { $0.method = "post" }, "upper case"),
        ("payload", { $0.payload = Data("not json".utf8) }, "must be JSON"),
        ("payload", { $0.payload = Data(#"{"a":1"#.utf8) }, "must be JSON"),
        ("payload", { $0.payload = Data() }, "must be JSON"),
        ("payload", { $0.payload = Data([0x22, 0xFF, 0x22]) }, "must be JSON"),
        ("payload", { $0.payload = Data(repeating: 0x20, count: (1 << 20) + 1) }, "over the limit"),
        ("entityID", { $0.entityID = "" }, "must not be empty"),
        ("entityLabel", { $0.entityLabel = String(repeating: "x", count: 2000) }, "over the limit"),
        ("summary", { $0.summary = "line\nbreak" }, "control characters"),
        ("payloadVersion", { $0.payloadVersion = 0 }, "1 or more"),
    ]

    @Test func eachBadFieldIsNamedWithItsFix() {
        for (field, mutate, words) in Self.badRequests {
            var request = Samples.request()
            mutate(&request)
            #expect {
                try request.validate()
            } throws: { error in
                guard case OutboxError.invalidRequest(let named, let problem) = error else { return false }
                #expect(named == field)
                #expect(problem.contains(words), "\(field): \(problem)")
                return true
            }
        }
    }

    @Test func theErrorNeverQuotesThePayload() {
        var request = Samples.request()
        request.payload = Data(#"{"secret":"hunter2""#.utf8)
        do {
            try request.validate()
            Issue.record("an unterminated object passed")
        } catch {
            #expect(!error.description.contains("hunter2"))
        }
    }

    /// The ASCII shortcuts answer as Unicode's properties do, for every ASCII character.
    @Test func theASCIIShortcutsAgreeWithUnicode() {
        for code in 0..<128 {
            let scalar = Unicode.Scalar(UInt8(code))
            let text = "a\(Character(scalar))b"
            #expect(OutboxRequest.containsWhiteSpace(text) == scalar.properties.isWhitespace, "U+\(code)")
            #expect(OutboxRequest.containsControl(text) == (scalar.properties.generalCategory == .control), "U+\(code)")
            #expect(OutboxRequest.isAllWhiteSpace(String(Character(scalar))) == Character(scalar).isWhitespace, "U+\(code)")
        }
        // Beyond ASCII the properties decide.
        #expect(OutboxRequest.containsWhiteSpace("a\u{00A0}b") && OutboxRequest.containsWhiteSpace("a\u{2003}b"))
        #expect(OutboxRequest.containsControl("é\u{0085}") && !OutboxRequest.containsControl("Crème brûlée"))
        #expect(OutboxRequest.isAllWhiteSpace("\u{3000} ") && !OutboxRequest.isAllWhiteSpace("é "))
    }

    @Test func anOperationIDPrintsAsItsUUIDDoes() {
        for _ in 0..<1000 {
            let id = OperationID()
            #expect(id.uuidString == id.uuid.uuidString)
            #expect(id.idempotencyKey == id.uuid.uuidString && id.description == id.uuid.uuidString)
            #expect(OperationID(id.uuidString) == id)
        }
    }

    @Test func theLimitIsConfigurable() throws {
        let request = Samples.request()
        #expect(throws: OutboxError.self) { try request.validate(maxPayloadBytes: 10) }
        try request.validate(maxPayloadBytes: request.payload.count)
    }
}

@Suite("JSON syntax, checked at enqueue")
struct JSONSyntaxTests {
    @Test(arguments: [
        "{}", "[]", "0", "-0.5e+10", "\"text\"", "true", "false", "null", " { \"a\" : [1, 2.5, -3e2, {\"b\": null}] } ",
        #"{"escaped":"\"\\\/\b\f\n\r\t\u00e9"}"#, "\"Antiséptico 500 ml ✓ 🧴\"", "[[[[[]]]]]",
    ])
    func validJSONPasses(_ text: String) throws {
        try JSONNode.check(Array(text.utf8))
    }

    @Test(arguments: [
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{a:1}", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul",
        "\"unterminated", "\"bad \\x escape\"", "\"\\u12G4\"", "[1] [2]", "{\"a\" 1}", "\"tab\there\"", "NaN",
    ])
    func invalidJSONIsRefused(_ text: String) {
        #expect(throws: JSONReadError.self) { try JSONNode.check(Array(text.utf8)) }
    }

    @Test func invalidUTF8IsRefused() {
        for bytes: [UInt8] in [[0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], [0x22, 0xE2, 0x82, 0x22]] {
            #expect(throws: JSONReadError.self) { try JSONNode.check(bytes) }
        }
    }

    /// The server reads payloads with the same reader, so what it would refuse is refused at
    /// enqueue, before the member is told "saved": half of a surrogate pair is no character.
    @Test func halfASurrogatePairIsRefusedAndAWholePairPasses() throws {
        for text in [#""\ud800""#, #""\udc00""#, #"{"name":"a\ud83d b"}"#, #"{"\ud83d":1}"#] {
            #expect(throws: JSONReadError.self, "\(text)") { try JSONNode.check(Array(text.utf8)) }
        }
        try JSONNode.check(Array(#"{"emoji":"\ud83d\ude00"}"#.utf8))
        var request = Samples.request()
        request.payload = Data(#"{"name":"\ud800"}"#.utf8)
        #expect(throws: OutboxError.self) { try request.validate() }
    }

    @Test func nestingIsCapped() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONReadError.self) { try JSONNode.check(Array(deep.utf8)) }
        let fine = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        #expect(throws: Never.self) { try JSONNode.check(Array(fine.utf8)) }
    }
}
