#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback port chosen by the kernel and kept from everyone else until a server of ours
/// listens on it.
///
/// The socket is bound to 127.0.0.1 port 0 with `SO_REUSEADDR` and never listens. While it is
/// held, the kernel hands the port to no one else (neither another `bind` to port 0 nor an
/// outgoing connection's ephemeral port), yet a server that binds the port by number with
/// `SO_REUSEADDR` (memcached, and Swift's servers through eventlet) may bind and listen on it.
/// Releasing it once the server listens leaves no moment in which a stranger could take the port.
final class HeldPort {
    /// The port, on 127.0.0.1.
    let port: Int
    private var descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        let call: String
        let errno: Int32
        var description: String { "\(call) failed: \(String(cString: strerror(errno)))" }
    }

    init() throws {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(call: "socket", errno: errno) }
        var on: Int32 = 1
        guard setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            let code = errno
            close(descriptor)
            throw Failure(call: "setsockopt(SO_REUSEADDR)", errno: code)
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
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Lets the port go; its server keeps it. Releasing twice does nothing.
    func release() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    deinit { release() }
}
