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
        #expect(request.header("x-a") == "padded")
        #expect(request.body == Data("body".utf8))
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

    @Test func keepAliveFollowsTheVersionAndConnectionHeader() {
        #expect(HTTPRequest(method: "GET", path: "/").wantsKeepAlive)
        #expect(!HTTPRequest(method: "GET", path: "/", headers: [("Connection", "Close")]).wantsKeepAlive)
        #expect(!HTTPRequest(method: "GET", path: "/", minorVersion: 0).wantsKeepAlive)
        #expect(HTTPRequest(method: "GET", path: "/", minorVersion: 0, headers: [("Connection", "keep-alive")]).wantsKeepAlive)
    }
}
