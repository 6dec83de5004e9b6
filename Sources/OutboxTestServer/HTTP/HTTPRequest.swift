public import Foundation

/// One HTTP/1.x request as the server read it.
public struct HTTPRequest: Sendable, Equatable {
    /// The method as sent, e.g. `POST`.
    public var method: String
    /// The path, without the query.
    public var path: String
    /// The query, without `?`; empty when there is none.
    public var query: String
    /// The request target exactly as it arrived on the request line: path, `?` and query, every
    /// escape as sent.
    public var target: String
    /// `1` for HTTP/1.1, `0` for HTTP/1.0.
    public var minorVersion: Int
    /// Header lines in their order, names as sent. A value whose bytes are not UTF-8 holds
    /// U+FFFD in their place; its line is named in ``nonUTF8HeaderNames``.
    public var headers: [(name: String, value: String)]
    /// The names (as sent) of the header lines whose value is not UTF-8, in order: such a value
    /// cannot be a key, and the server refuses it where it needs one (`Idempotency-Key`,
    /// `X-Business-ID`) rather than read the replacement characters.
    public var nonUTF8HeaderNames: [String] = []
    /// The body, `Content-Length` bytes of it.
    public var body: Data

    /// - Parameter target: the request target as sent; by default the path, then `?` and the
    ///   query when there is one.
    public init(
        method: String, path: String, query: String = "", target: String? = nil, minorVersion: Int = 1,
        headers: [(name: String, value: String)] = [], body: Data = Data()
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.target = target ?? (query.isEmpty ? path : path + "?" + query)
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
    }

    /// The first value of the header `name`, matched without regard to case.
    public func header(_ name: String) -> String? {
        headers.first { Self.isNamed($0.name, name) }?.value
    }

    /// Every value of the header `name`, one per line, in order.
    public func headerValues(_ name: String) -> [String] {
        headers.filter { Self.isNamed($0.name, name) }.map(\.value)
    }

    /// Whether a line of the header `name` holds bytes that are not UTF-8.
    public func headerIsNotUTF8(_ name: String) -> Bool {
        nonUTF8HeaderNames.contains { Self.isNamed($0, name) }
    }

    /// Header names are ASCII tokens, matched without regard to ASCII case.
    private static func isNamed(_ line: String, _ name: String) -> Bool {
        line.utf8.count == name.utf8.count
            && zip(line.utf8, name.utf8).allSatisfy { asciiLowercase($0) == asciiLowercase($1) }
    }

    private static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    /// Whether the client asked to keep the connection open after this request: by default in
    /// HTTP/1.1 unless `Connection: close`, and in HTTP/1.0 only with `Connection: keep-alive`.
    public var wantsKeepAlive: Bool {
        let options = headerValues("Connection")
            .flatMap { $0.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        if options.contains("close") { return false }
        return minorVersion >= 1 || options.contains("keep-alive")
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.query == rhs.query && lhs.target == rhs.target
            && lhs.minorVersion == rhs.minorVersion && lhs.body == rhs.body
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value.utf8.elementsEqual($1.value.utf8) }
            && lhs.nonUTF8HeaderNames == rhs.nonUTF8HeaderNames
    }
}
