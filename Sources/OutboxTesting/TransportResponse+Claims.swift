package import IdempotencyClaims
package import Outbox

extension TransportResponse {
    /// A claims library's answer as a transport's response, for the servers in memory that
    /// answer the engine without a socket: its status, headers (by name, the last of a name
    /// kept) and body, byte for byte.
    package init(_ response: ClaimResponse) {
        var headers: [String: String] = [:]
        for header in response.headers { headers[header.name] = header.value }
        self.init(statusCode: response.status, headers: headers, body: response.body)
    }
}
