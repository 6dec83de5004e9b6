import Foundation
import OutboxTestServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum RawHTTPError: Error, CustomStringConvertible {
    case system(String, Int32)
    case timedOut(String)
    case closedEarly(received: Int)
    case malformed(String)

    var description: String {
        switch self {
        case .system(let call, let code): "\(call) failed: errno \(code)"
        case .timedOut(let what): "timed out waiting for \(what)"
        case .closedEarly(let received): "connection closed after \(received) bytes of a response"
        case .malformed(let why): "malformed response: \(why)"
        }
    }
}

/// One response as it came off the wire.
struct RawResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: Data
    /// Every byte of the response, status line to body.
    var bytes: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }

    var code: String? { json?["code"] as? String }
}

/// A blocking TCP connection to 127.0.0.1 that sends exactly the bytes given: for requests no
/// well-behaved client would send. Use it inside ``onThread(_:)``.
final class RawConnection: @unchecked Sendable {
    // Why unchecked: `buffer` is mutable, but a test uses a connection from one thread at a
    // time, handing it from one step to the next, never from two threads at once.
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    /// The longest any read waits: a bound so a broken server fails the test instead of hanging it.
    /// Longer than `POST /_control/await-held` may rightly wait (5 min), and long enough that a
    /// loaded machine never trips it.
    static let patienceMilliseconds: Int32 = 420_000

    init(port: UInt16) throws {
        #if canImport(Glibc)
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw RawHTTPError.system("socket", errno) }
        #if canImport(Darwin)
        var noSignal: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &noSignal, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // A throw from here on still runs `deinit`, which closes the descriptor: closing it here
        // too could close another connection's reused number.
        guard connected == 0 else { throw RawHTTPError.system("connect", errno) }
    }

    deinit {
        close(descriptor)
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        #if canImport(Glibc)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        let flags: Int32 = 0
        #endif
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return systemSend(descriptor, base + sent, bytes.count - sent, flags)
            }
            guard count > 0 else { throw RawHTTPError.system("send", errno) }
            sent += count
        }
    }

    /// Reads one response framed by its `Content-Length`.
    func readResponse() throws -> RawResponse {
        while true {
            if let response = try takeResponse() { return response }
            let chunk = try readChunk()
            if chunk.isEmpty { throw RawHTTPError.closedEarly(received: buffer.count) }
            buffer += chunk
        }
    }

    /// Reads until the server closes the connection; answers every byte received.
    func readUntilClosed() throws -> [UInt8] {
        while true {
            let chunk = try readChunk()
            if chunk.isEmpty {
                defer { buffer = [] }
                return buffer
            }
            buffer += chunk
        }
    }

    private func readChunk() throws -> [UInt8] {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, Self.patienceMilliseconds)
        guard ready > 0 else { throw RawHTTPError.timedOut("the server") }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, 65536, 0) }
        if count < 0 {
            // A reset counts as the end of the stream.
            if errno == ECONNRESET { return [] }
            throw RawHTTPError.system("recv", errno)
        }
        return Array(chunk.prefix(count))
    }

    private func takeResponse() throws -> RawResponse? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard let end = buffer.indices.dropLast(3).first(where: { buffer[$0..<$0 + 4].elementsEqual(terminator) }) else {
            return nil
        }
        let head = String(decoding: buffer[..<end], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0] == "HTTP/1.1", let status = Int(statusLine[1]) else {
            throw RawHTTPError.malformed(head)
        }
        let headers = lines.map { line -> (name: String, value: String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        let total = end + 4 + length
        guard buffer.count >= total else { return nil }
        let bytes = Array(buffer[..<total])
        buffer.removeFirst(total)
        return RawResponse(status: status, headers: headers, body: Data(bytes[(end + 4)...]), bytes: bytes)
    }
}

#if canImport(Glibc)
private func systemSend(_ descriptor: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    Glibc.send(descriptor, pointer, count, flags)
}
#else
private func systemSend(_ descriptor: Int32, _ pointer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    Darwin.send(descriptor, pointer, count, flags)
}
#endif

/// The text of a request with a `Content-Length` body.
func request(
    _ method: String = "POST",
    _ path: String = "/products",
    key: String? = nil,
    body: String = "",
    headers: [String] = [],
    close: Bool = false
) -> String {
    var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if let key { text += "Idempotency-Key: \(key)\r\n" }
    if !body.isEmpty { text += "Content-Type: application/json\r\n" }
    for header in headers { text += header + "\r\n" }
    if close { text += "Connection: close\r\n" }
    text += "Content-Length: \(body.utf8.count)\r\n\r\n" + body
    return text
}

extension RawResponse {
    /// `GET /_control/applied`'s answer, `{"applied":[{"count":n,"key":"..."}, ...]}`, as counts
    /// by key compared byte for byte; `nil` when the body is not that shape.
    var appliedCounts: AppliedCounts? {
        guard let entries = json?["applied"] as? [[String: Any]] else { return nil }
        var counts: [(key: String, count: Int)] = []
        for entry in entries {
            guard let key = entry["key"] as? String, let count = entry["count"] as? Int else { return nil }
            counts.append((key, count))
        }
        return AppliedCounts(counts)
    }
}
