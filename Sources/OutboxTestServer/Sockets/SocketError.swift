#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed socket call: which call, and the `errno` it left.
public struct SocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The system call that failed, e.g. `bind`.
    public var call: String
    public var code: Int32

    init(_ call: String, code: Int32 = errno) {
        self.call = call
        self.code = code
    }

    public var description: String {
        "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
    }
}
