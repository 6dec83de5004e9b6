import Foundation
import Synchronization

/// This process's end of a pipe a child writes to (its standard output or error); closed when
/// the last reference goes.
public final class ReadEnd: Sendable {
    /// -1 once closed.
    private let open: Atomic<Int32>

    /// The descriptor, -1 once closed.
    public var descriptor: Int32 { open.load(ordering: .acquiring) }

    init(_ descriptor: Int32) {
        open = Atomic(descriptor)
    }

    deinit {
        close()
    }

    /// Closes this end: the child's next write to the pipe meets a reader that has gone
    /// (SIGPIPE, or EPIPE where it ignores the signal). Closing twice does nothing; a read
    /// after it reads the end. Not while another thread reads this end.
    public func close() {
        let descriptor = open.exchange(-1, ordering: .acquiringAndReleasing)
        if descriptor >= 0 { _ = Foundation.close(descriptor) }
    }

    /// The next bytes written, waiting for some; empty once every writer has closed the pipe
    /// (the child and whatever it passed the pipe on to have ended).
    public func read() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 64 << 10)
        let descriptor = descriptor
        guard descriptor >= 0 else { return [] }
        while true {
            let count = bytes.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count >= 0 { return Array(bytes.prefix(count)) }
            // Another error on a pipe of ours (EBADF, EFAULT) would be a bug here: read it as the end.
            guard errno == EINTR else { return [] }
        }
    }

    /// Everything written until every writer has closed the pipe.
    public func readToEnd() -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let chunk = read()
            if chunk.isEmpty { return all }
            all += chunk
        }
    }

    /// Reads the pipe to its end on a thread of its own, so that the child never blocks on a
    /// full pipe while this process waits on something else (its other stream, its end).
    public func collect() -> CollectedOutput {
        CollectedOutput(self)
    }
}

/// What a child wrote to one pipe, read to the end on a thread of its own.
public final class CollectedOutput: Sendable {
    private let bytes = Mutex<[UInt8]?>(nil)
    private let done = DispatchSemaphore(value: 0)

    fileprivate init(_ source: ReadEnd) {
        // A thread, not a Dispatch queue: the read blocks for as long as the child runs, and a
        // few dozen children at once must not take every worker of a global queue.
        Thread.detachNewThread { [self] in
            let read = source.readToEnd()
            bytes.withLock { $0 = read }
            done.signal()
        }
    }

    /// Everything written, once every writer has closed the pipe; waits until then.
    public var data: [UInt8] {
        done.wait()
        done.signal()
        return bytes.withLock { $0 ?? [] }
    }

    /// ``data`` as UTF-8 text.
    public var text: String {
        String(decoding: data, as: UTF8.self)
    }
}

/// Lines read from a pipe as the child prints them.
public struct LineReader {
    public let source: ReadEnd
    private var buffer: [UInt8] = []

    public init(_ source: ReadEnd) {
        self.source = source
    }

    /// The next whole line (without its newline), waiting for it; `nil` once the pipe has ended.
    /// A last line without a newline is left in ``rest``.
    public mutating func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let chunk = source.read()
            if chunk.isEmpty { return nil }
            buffer += chunk
        }
    }

    /// What was read but is not a whole line.
    public var rest: String {
        String(decoding: buffer, as: UTF8.self)
    }
}

/// This process's end of the pipe a child reads as its standard input.
public final class WriteEnd: Sendable {
    /// -1 once closed.
    private let descriptor: Mutex<Int32>

    init(_ descriptor: Int32) {
        self.descriptor = Mutex(descriptor)
    }

    deinit {
        close()
    }

    /// The pipe is closed, or the child stopped reading (it ended).
    public struct Closed: Error, CustomStringConvertible {
        public var description: String { "the child's standard input is closed" }
    }

    /// Writes all of `bytes`, waiting while the pipe is full.
    /// - Throws: ``Closed`` when this end was closed or the child's end is (never SIGPIPE).
    public func write(_ bytes: [UInt8]) throws {
        try descriptor.withLock { descriptor in
            guard descriptor >= 0 else { throw Closed() }
            var written = 0
            while written < bytes.count {
                let count = withoutBrokenPipeSignal {
                    bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress! + written, $0.count - written) }
                }
                if count >= 0 {
                    written += count
                } else if errno != EINTR {
                    throw Closed()
                }
            }
        }
    }

    public func write(_ text: String) throws {
        try write(Array(text.utf8))
    }

    /// Closes this end: the child reads the end of its input. Closing twice does nothing.
    public func close() {
        descriptor.withLock { descriptor in
            if descriptor >= 0 { _ = Foundation.close(descriptor) }
            descriptor = -1
        }
    }
}

/// Runs `write`, which may meet a pipe whose reader has gone, without the SIGPIPE that would
/// end this process: on Linux the signal is blocked for this thread meanwhile and, if the write
/// raised it, taken back before it is unblocked; Darwin's pipes of ours are made with
/// F_SETNOSIGPIPE (see ``closeOnExecPipe()``).
private func withoutBrokenPipeSignal(_ write: () -> Int) -> Int {
    #if canImport(Glibc)
    var pipeSignal = sigset_t()
    sigemptyset(&pipeSignal)
    sigaddset(&pipeSignal, SIGPIPE)
    var previous = sigset_t()
    pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
    let count = write()
    let failure = errno
    if count < 0, failure == EPIPE {
        var zero = timespec(tv_sec: 0, tv_nsec: 0)
        while sigtimedwait(&pipeSignal, nil, &zero) == -1, errno == EINTR {}
    }
    pthread_sigmask(SIG_SETMASK, &previous, nil)
    errno = failure
    return count
    #else
    return write()
    #endif
}
