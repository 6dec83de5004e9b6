import Foundation
import OutboxCore
import Testing

/// The endpoint rule: what is journaled is what is sent, byte for byte.
@Suite("Endpoint validation")
struct EndpointValidationTests {
    func problem(_ endpoint: String) -> String? {
        var request = Samples.request()
        request.endpoint = endpoint
        do {
            try request.validate()
            return nil
        } catch OutboxError.invalidRequest(let field, let problem) {
            #expect(field == "endpoint", "\(endpoint.debugDescription) blamed \(field)")
            return problem
        } catch {
            Issue.record("\(endpoint.debugDescription) threw \(error)")
            return nil
        }
    }

    @Test(arguments: [
        "/", "/products", "/products/42?include=stock&sort=-name", "/a%2Fb/%C3%A9", "/a%2fb", "/a%20b",
        "/people/o'brien(1)*,;=:@~", "/-._~!$&'()*+,;=:@", "/caf%C3%A9?q=a+b", "/p?", "/p?q=a?b/c", "/p?x=/../y",
        "/a//b", "/a/.b", "/a/..b", "/a/...", "/.well-known/x", "/a/%2E%2E/b", "/" + String(repeating: "a", count: 2047),
    ])
    func anEndpointThatIsAPathAndQueryPasses(_ endpoint: String) {
        #expect(problem(endpoint) == nil, "\(endpoint)")
    }

    /// Each refused endpoint, and the words its problem must hold: what is wrong or the fix.
    @Test(arguments: [
        ("", #"starting with "/""#),
        ("products", #"starting with "/""#),
        ("https://api.example.com/products", #"starting with "/""#),
        ("//evil.example.com/x", #"a single "/""#),
        ("/products%zz", #"not followed by two hex digits ("%zz"); percent-encode a literal "%" as %25"#),
        ("/a%2", "%25"),
        ("/a%", "%25"),
        ("/p?q=%G1", "%25"),
        (#"/\evil.example"#, "backslash, which URLs re-encode and some servers read as \"/\"; percent-encode it as %5C"),
        (#"/p?next=\x"#, "%5C"),
        ("/products/new item", "space; percent-encode it as %20"),
        ("/p?q=a b", "%20"),
        ("/a#frag", "fragment"),
        ("/p?q=1#top", "percent-encode a literal \"#\" as %23"),
        ("/a\tb", "control characters (U+0009); percent-encode it as %09"),
        ("/a\nb", "%0A"),
        ("/a\u{7F}", "%7F"),
        ("/p?q=\u{0}", "%00"),
        ("/ürün", "must be ASCII: percent-encode the UTF-8 bytes of U+00FC as %C3%BC"),
        ("/caf\u{E9}", "%C3%A9"),
        ("/a\u{85}", "%C2%85"),
        ("/\u{1F9F4}", "U+1F9F4 as %F0%9F%A7%B4"),
        ("/a|b", #"must not hold "|" as it is, which a URL does not allow; percent-encode it as %7C"#),
        ("/a[1]", "%5B"),
        ("/p?a=[1]", "%5B"),
        ("/a\"b", "%22"),
        ("/a<b>", "%3C"),
        ("/a^b", "%5E"),
        ("/a`b", "%60"),
        ("/a{b}", "%7B"),
        ("/.", #"the path segment ".""#),
        ("/a/./b", #"the path segment ".""#),
        ("/a/../b", #"the path segment "..""#),
        ("/a/..", "dot segments"),
        ("/..?q=1", "dot segments"),
    ])
    func anEndpointThatWouldNotBeSentAsSavedIsRefusedWithItsFix(_ endpoint: String, _ words: String) {
        let problem = problem(endpoint)
        #expect(problem?.contains(words) == true, "\(endpoint.debugDescription): \(problem ?? "passed")")
    }

    /// Cross-checks the rule with Foundation's own parser, character by character: whatever the
    /// rule accepts, `URL` keeps exactly as written; whatever `URL` cannot hold as written, the
    /// rule refuses.
    @Test func everyASCIICharacterIsJudgedAsURLWouldKeepIt() throws {
        for code in 0..<128 {
            let character = String(Character(Unicode.Scalar(UInt8(code))))
            for endpoint in ["/a\(character)b", "/a?q=\(character)b"] {
                let text = "https://api.example.com" + endpoint
                let kept = URL(string: text, encodingInvalidCharacters: false)?.absoluteString == text
                let accepted = problem(endpoint) == nil
                if accepted { #expect(kept, "\(endpoint.debugDescription) passes but URL changes it") }
                if !kept { #expect(!accepted, "\(endpoint.debugDescription): URL cannot keep it, yet it passes") }
            }
        }
    }
}
