#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX socket calls the server makes, each wrapped once.
///
/// Every descriptor is opened close-on-exec (child processes of a test must not inherit the
/// server's sockets) and never raises `SIGPIPE`: a write to a peer that left fails with
/// `EPIPE` instead of killing the process.
enum Socket {
    /// A TCP socket listening on 127.0.0.1 at `port` (0: the system picks one).
    /// - Returns: the descriptor and the port actually bound.
    static func listenOnLoopback(port: UInt16, backlog: Int32) throws(SocketError) -> (descriptor: Int32, port: UInt16) {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw SocketError("socket") }
        do throws(SocketError) {
            try configure(descriptor)
            var reuse: Int32 = 1
            guard setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                throw SocketError("setsockopt(SO_REUSEADDR)")
            }
            var address = sockaddr_in()
            #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian  // 127.0.0.1, never any other interface
            let bound = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw SocketError("bind") }
            guard listen(descriptor, backlog) == 0 else { throw SocketError("listen") }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0 else { throw SocketError("getsockname") }
            return (descriptor, UInt16(bigEndian: address.sin_port))
        } catch {
            close(descriptor)
            throw error
        }
    }

    /// Accepts one connection; `nil` when the call was interrupted or the peer left first.
    static func accept(_ listener: Int32) throws(SocketError) -> Int32? {
        #if canImport(Glibc)
        let descriptor = Glibc.accept(listener, nil, nil)
        #else
        let descriptor = Darwin.accept(listener, nil, nil)
        #endif
        if descriptor < 0 {
            if errno == EINTR || errno == ECONNABORTED || errno == EAGAIN { return nil }
            throw SocketError("accept")
        }
        do throws(SocketError) {
            try configure(descriptor)
        } catch {
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// What waiting for a descriptor came to.
    enum Readiness: Equatable {
        case ready
        case timedOut
        /// The other descriptor waited on (a wake-up pipe) became readable.
        case woken
    }

    /// Waits until `descriptor` is readable, `wake` is readable, or the timeout passes.
    /// A negative timeout waits without end.
    static func waitReadable(
        _ descriptor: Int32,
        wake: Int32? = nil,
        timeoutMilliseconds: Int32
    ) throws(SocketError) -> Readiness {
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        if let wake { descriptors.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
        while true {
            let count = poll(&descriptors, nfds_t(descriptors.count), timeoutMilliseconds)
            if count < 0 {
                if errno == EINTR { continue }
                throw SocketError("poll")
            }
            if count == 0 { return .timedOut }
            if descriptors.count > 1, descriptors[1].revents != 0 { return .woken }
            return .ready
        }
    }

    /// Reads what is available, up to `capacity` bytes; empty at end of stream.
    static func read(_ descriptor: Int32, capacity: Int) throws(SocketError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: capacity)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, capacity, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                throw SocketError("recv")
            }
            return Array(buffer.prefix(count))
        }
    }

    /// Sends every byte. A peer that stops reading for longer than the send timeout set by
    /// ``setSendTimeout(_:milliseconds:)`` fails the write with `ETIMEDOUT`.
    static func write(_ descriptor: Int32, _ bytes: [UInt8]) throws(SocketError) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return send(descriptor, base + sent, bytes.count - sent, sendFlags)
            }
            if count >= 0 {
                sent += count
                continue
            }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw SocketError("send", code: ETIMEDOUT) }
            throw SocketError("send")
        }
    }

    /// Bounds how long one `send` may block on a peer that does not read.
    static func setSendTimeout(_ descriptor: Int32, milliseconds: Int) throws(SocketError) {
        var value = timeval()
        value.tv_sec = .init(milliseconds / 1000)
        value.tv_usec = .init((milliseconds % 1000) * 1000)
        guard setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            throw SocketError("setsockopt(SO_SNDTIMEO)")
        }
    }

    /// Ends both directions: a thread blocked reading the socket wakes up with end of stream.
    static func shutdownBoth(_ descriptor: Int32) {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
    }

    static func close(_ descriptor: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
    }

    /// A pipe whose read end wakes a thread blocked in ``waitReadable(_:wake:timeoutMilliseconds:)``.
    static func makeWakePipe() throws(SocketError) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw SocketError("pipe") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    static func wake(_ pipeWriteEnd: Int32) {
        var byte: UInt8 = 1
        #if canImport(Glibc)
        _ = Glibc.write(pipeWriteEnd, &byte, 1)
        #else
        _ = Darwin.write(pipeWriteEnd, &byte, 1)
        #endif
    }

    #if canImport(Glibc)
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    private static let sendFlags: Int32 = 0
    #endif

    private static func configure(_ descriptor: Int32) throws(SocketError) {
        guard fcntl(descriptor, F_SETFD, FD_CLOEXEC) == 0 else { throw SocketError("fcntl(FD_CLOEXEC)") }
        #if canImport(Darwin)
        var noSignal: Int32 = 1
        guard setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &noSignal, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw SocketError("setsockopt(SO_NOSIGPIPE)")
        }
        #endif
    }
}
