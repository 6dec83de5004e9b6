import Foundation
import OutboxTestServer
import Synchronization
import Testing

@Suite("HTTP handling and limits", .timeLimit(.minutes(10)))
struct TestServerHTTPTests {
    let body = #"{"id":"p-1"}"#

    /// The server still creates after whatever the test did to it.
    func expectStillServing(_ server: TestServer, key: String = "after") async throws {
        let response = try await exchange(server.port, request(key: key, body: #"{"id":"\#(key)"}"#))
        #expect(response.status == 201)
    }

    @Test(arguments: [
        "GARBAGE\r\n\r\n",
        "POST /products\r\n\r\n",
        "POST products HTTP/1.1\r\n\r\n",
        "POST /products HTTP/1.1\r\nNo colon here\r\n\r\n",
        "POST /products HTTP/1.1\r\nBad Name: x\r\n\r\n",
        "POST /products HTTP/1.1\nHost: x\n\n\r\n\r\n",
        "POST /products HTTP/1.1\r\nContent-Length: ten\r\n\r\n",
        "POST /products HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
        "POST /products HTTP/1.1\r\nHost: x\r\n  folded\r\n\r\n",
        "\u{1}\u{2}\u{3}\r\n\r\n",
    ])
    func aMalformedRequestGets400AndTheServerKeepsServing(_ raw: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let answered = try await exchangeUntilClosed(server.port, raw)
        let text = String(decoding: answered, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 400 "), "answered: \(text)")
        #expect(text.contains("Connection: close"))
        try await expectStillServing(server)
    }

    /// The read timeout is ten minutes and the client's patience one: a 400 here can
    /// only come from the framer, never from a timeout (which would answer 408).
    @Test(arguments: ["GET / HTTP/1.1\nHost: x\n\n", "POST /products HTTP/1.1\r\nHost: x\nIdempotency-Key: op-1\n"])
    func aHeadWithBareLineFeedsIsAnswered400AtOnce(_ raw: String) async throws {
        let server = try TestServer(.init(readTimeout: 600))
        defer { server.stop() }
        let response = try await onThread {
            let connection = try RawConnection(port: server.port)
            try connection.send(raw)
            return try connection.readResponse()
        }
        #expect(response.status == 400, "not 408: the framer answered, not the read timeout")
        #expect(response.code == "malformed_request")
        #expect((response.json?["message"] as? String)?.contains("lines end in CRLF") == true)
        #expect(response.header("Connection") == "close")
        try await expectStillServing(server)
    }

    @Test func timeoutsBeyondWhatPollTakesAreHeldAtItsLimitInsteadOfTrapping() async throws {
        let server = try TestServer(.init(readTimeout: 1e16, writeTimeout: 1e300))
        defer { server.stop() }
        try await expectStillServing(server)
    }

    @Test func theObserverIsToldEachTargetAsItArrivedUnknownPathsIncluded() async throws {
        final class Events: Sendable {
            let list = Mutex<[ServerEvent]>([])
        }
        let events = Events()
        let server = try TestServer(.init(observer: { event in events.list.withLock { $0.append(event) } }))
        defer { server.stop() }
        #expect(try await exchange(server.port, request(key: "op-1", body: body).replacingOccurrences(
            of: "POST /products ", with: "POST /products?x=%2F ")).status == 201)
        #expect(try await exchange(server.port, request(key: "op-2", body: body).replacingOccurrences(
            of: "POST /products ", with: "POST /nowhere%2fx?y=%20 ")).status == 404)
        #expect(try await exchange(server.port, request("GET", "/_control/applied")).status == 200)
        let seen = events.list.withLock { $0 }
        #expect(seen.map(\.target) == ["/products?x=%2F", "/nowhere%2fx?y=%20"], "control requests are not business")
        #expect(seen.map(\.path) == ["/products", "/nowhere%2fx"])
        #expect(seen.map(\.outcome) == [.applied, .refused])
        #expect(seen.map(\.status) == [201, 404])
        #expect(seen.map(\.idempotencyKey) == ["op-1", "op-2"])
    }

    @Test func anUnsupportedHTTPVersionGets505() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let answered = try await exchangeUntilClosed(server.port, "GET /_control/applied HTTP/2.0\r\n\r\n")
        #expect(String(decoding: answered, as: UTF8.self).hasPrefix("HTTP/1.1 505 "))
    }

    @Test func aBodyOverTheLimitGets413UnreadAndTheServerKeepsServing() async throws {
        let server = try TestServer(.init(maxBodyBytes: 1024))
        defer { server.stop() }
        let large = #"{"id":"p-1","pad":""# + String(repeating: "x", count: 2000) + #""}"#
        let response = try await exchange(server.port, request(key: "op-1", body: large))
        #expect(response.status == 413)
        #expect(response.code == "body_too_large")
        #expect(response.header("Connection") == "close")
        #expect(try server.appliedCounts().isEmpty)
        let atLimit = #"{"id":"p-2","pad":""# + String(repeating: "x", count: 1024 - 21) + #""}"#
        #expect(atLimit.utf8.count == 1024)
        #expect(try await exchange(server.port, request(key: "op-2", body: atLimit)).status == 201)
    }

    @Test func headersOverTheLimitGet431() async throws {
        let server = try TestServer(.init(maxHeaderBytes: 512))
        defer { server.stop() }
        let response = try await exchange(
            server.port, request(key: "op-1", body: body, headers: ["X-Padding: " + String(repeating: "p", count: 600)]))
        #expect(response.status == 431)
        try await expectStillServing(server)
    }

    @Test func tooManyHeaderLinesGet431() async throws {
        let server = try TestServer(.init(maxHeaderCount: 10))
        defer { server.stop() }
        let response = try await exchange(
            server.port, request(key: "op-1", body: body, headers: (0..<12).map { "X-H\($0): v" }))
        #expect(response.status == 431)
    }

    @Test func aChunkedBodyIsRefusedWith411() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let chunked = "POST /products HTTP/1.1\r\nHost: x\r\nIdempotency-Key: op-1\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "c\r\n{\"id\":\"p-1\"}\r\n0\r\n\r\n"
        let response = try await exchange(server.port, chunked)
        #expect(response.status == 411)
        #expect(response.code == "length_required")
        #expect(try server.appliedCounts().isEmpty)
        try await expectStillServing(server)
    }

    @Test func aClientThatSendsNothingIsClosedAfterTheReadTimeout() async throws {
        let server = try TestServer(.init(readTimeout: 0.2))
        defer { server.stop() }
        let started = ContinuousClock.now
        let received = try await onThread {
            let connection = try RawConnection(port: server.port)
            return try connection.readUntilClosed()
        }
        let waited = ContinuousClock.now - started
        // `readUntilClosed` throws if the server never closes: returning is the server's close.
        #expect(received.isEmpty, "an idle connection is closed without a response")
        #expect(waited >= .milliseconds(200), "not before the read timeout")
        try await expectStillServing(server)
    }

    @Test func aRequestCutOffMidwayGets408AfterTheReadTimeout() async throws {
        let server = try TestServer(.init(readTimeout: 0.2))
        defer { server.stop() }
        let received = try await exchangeUntilClosed(
            server.port, "POST /products HTTP/1.1\r\nIdempotency-Key: op-1\r\nContent-Length: 50\r\n\r\n{\"id\":")
        #expect(String(decoding: received, as: UTF8.self).hasPrefix("HTTP/1.1 408 "))
        #expect(try server.appliedCounts().isEmpty)
        try await expectStillServing(server)
    }

    @Test func keepAliveServesSeveralRequestsOnOneConnectionAndCloseEndsIt() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (first, second, pipelined, last, rest) = try await onThread {
            let connection = try RawConnection(port: server.port)
            try connection.send(request(key: "op-1", body: #"{"id":"p-1"}"#))
            let first = try connection.readResponse()
            try connection.send(request(key: "op-1", body: #"{"id":"p-1"}"#))
            let second = try connection.readResponse()
            // Two requests in one write: answered in order.
            try connection.send(request(key: "op-2", body: #"{"id":"p-2"}"#) + request(key: "op-3", body: #"{"id":"p-3"}"#, close: true))
            let pipelined = try connection.readResponse()
            let last = try connection.readResponse()
            return (first, second, pipelined, last, try connection.readUntilClosed())
        }
        #expect(first.status == 201)
        #expect(first.header("Connection") == "keep-alive")
        #expect(second.header("Idempotent-Replayed") == "true")
        #expect(pipelined.status == 201)
        #expect(last.status == 201)
        #expect(last.header("Connection") == "close")
        #expect(rest.isEmpty, "closed after the answer to Connection: close")
        #expect(try server.appliedCounts() == ["op-1": 1, "op-2": 1, "op-3": 1])
    }

    @Test func anHTTP10RequestIsAnsweredAndClosed() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let raw = "POST /products HTTP/1.0\r\nIdempotency-Key: op-1\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let received = String(decoding: try await exchangeUntilClosed(server.port, raw), as: UTF8.self)
        #expect(received.hasPrefix("HTTP/1.1 201 "))
        #expect(received.contains("Connection: close"))
    }

    @Test func connectionsOverTheLimitGet503AndTheServerRecovers() async throws {
        let server = try TestServer(.init(maxConnections: 2))
        defer { server.stop() }
        let refused = try await onThread {
            // Two kept-alive connections, each proven admitted by an answer.
            let first = try RawConnection(port: server.port)
            let second = try RawConnection(port: server.port)
            for connection in [first, second] {
                try connection.send(request("GET", "/_control/applied"))
                _ = try connection.readResponse()
            }
            let third = try RawConnection(port: server.port)
            return try third.readResponse()
        }
        #expect(refused.status == 503)
        #expect(refused.code == "too_many_connections")
        // The two connections were closed with their thread's end; their slots free up. Awaited
        // as that (no connection served), not by a number of tries a loaded machine could use up
        // before the server's threads ran; the suite's time limit ends a server that never frees them.
        await server.untilNoConnection()
        let status = try await exchange(server.port, request(key: "op-1", body: body)).status
        #expect(status == 201)
    }

    @Test func unknownPathsGet404AndWrongMethods405() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let missing = try await exchange(server.port, request("GET", "/nowhere"))
        #expect(missing.status == 404)
        let wrong = try await exchange(server.port, request("GET", "/products"))
        #expect(wrong.status == 405)
        #expect(wrong.header("Allow") == "POST")
        let control = try await exchange(server.port, request("DELETE", "/_control/faults"))
        #expect(control.status == 405)
        #expect(control.header("Allow") == "GET, POST")
    }

    @Test func stopClosesOpenConnectionsAndReturnsOnceTheThreadsEnded() async throws {
        // Idle connections are kept far longer than the test takes, however loaded the machine.
        let server = try TestServer(TestServer.Configuration(readTimeout: 600))
        let port = server.port
        let connection = try await onThread {
            let connection = try RawConnection(port: port)
            try connection.send(request("GET", "/_control/applied"))
            _ = try connection.readResponse()
            return connection
        }
        #expect(server.openConnectionCount == 1, "kept alive")
        let closed = Task { try await onThread { try connection.readUntilClosed() } }
        server.stop()
        #expect(server.openConnectionCount == 0)
        #expect(try await closed.value.isEmpty)
        await #expect(throws: RawHTTPError.self) { try await exchange(port, request("GET", "/_control/applied")) }
        server.stop()  // a second stop does nothing
    }
}
