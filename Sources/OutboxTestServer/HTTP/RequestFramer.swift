import Foundation

/// The bounds on what one request may be.
public struct HTTPLimits: Sendable, Equatable {
    /// The most bytes the request line and headers may take, blank line included.
    public var maxHeaderBytes: Int
    /// The most header lines.
    public var maxHeaderCount: Int
    /// The largest `Content-Length` accepted; larger bodies are refused with 413 unread.
    public var maxBodyBytes: Int

    public init(maxHeaderBytes: Int = 16 << 10, maxHeaderCount: Int = 100, maxBodyBytes: Int = 1 << 20) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
    }
}

/// What the bytes read so far on a connection come to.
enum Framing: Equatable {
    /// Not a whole request yet.
    case needMore
    /// One request, which took the first `consumed` bytes.
    case request(HTTPRequest, consumed: Int)
    /// Bytes the server will not take: answer this, then close the connection.
    case reject(HTTPResponse)
}

/// Cuts HTTP/1.1 requests out of a connection's bytes. Pure: bytes in, a ``Framing`` out.
///
/// Only `Content-Length` bodies are read; a request with `Transfer-Encoding` (chunked) is
/// refused with 411. Anything malformed is a 400, never a crash; the limits of ``HTTPLimits``
/// are enforced before the bytes beyond them are read.
enum RequestFramer {
    private static let crlf: [UInt8] = [13, 10]
    private static let headEnd: [UInt8] = [13, 10, 13, 10]

    static func frame(_ buffer: [UInt8], limits: HTTPLimits) -> Framing {
        // Empty lines before a request line are ignored (RFC 9112 §2.2).
        var start = 0
        while buffer.count >= start + 2, buffer[start] == 13, buffer[start + 1] == 10 { start += 2 }

        let searchEnd = min(buffer.count, start + limits.maxHeaderBytes)
        let terminator = firstIndex(of: headEnd, in: buffer, from: start, to: searchEnd)
        // A head whose lines end in a bare LF never holds CRLF CRLF: refuse it as soon as the
        // byte that proves it arrives, rather than wait out the read timeout for an end that
        // will not come.
        if let problem = bareLineEnd(in: buffer, from: start, to: terminator ?? searchEnd) {
            return badRequest(problem)
        }
        guard let terminator else {
            if buffer.count - start >= limits.maxHeaderBytes {
                return .reject(.problem(
                    431, code: "headers_too_large",
                    message: "the request line and headers exceed \(limits.maxHeaderBytes) bytes"))
            }
            return .needMore
        }
        let head: ParsedHead
        switch parseHead(Array(buffer[start..<terminator]), limits: limits) {
        case .success(let parsed): head = parsed
        case .failure(let rejection): return .reject(rejection.response)
        }
        let bodyStart = terminator + headEnd.count
        guard buffer.count - bodyStart >= head.contentLength else { return .needMore }
        var request = head.request
        request.body = Data(buffer[bodyStart..<bodyStart + head.contentLength])
        return .request(request, consumed: bodyStart + head.contentLength)
    }

    // MARK: The head

    private struct ParsedHead {
        var request: HTTPRequest
        var contentLength: Int
    }

    private struct Rejection: Error {
        var response: HTTPResponse
    }

    private static func badRequest(_ message: String) -> Framing {
        .reject(.problem(400, code: "malformed_request", message: message))
    }

    private static func reject(_ status: Int, _ code: String, _ message: String) -> Rejection {
        Rejection(response: .problem(status, code: code, message: message))
    }

    private static func parseHead(_ bytes: [UInt8], limits: HTTPLimits) -> Result<ParsedHead, Rejection> {
        let lines = split(bytes, on: crlf)
        guard let requestLine = lines.first else { return .failure(reject(400, "malformed_request", "empty request")) }
        if let problem = lines.lazy.compactMap(lineProblem).first {
            return .failure(reject(400, "malformed_request", problem))
        }
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            return .failure(reject(400, "malformed_request", "the request line must be METHOD SP TARGET SP VERSION"))
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = String(decoding: parts[1], as: UTF8.self)
        let version = String(decoding: parts[2], as: UTF8.self)
        guard !method.isEmpty, method.utf8.allSatisfy(isTokenByte) else {
            return .failure(reject(400, "malformed_request", "the method is not a token"))
        }
        if let problem = RequestTarget.problem(parts[1]) {
            return .failure(reject(400, "malformed_request", problem))
        }
        let minorVersion: Int
        switch version {
        case "HTTP/1.1": minorVersion = 1
        case "HTTP/1.0": minorVersion = 0
        default:
            if version.hasPrefix("HTTP/"), version.count == 8 {
                return .failure(reject(505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served"))
            }
            return .failure(reject(400, "malformed_request", "the request line does not end in an HTTP version"))
        }

        var headers: [(name: String, value: String)] = []
        var nonUTF8HeaderNames: [String] = []
        for line in lines.dropFirst() {
            guard headers.count < limits.maxHeaderCount else {
                return .failure(reject(431, "headers_too_large", "more than \(limits.maxHeaderCount) header lines"))
            }
            if let first = line.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
                return .failure(reject(400, "malformed_request", "folded header lines are not accepted"))
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                return .failure(reject(400, "malformed_request", "a header line has no ':'"))
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
                return .failure(reject(400, "malformed_request", "a header name is not a token"))
            }
            let value = trimmingSpaces(line[(colon + 1)...])
            let nameText = String(decoding: name, as: UTF8.self)
            // Bytes past ASCII are allowed in a value (obs-text); those that are not UTF-8 are
            // named, so no key is ever read from their replacement characters.
            if String(validating: value, as: UTF8.self) == nil { nonUTF8HeaderNames.append(nameText) }
            headers.append((nameText, String(decoding: value, as: UTF8.self)))
        }
        var request = HTTPRequest(method: method, path: target, target: target, minorVersion: minorVersion, headers: headers)
        request.nonUTF8HeaderNames = nonUTF8HeaderNames
        if let question = target.firstIndex(of: "?") {
            request.path = String(target[..<question])
            request.query = String(target[target.index(after: question)...])
        }

        if request.header("Transfer-Encoding") != nil {
            return .failure(reject(
                411, "length_required",
                "chunked or other transfer-coded request bodies are not supported; send Content-Length"))
        }
        let lengths = request.headerValues("Content-Length")
            .flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        var contentLength = 0
        if let first = lengths.first {
            guard lengths.allSatisfy({ $0 == first }), !first.isEmpty,
                first.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            else {
                return .failure(reject(400, "malformed_request", "Content-Length is not one decimal number"))
            }
            // Any number of digits is a length; one beyond what an Int holds is beyond the limit too.
            let digits = first.drop { $0 == "0" }
            guard digits.utf8.count <= 18 else {
                return .failure(reject(
                    413, "body_too_large",
                    "the body's Content-Length is a number of \(digits.utf8.count) digits, beyond the limit of \(limits.maxBodyBytes) bytes"))
            }
            let length = Int(digits) ?? 0
            guard length <= limits.maxBodyBytes else {
                return .failure(reject(
                    413, "body_too_large", "the body of \(length) bytes exceeds the limit of \(limits.maxBodyBytes)"))
            }
            contentLength = length
        }
        return .success(ParsedHead(request: request, contentLength: contentLength))
    }

    /// Why the head in `buffer[start..<end]` cannot be HTTP/1.1's: an LF without the CR before
    /// it, or a CR followed by anything but LF. A CR that is the last byte read yet is judged
    /// once the next byte arrives.
    private static func bareLineEnd(in buffer: [UInt8], from start: Int, to end: Int) -> String? {
        var index = start
        while index < end {
            switch buffer[index] {
            case 10 where index == start || buffer[index - 1] != 13:
                return "a line ends in a bare LF; lines end in CRLF"
            case 13 where index + 1 < buffer.count && buffer[index + 1] != 10:
                return "a line holds a bare CR; lines end in CRLF"
            default:
                index += 1
            }
        }
        return nil
    }

    /// Why a line of the head cannot be HTTP: a control byte. (CR and LF never reach here:
    /// ``bareLineEnd(in:from:to:)`` has refused any that do not make a CRLF.)
    private static func lineProblem(_ line: ArraySlice<UInt8>) -> String? {
        for byte in line where (byte < 0x20 && byte != UInt8(ascii: "\t")) || byte == 0x7f {
            return "the head holds a control character"
        }
        return nil
    }

    // MARK: Bytes

    /// `tchar` of RFC 9110: the bytes a method or header name may hold.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    private static func trimmingSpaces(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isSpace: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return []
        }
        return bytes[first...last]
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8], from start: Int, to end: Int) -> Int? {
        guard end - start >= needle.count else { return nil }
        var index = start
        while index <= end - needle.count {
            if haystack[index] == needle[0], haystack[index..<index + needle.count].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    private static func split(_ bytes: [UInt8], on separator: [UInt8]) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = 0
        while let next = firstIndex(of: separator, in: bytes, from: lineStart, to: bytes.count) {
            lines.append(bytes[lineStart..<next])
            lineStart = next + separator.count
        }
        lines.append(bytes[lineStart...])
        return lines
    }
}

/// What a request target may be on this server: an absolute path (and query) in printable
/// ASCII, as RFC 9112 writes it; bytes past ASCII travel percent-encoded. Two targets are the
/// same only when their bytes are.
enum RequestTarget {
    /// Why `bytes` cannot be a request target; `nil` when it can.
    static func problem(_ bytes: some Collection<UInt8>) -> String? {
        guard bytes.first == UInt8(ascii: "/") else { return "the request target must be a path beginning with '/'" }
        if bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            return "the request target holds a space or a control character; percent-encode it"
        }
        if bytes.contains(where: { $0 >= 0x80 }) {
            return "the request target holds bytes beyond ASCII; percent-encode them (UTF-8, then %XX)"
        }
        return nil
    }
}
