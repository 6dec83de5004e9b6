import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The reading child never outlives the tool that started it.
///
/// A support person's terminal closing, a service manager's SIGKILL or a crash ends the parent
/// without a word to the child; a follower left behind would read on for ever, re-parented to
/// init. Two ways make sure it ends:
/// - everywhere, a pipe whose only writer is the parent (its end is close-on-exec, so no other
///   process holds it): the child reads its end on a thread of its own, and the end of the pipe
///   is the end of the parent, whatever the main thread is doing;
/// - on Linux besides, the parent-death signal (`PR_SET_PDEATHSIG`, SIGKILL), checked against a
///   parent that died before it was set.
enum Lifeline {
    /// The environment variable that gives the child its end of the pipe: `<fd>:<parent pid>`.
    static let variable = "JOURNAL_INSPECT_LIFELINE"

    /// The parent's half: the pipe made before the child is spawned.
    struct Pipe {
        /// The child's end, inherited across the spawn; closed in the parent once it ran.
        let childEnd: Int32
        /// The parent's end, close-on-exec: it closes when the parent ends, however it ends.
        let parentEnd: Int32

        /// The value of ``Lifeline/variable`` for the child.
        var environmentValue: String { "\(childEnd):\(getpid())" }

        /// Closes the child's end in the parent, once the child holds its own copy.
        func closeChildEnd() {
            close(childEnd)
        }
    }

    /// Makes the pipe; `nil` when no pipe can be made (the child then runs without one, as the
    /// tool did before it had one, and Linux's parent-death signal still holds).
    static func make() -> Pipe? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        // Started with a standard stream closed, the pipe may take its number: its ends move
        // to 3 or above, so that no message of the tool's goes into the pipe.
        for index in ends.indices where ends[index] < 3 {
            let moved = fcntl(ends[index], F_DUPFD, 3)
            guard moved >= 0 else {
                ends.forEach { close($0) }
                return nil
            }
            close(ends[index])
            ends[index] = moved
        }
        // Only the child's end crosses the spawn. The tool's main thread is its only spawner, so
        // no other spawn can carry the read end away between these calls.
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        return Pipe(childEnd: ends[0], parentEnd: ends[1])
    }

    /// The child's half: ends this process as soon as the parent is gone.
    ///
    /// - Parameter parentDeathSignal: `false` leaves Linux's signal unset, so a test can see
    ///   the pipe alone end the child.
    static func hold(parentDeathSignal: Bool = true) {
        guard let value = getenv(variable).map({ String(cString: $0) }) else { return }
        let parts = value.split(separator: ":").compactMap { Int32($0) }
        guard parts.count == 2 else { return }
        let (descriptor, parent) = (parts[0], parts[1])
        #if os(Linux)
        if parentDeathSignal { setParentDeathSignal(SIGKILL) }
        #endif
        // The parent may have ended before the signal was set: then this process already
        // belongs to another.
        if getppid() != parent { _exit(orphaned) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while true {
                let count = read(descriptor, &byte, 1)
                if count < 0 && errno == EINTR { continue }
                // Nothing is ever written: a read ends only when the parent's end closes.
                _exit(orphaned)
            }
        }
    }

    /// The status of a child that ended because its parent did: nobody waits for it.
    static let orphaned: Int32 = 128 + SIGHUP

    #if os(Linux)
    /// `prctl(PR_SET_PDEATHSIG, signal)`. `prctl` is variadic, which Swift does not import:
    /// it is called through its symbol with its arguments spelled out.
    private static func setParentDeathSignal(_ signal: Int32) {
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        guard let symbol = dlsym(nil, "prctl") else { return }
        let prctl = unsafeBitCast(symbol, to: Prctl.self)
        let setParentDeathSignal: Int32 = 1  // PR_SET_PDEATHSIG, <linux/prctl.h>
        _ = prctl(setParentDeathSignal, UInt(signal), 0, 0, 0)
    }
    #endif
}
