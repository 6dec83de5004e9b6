#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback port that refuses every connection for as long as this value is held.
///
/// The socket is bound to 127.0.0.1 port 0 (the kernel chooses) and never listens, so a connect
/// to it is answered with a reset (`ECONNREFUSED`) rather than accepted. While it is held the
/// kernel hands the port to no one else, neither another `bind` to port 0 nor an outgoing
/// connection's ephemeral port: a port that was merely closed could be handed to someone else
/// between the close and the connect, and the test would meet a stranger instead of a refusal.
///
/// Held ``Sharing/withReusingServer``, the port is kept for a server of ours instead: one that
/// binds it by number with `SO_REUSEADDR` (memcached, and OpenStack Swift's servers through
/// eventlet) may bind and listen on it. Let the value go once the server listens, and there is
/// no moment in which a stranger could take the port.
///
/// ```swift
/// let held = try RefusingPort(sharing: .withReusingServer)
/// let server = try launchServer(port: held.port)   // binds it with SO_REUSEADDR
/// try withExtendedLifetime(held) { try server.waitUntilListening() }
/// // `held` is let go: the server keeps the port.
/// ```
public final class RefusingPort: @unchecked Sendable {
    // @unchecked Sendable: its state is `let` and the descriptor is only closed by deinit.

    /// Who else may bind the port while it is held.
    public enum Sharing: Sendable {
        /// No one: bound without `SO_REUSEADDR`, so no other socket of the machine (another
        /// test's server, say) can take the port.
        case exclusive
        /// A server that binds the port by number with `SO_REUSEADDR`; bound with it too.
        case withReusingServer
    }

    /// The port, on 127.0.0.1.
    public let port: UInt16
    private let descriptor: Int32

    public struct Failure: Error, CustomStringConvertible {
        public let call: String
        public let errno: Int32
        public var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
    }

    /// - Parameter sharing: who else may bind the port while it is held; by default no one.
    /// - Throws: ``Failure`` naming the socket call that failed.
    public init(sharing: Sharing = .exclusive) throws {
        // Close-on-exec: a child spawned while the port is held does not keep it after us.
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(call: "socket", errno: errno) }
        if sharing == .withReusingServer {
            var on: Int32 = 1
            guard setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                let code = errno
                close(descriptor)
                throw Failure(call: "setsockopt(SO_REUSEADDR)", errno: code)
            }
        }
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
