import Foundation
import OutboxWire
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The sockets and threads of a running ``TestServer``: one thread accepts, one thread serves
/// each connection, blocking I/O bounded by `poll` timeouts.
///
/// The threads hold this object, not the ``TestServer``, so that dropping the server stops it.
final class ServerCore: Sendable {
    let port: UInt16
    let routes: Routes
    private let limits: HTTPLimits
    private let maxConnections: Int
    private let readTimeoutMilliseconds: Int32
    private let writeTimeoutMilliseconds: Int
    private let listener: Int32
    private let wake: (read: Int32, write: Int32)
    private let connections = Mutex(Connections())
    private let threads = DispatchGroup()

    private struct Connections {
        /// Descriptors of the connections being served. A descriptor leaves this set before its
        /// thread closes it, under the same lock `stop` shuts them down with: `stop` never
        /// touches a number the system has already given to another file.
        var open: Set<Int32> = []
        var isStopping = false
        var isStopped = false
        /// Callers of ``untilNoConnection()``, resumed when the last connection ends.
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    init(configuration: TestServer.Configuration, routes: Routes) throws {
        self.routes = routes
        limits = HTTPLimits(
            maxHeaderBytes: configuration.maxHeaderBytes,
            maxHeaderCount: configuration.maxHeaderCount,
            maxBodyBytes: configuration.maxBodyBytes)
        maxConnections = configuration.maxConnections
        readTimeoutMilliseconds = Self.milliseconds(seconds: configuration.readTimeout)
        writeTimeoutMilliseconds = Int(Self.milliseconds(seconds: configuration.writeTimeout))
        let bound = try Socket.listenOnLoopback(port: configuration.port, backlog: 128)
        do {
            wake = try Socket.makeWakePipe()
        } catch {
            Socket.close(bound.descriptor)
            throw error
        }
        listener = bound.descriptor
        port = bound.port
    }

    func start() {
        threads.enter()
        Thread { [self] in
            defer { threads.leave() }
            acceptLoop()
        }.start()
    }

    /// Stops accepting, ends every connection, waits for every thread, closes everything.
    /// Safe to call more than once and from several threads; every call returns after the end.
    func stop() {
        let isFirst = connections.withLock { table in
            guard !table.isStopping else { return false }
            table.isStopping = true
            // Under the lock a connection's thread takes its descriptor out before closing it:
            // every number here is still this server's. Shut down after the lock, a number could
            // already be closed and given to another socket of the process.
            for descriptor in table.open { Socket.shutdownBoth(descriptor) }
            return true
        }
        if isFirst {
            routes.holds.close()
            Socket.wake(wake.write)
        }
        threads.wait()
        let closeNow = connections.withLock { table in
            defer { table.isStopped = true }
            return !table.isStopped
        }
        if closeNow {
            Socket.close(listener)
            Socket.close(wake.read)
            Socket.close(wake.write)
            routes.storage.close()
        }
    }

    /// How many connections are being served now.
    var openConnectionCount: Int {
        connections.withLock { $0.open.count }
    }

    /// Returns once no connection is being served (at once when none is).
    func untilNoConnection() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = connections.withLock { table in
                if table.open.isEmpty { return true }
                table.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    // MARK: Accepting

    private func acceptLoop() {
        while true {
            let readiness: Socket.Readiness
            do {
                readiness = try Socket.waitReadable(listener, wake: wake.read, timeoutMilliseconds: -1)
            } catch {
                return
            }
            switch readiness {
            case .woken: return
            case .timedOut: continue
            case .ready: break
            }
            do {
                guard let descriptor = try Socket.accept(listener) else { continue }
                admit(descriptor)
            } catch {
                // Out of descriptors or another passing failure: wait a little before trying
                // again rather than spin, unless the server is stopping.
                if (try? Socket.waitReadable(wake.read, timeoutMilliseconds: 100)) == .ready { return }
            }
        }
    }

    private func admit(_ descriptor: Int32) {
        enum Admission { case serve, busy, stopping }
        let admission: Admission = connections.withLock { table in
            if table.isStopping { return .stopping }
            if table.open.count >= maxConnections { return .busy }
            table.open.insert(descriptor)
            return .serve
        }
        switch admission {
        case .serve:
            threads.enter()
            Thread { [self] in
                defer { threads.leave() }
                serve(descriptor)
            }.start()
        case .busy:
            try? Socket.setSendTimeout(descriptor, milliseconds: writeTimeoutMilliseconds)
            let busy = HTTPResponse.problem(
                503, code: "too_many_connections",
                message: "the server serves at most \(maxConnections) connections at once",
                headers: [.init(name: WireHeader.retryAfter, value: "1")])
            try? Socket.write(descriptor, busy.serialized(keepAlive: false))
            Socket.close(descriptor)
        case .stopping:
            Socket.close(descriptor)
        }
    }

    // MARK: Serving one connection

    private enum Ending {
        /// Answered with `Connection: close`, or the peer asked for it: linger, then close.
        case closeAfterAnswer
        /// Drop at once: the peer left, a read failed, or a fault asked for it.
        case drop
    }

    private func serve(_ descriptor: Int32) {
        let ending = serveRequests(descriptor)
        if ending == .closeAfterAnswer { linger(descriptor) }
        let waiters = connections.withLock { table -> [CheckedContinuation<Void, Never>] in
            table.open.remove(descriptor)
            guard table.open.isEmpty else { return [] }
            defer { table.idleWaiters = [] }
            return table.idleWaiters
        }
        Socket.close(descriptor)
        waiters.forEach { $0.resume() }
    }

    private func serveRequests(_ descriptor: Int32) -> Ending {
        do {
            try Socket.setSendTimeout(descriptor, milliseconds: writeTimeoutMilliseconds)
        } catch {
            return .drop
        }
        var buffer: [UInt8] = []
        while true {
            let request: HTTPRequest
            switch readRequest(descriptor, &buffer) {
            case .request(let next):
                request = next
            case .answerAndClose(let response):
                try? Socket.write(descriptor, response.serialized(keepAlive: false))
                return .closeAfterAnswer
            case .drop:
                return .drop
            }
            let reply = routes.reply(to: request)
            defer { for key in reply.releasesKeys { routes.holds.releaseCopies(key: key) } }
            guard let response = reply.response else { return .drop }
            if reply.cutsBody {
                // The head and half the body, then the end: a response the network cut off.
                let bytes = response.serialized(keepAlive: false)
                try? Socket.write(descriptor, Array(bytes.prefix(bytes.count - (response.body.count + 1) / 2)))
                return .closeAfterAnswer
            }
            let keepAlive = request.wantsKeepAlive && !connections.withLock { $0.isStopping }
            do {
                try Socket.write(descriptor, response.serialized(keepAlive: keepAlive))
            } catch {
                return .drop
            }
            if !keepAlive { return .closeAfterAnswer }
        }
    }

    private enum ReadOutcome {
        case request(HTTPRequest)
        case answerAndClose(HTTPResponse)
        case drop
    }

    /// Reads until `buffer` holds a whole request, within the read timeout.
    private func readRequest(_ descriptor: Int32, _ buffer: inout [UInt8]) -> ReadOutcome {
        let deadline = ContinuousClock.now + .milliseconds(Int(readTimeoutMilliseconds))
        while true {
            switch RequestFramer.frame(buffer, limits: limits) {
            case .request(let request, let consumed):
                buffer.removeFirst(consumed)
                return .request(request)
            case .reject(let response):
                return .answerAndClose(response)
            case .needMore:
                break
            }
            let remaining = ContinuousClock.now.duration(to: deadline)
            let waited: Socket.Readiness
            do {
                waited = remaining <= .zero
                    ? .timedOut
                    : try Socket.waitReadable(descriptor, timeoutMilliseconds: milliseconds(remaining))
            } catch {
                return .drop
            }
            guard waited == .ready else {
                // An idle connection just ends; a request cut off mid-way is told why.
                if buffer.isEmpty { return .drop }
                return .answerAndClose(.problem(
                    408, code: "request_timeout",
                    message: "the request did not arrive within \(readTimeoutMilliseconds) ms"))
            }
            guard let chunk = try? Socket.read(descriptor, capacity: 64 << 10), !chunk.isEmpty else { return .drop }
            buffer += chunk
        }
    }

    /// Before closing after an answer, reads and discards what the peer still sends (for at
    /// most the read timeout), so that closing with unread bytes does not reset the connection
    /// and destroy the answer before the peer reads it.
    private func linger(_ descriptor: Int32) {
        _ = shutdown(descriptor, Int32(SHUT_WR))
        let deadline = ContinuousClock.now + .milliseconds(Int(readTimeoutMilliseconds))
        var discarded = 0
        let most = limits.maxBodyBytes.addingReportingOverflow(limits.maxHeaderBytes)
        while discarded < (most.overflow ? Int.max : most.partialValue) {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero,
                (try? Socket.waitReadable(descriptor, timeoutMilliseconds: milliseconds(remaining))) == .ready,
                let chunk = try? Socket.read(descriptor, capacity: 64 << 10), !chunk.isEmpty
            else { return }
            discarded += chunk.count
        }
    }

    /// A timeout in whole milliseconds for `poll`, rounded up, at least 1 and at most
    /// `Int32.max` (24.8 days): a longer one waits that long, never traps on the conversion.
    static func milliseconds(seconds: TimeInterval) -> Int32 {
        let milliseconds = (seconds * 1000).rounded(.up)
        guard milliseconds >= 1 else { return 1 }
        guard milliseconds < Double(Int32.max) else { return .max }
        return Int32(milliseconds)
    }

    private func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
    }
}
