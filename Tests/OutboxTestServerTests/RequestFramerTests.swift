import Foundation
@testable import OutboxTestServer
import Testing

@Suite("Request framing")
struct RequestFramerTests {
    let limits = HTTPLimits(maxHeaderBytes: 256, maxHeaderCount: 8, maxBodyBytes: 16)

    func frame(_ text: String) -> Framing {
        RequestFramer.frame(Array(text.utf8), limits: limits)
    }

    @Test func aPartialHeadOrBodyNeedsMore() {
        #expect(frame("POST /p HTTP/1.1\r\nContent-Length: 4\r\n") == .needMore)
        #expect(frame("POST /p HTTP/1.1\r\nContent-Length: 4\r\n\r\nab") == .needMore)
    }

    @Test func aWholeRequestIsCutOutWithWhatFollowsLeftForTheNext() throws {
        let text = "POST /p?x=1 HTTP/1.1\r\nHost: h\r\nX-A:  padded \t\r\nContent-Length: 4\r\n\r\nbodyGET"
        guard case .request(let request, let consumed) = frame(text) else {
            Issue.record("expected a request")
            return
        }
        #expect(consumed == text.utf8.count - 3)
        #expect(request.method == "POST")
        #expect(request.path == "/p")
        #expect(request.query == "x=1")
        #expect(request.target == "/p?x=1")
        #expect(request.header("x-a") == "padded")
        #expect(request.body == Data("body".utf8))
    }

    @Test(arguments: ["/p?", "/p%2Fq;v=1?a=%20&b=/c?d", "/p?x=/../y", "/%C3%BC"])
    func theTargetIsKeptAsSent(_ target: String) {
        guard case .request(let request, _) = frame("GET \(target) HTTP/1.1\r\n\r\n") else {
            Issue.record("expected a request")
            return
        }
        #expect(request.target == target)
        #expect(request.path + (target.contains("?") ? "?" + request.query : "") == target)
    }

    @Test func leadingEmptyLinesAreIgnored() {
        guard case .request(let request, _) = frame("\r\n\r\nGET / HTTP/1.1\r\n\r\n") else {
            Issue.record("expected a request")
            return
        }
        #expect(request.path == "/")
    }

    @Test func limitsAreEnforcedBeforeTheBytesBeyondThemArrive() {
        guard case .reject(let body) = frame("POST /p HTTP/1.1\r\nContent-Length: 17\r\n\r\n") else {
            Issue.record("expected 413")
            return
        }
        #expect(body.status == 413)
        guard case .reject(let head) = frame("GET /" + String(repeating: "a", count: 300)) else {
            Issue.record("expected 431 before the head ends")
            return
        }
        #expect(head.status == 431)
    }

    /// Heads whose line ends are not CRLF, cut where the proof has just arrived: each is
    /// refused at once, without waiting for the rest.
    @Test(arguments: [
        ("GET / HTTP/1.1\nHost: x\n\n", "a bare LF"),
        ("GET / HTTP/1.1\n", "a bare LF"),
        ("GET / HTTP/1.1\r\nHost: x\n", "a bare LF"),
        ("GET / HTTP/1.1\r\nHost: x\r\n\n", "a bare LF"),
        ("\nGET / HTTP/1.1\r\n\r\n", "a bare LF"),
        ("\r\n\nGET / HTTP/1.1\r\n\r\n", "a bare LF"),
        ("GET / HTTP/1.1\rHost", "a bare CR"),
        ("GET / HTTP/1.1\r\nHost: x\r\r\n\r\n", "a bare CR"),
    ])
    func aHeadWithBareLineEndsIsRefusedAsSoonAsItShows(_ text: String, _ words: String) throws {
        guard case .reject(let response) = frame(text) else {
            Issue.record("expected a refusal for \(text.debugDescription), got \(frame(text))")
            return
        }
        #expect(response.status == 400)
        let body = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: String])
        #expect(body["code"] == "malformed_request")
        #expect(body["message"]?.contains(words) == true, "\(body)")
        #expect(body["message"]?.contains("lines end in CRLF") == true, "\(body)")
    }

    @Test func aCarriageReturnStillWaitingForItsLineFeedNeedsMore() {
        #expect(frame("GET / HTTP/1.1\r") == .needMore)
        #expect(frame("GET / HTTP/1.1\r\nHost: x\r\n\r") == .needMore)
    }

    @Test func lineFeedsInTheBodyAreTheBodysBusiness() {
        guard case .request(let request, _) = frame("POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\na\nb\rc") else {
            Issue.record("expected a request")
            return
        }
        #expect(request.body == Data("a\nb\rc".utf8))
    }

    @Test func keepAliveFollowsTheVersionAndConnectionHeader() {
        #expect(HTTPRequest(method: "GET", path: "/").wantsKeepAlive)
        #expect(!HTTPRequest(method: "GET", path: "/", headers: [("Connection", "Close")]).wantsKeepAlive)
        #expect(!HTTPRequest(method: "GET", path: "/", minorVersion: 0).wantsKeepAlive)
        #expect(HTTPRequest(method: "GET", path: "/", minorVersion: 0, headers: [("Connection", "keep-alive")]).wantsKeepAlive)
    }
}
