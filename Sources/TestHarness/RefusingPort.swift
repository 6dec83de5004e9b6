#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback port that refuses every connection for as long as this value is held.
///
/// The socket is bound and never listens, so a connect to it is answered with a reset
/// (`ECONNREFUSED`) rather than accepted. It is bound without `SO_REUSEADDR`, so no other
/// socket of the machine (another test's server, say) can take the port while it is held:
/// a port that was merely closed could be handed to someone else between the close and the
/// connect, and the test would meet a stranger instead of a refusal.
public final class RefusingPort: @unchecked Sendable {
    /// The port, on 127.0.0.1.
    public let port: UInt16
    private let descriptor: Int32

    public struct Failure: Error, CustomStringConvertible {
        public let call: String
        public let errno: Int32
        public var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
    }

    public init() throws {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(call: "socket", errno: errno) }
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw Failure(call: "bind", errno: code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else {
            let code = errno
            close(descriptor)
            throw Failure(call: "getsockname", errno: code)
        }
        self.descriptor = descriptor
        self.port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }
}
