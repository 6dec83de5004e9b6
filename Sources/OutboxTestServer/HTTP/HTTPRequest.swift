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
    /// Header lines in their order, names as sent.
    public var headers: [(name: String, value: String)]
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
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }

    /// Whether the client asked to keep the connection open after this request: by default in
    /// HTTP/1.1 unless `Connection: close`, and in HTTP/1.0 only with `Connection: keep-alive`.
    public var wantsKeepAlive: Bool {
        let options = headers
            .filter { $0.name.lowercased() == "connection" }
            .flatMap { $0.value.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        if options.contains("close") { return false }
        return minorVersion >= 1 || options.contains("keep-alive")
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.query == rhs.query && lhs.target == rhs.target
            && lhs.minorVersion == rhs.minorVersion && lhs.body == rhs.body
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }
}
