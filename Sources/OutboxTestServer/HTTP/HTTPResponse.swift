public import Foundation
public import IdempotencyClaims

/// One response, as the server writes it.
public struct HTTPResponse: Sendable, Equatable {
    /// The HTTP status, e.g. 201.
    public var status: Int
    /// Header lines in order. `Content-Length` and `Connection` are added when written.
    public var headers: [ClaimResponse.Header]
    /// The body, byte for byte.
    public var body: Data

    public init(status: Int, headers: [ClaimResponse.Header] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The response a claim answered, unchanged.
    public init(_ claimed: ClaimResponse) {
        self.init(status: claimed.status, headers: claimed.headers, body: claimed.body)
    }

    /// A JSON error body `{"code":"...","message":"..."}`.
    public static func problem(_ status: Int, code: String, message: String, headers: [ClaimResponse.Header] = []) -> HTTPResponse {
        var response = HTTPResponse(ClaimResponse.problem(status: status, code: code, message: message))
        response.headers += headers
        return response
    }

    /// A JSON body with `Content-Type: application/json`.
    public static func json(_ status: Int, _ body: Data) -> HTTPResponse {
        HTTPResponse(status: status, headers: [.init(name: "Content-Type", value: "application/json")], body: body)
    }

    /// The bytes on the wire: status line, headers, `Content-Length`, `Connection`, body.
    public func serialized(keepAlive: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reason(for: status))\r\n"
        for header in headers { head += "\(header.name): \(header.value)\r\n" }
        head += "Content-Length: \(body.count)\r\n"
        head += "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
        return Array(head.utf8) + Array(body)
    }

    /// The standard reason phrase for the statuses this server sends.
    static func reason(for status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}
