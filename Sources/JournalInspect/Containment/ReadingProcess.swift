import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The child process a command reads the journal in, so that a fault reading a damaged file
/// ends the child, not the tool.
///
/// LMDB reads through a memory map and trusts the file: a length or page reference bent by a
/// flipped bit can send a read past the end of the file, and the kernel answers with `SIGBUS` or
/// `SIGSEGV`, which nothing inside the process can catch. The open-time check
/// (`LMDBDataFile.check`) reads the file's outline, not every reference in it. So `main` starts
/// its own executable again with ``marker`` in the environment and standard input, output and
/// error inherited (output streams as it always did), and waits. A child that dies of a fault is
/// reported as damage, exit 65; the tool itself never dies of one.
enum ReadingProcess {
    /// The environment variable that tells the executable it is the reading child. Internal to
    /// the tool: set only by the parent.
    static let marker = "JOURNAL_INSPECT_READING_PROCESS"

    /// Whether this process is the reading child.
    static var isChild: Bool { getenv(marker) != nil }

    /// How the child ended.
    enum End: Equatable {
        case exited(Int32)
        case signaled(Int32)
    }

    /// What the tool does once the child has ended.
    enum Outcome: Equatable {
        /// Exit with this status, after writing `message` (if any) to standard error.
        case exit(Int32, message: String?)
        /// End as the child did, of the same signal: an interruption from outside (Ctrl-C, a
        /// closed pipe) is passed on the way shells expect it.
        case raise(Int32)
    }

    /// Signals that come from outside the child and mean "stop": passed on, not reported.
    static let interruptions: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGPIPE]
    /// Signals a read of a damaged mapped file dies of: a reference past the file's end
    /// (SIGBUS, SIGSEGV), or LMDB's own check of a page finding it is not what its reference
    /// says (its assertions are compiled in Debian's liblmdb: it prints the check and aborts).
    static let faults: [Int32] = [SIGBUS, SIGSEGV, SIGABRT]

    /// The outcome of the child's end, for the journal at `journal`.
    static func outcome(of end: End, journal: String) -> Outcome {
        switch end {
        case .exited(let status):
            return .exit(status, message: nil)
        case .signaled(let signal) where interruptions.contains(signal):
            return .raise(signal)
        case .signaled(let signal) where faults.contains(signal):
            return .exit(ExitCode.damaged.rawValue, message: faultMessage(signal: signal, journal: journal))
        case .signaled(SIGKILL):
            return .exit(ExitCode.internalError.rawValue, message:
                "journal-inspect: error: the process reading \(journal) was killed (SIGKILL), by someone or by the system "
                    + "when memory ran out; nothing more was read\n")
        case .signaled(let signal):
            return .exit(ExitCode.internalError.rawValue, message:
                "journal-inspect: error: reading \(journal) stopped on a signal (\(name(of: signal))): journal-inspect met something "
                    + "it did not expect, perhaps damage it does not foresee. Run 'journal-inspect \(journal) verify', and send "
                    + "engineering a copy of the journal's directory with this command line\n")
        }
    }

    static func faultMessage(signal: Int32, journal: String) -> String {
        let why = signal == SIGABRT
            ? "LMDB stopped on a check of its own (SIGABRT): a page inside the file is not what the reference to it says"
            : "reading it failed at the operating-system level (\(name(of: signal))): a length or page reference inside the "
                + "file points past its end, or the disk could not return a page"
        return "journal-inspect: error: \(journal): the journal is damaged: \(why). The checks made before reading see the "
            + "file's outline, not every reference in it.\n"
            + "journal-inspect: what was printed before this still stands. 'journal-inspect \(journal) verify' shows which "
            + "records still read. " + OpenFailure.damageAdvice + ".\n"
    }

    static func name(of signal: Int32) -> String {
        switch signal {
        case SIGBUS: "SIGBUS"
        case SIGSEGV: "SIGSEGV"
        case SIGILL: "SIGILL"
        case SIGTRAP: "SIGTRAP"
        case SIGABRT: "SIGABRT"
        case SIGFPE: "SIGFPE"
        case SIGKILL: "SIGKILL"
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        case SIGPIPE: "SIGPIPE"
        case SIGXFSZ: "SIGXFSZ"
        case SIGXCPU: "SIGXCPU"
        case SIGSYS: "SIGSYS"
        default: "signal \(signal)"
        }
    }

    // MARK: The parent

    /// Runs `arguments` in a reading child and answers the tool's exit status; `nil` when the
    /// child could not be started (the caller then reads in this process).
    static func run(_ arguments: [String], journal: String) -> Int32? {
        guard let executable = executablePath() else { return nil }
        let forwarded = Forwarding.install()
        defer { Forwarding.restore(forwarded) }
        // Held by this process until it ends, however it ends: the child's sign to end too.
        let lifeline = Lifeline.make()
        let spawned = spawn(executable: executable, arguments: arguments, childMask: forwarded.runningMask, lifeline: lifeline)
        lifeline?.closeChildEnd()
        guard let child = spawned else {
            if let lifeline { close(lifeline.parentEnd) }
            return nil
        }
        Forwarding.child.store(child, ordering: .sequentiallyConsistent)
        Forwarding.unblock(forwarded)
        let waited = wait(for: child)
        Forwarding.child.store(0, ordering: .sequentiallyConsistent)
        guard let end = waited else {
            // Never leave a reader running that nobody waits for.
            let reason = String(cString: strerror(errno))
            kill(child, SIGKILL)
            FileDescriptorOutput.standardError.write(
                "journal-inspect: error: lost track of the process reading \(journal) (\(reason)); it was stopped\n")
            return ExitCode.internalError.rawValue
        }
        switch outcome(of: end, journal: journal) {
        case .exit(let status, let message):
            if let message { FileDescriptorOutput.standardError.write(message) }
            return status
        case .raise(let number):
            Forwarding.restore(forwarded)
            Forwarding.endOf(number)
            // Still here: this process ignores the signal. Exit as shells report it.
            return 128 + number
        }
    }

    /// This executable: `/proc/self/exe` where there is one (it survives the file being moved),
    /// else what Foundation knows of it.
    private static func executablePath() -> String? {
        if access("/proc/self/exe", X_OK) == 0 { return "/proc/self/exe" }
        return Bundle.main.executablePath
    }

    /// Starts the child: the same arguments, the same standard streams, the environment with
    /// ``marker`` and the ``Lifeline`` added and Swift's crash backtracer off (the parent reports
    /// the fault itself).
    private static func spawn(executable: String, arguments: [String], childMask: sigset_t, lifeline: Lifeline.Pipe?) -> pid_t? {
        var environment = ProcessInfo.processInfo.environment
        environment[marker] = "1"
        environment[Lifeline.variable] = lifeline?.environmentValue
        if environment["SWIFT_BACKTRACE"] == nil { environment["SWIFT_BACKTRACE"] = "enable=no" }
        let argv = [CommandLine.arguments.first ?? "journal-inspect"] + arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }
        return withCStrings(argv) { argvPointers in
            withCStrings(envp) { envpPointers in
                var attributes = SpawnAttributes()
                defer { attributes.destroy() }
                var mask = childMask
                attributes.setSignalMask(&mask)
                var pid: pid_t = 0
                let result = attributes.spawn(&pid, executable, argvPointers, envpPointers)
                return result == 0 ? pid : nil
            }
        }
    }

    /// Waits for the child to end, through interruptions; `nil` if it cannot be waited for.
    private static func wait(for child: pid_t) -> End? {
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 {
            guard errno == EINTR else { return nil }
        }
        // The POSIX encoding, the same on Linux and Darwin: the low 7 bits are the signal that
        // ended the process (0 when it exited), the next 8 its exit status.
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
    }

    /// `strings` as a NULL-terminated array of C strings, for the duration of `body`.
    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return body(pointers)
    }
}

/// The parent passes Ctrl-C, SIGTERM and SIGHUP on to the child (a follower ends cleanly on
/// them), instead of dying while the child reads on.
enum Forwarding {
    /// The child's pid while it runs, 0 otherwise: all a signal handler may read.
    static let child = Atomic<Int32>(0)

    struct Installed {
        var originalMask = sigset_t()
        /// The original mask without the forwarded signals: a launcher (a test runner, a
        /// service manager) may start the tool with them blocked, and then neither Ctrl-C nor
        /// SIGTERM would reach the parent or the child. Both run with this mask.
        var runningMask = sigset_t()
        var signals: [Int32] = []
        var previous: [Int32: sigaction] = [:]
    }

    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// Blocks the forwarded signals (so none arrives before the child's pid is known) and
    /// installs the forwarding handler for each one this process does not ignore.
    static func install() -> Installed {
        var installed = Installed()
        // A process started with SIGCHLD ignored has its children reaped for it, and could not
        // wait for the reader: the default makes it wait, and the child starts with it too.
        var childDefault = sigaction()
        sigemptyset(&childDefault.sa_mask)
        setDefault(&childDefault)
        sigaction(SIGCHLD, &childDefault, nil)
        var block = sigset_t()
        sigemptyset(&block)
        for signal in signals { sigaddset(&block, signal) }
        pthread_sigmask(SIG_BLOCK, &block, &installed.originalMask)
        for signal in signals {
            var previous = sigaction()
            sigaction(signal, nil, &previous)
            // A signal this process was started ignoring (nohup) stays ignored, in the child too.
            guard !isIgnored(previous) else { continue }
            var action = sigaction()
            setHandler(&action)
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signal, &action, nil)
            installed.previous[signal] = previous
            installed.signals.append(signal)
        }
        installed.runningMask = installed.originalMask
        for signal in installed.signals { sigdelset(&installed.runningMask, signal) }
        return installed
    }

    /// Lets the forwarded signals in: any that came meanwhile is delivered, and passed on, now.
    static func unblock(_ installed: Installed) {
        var mask = installed.runningMask
        pthread_sigmask(SIG_SETMASK, &mask, nil)
    }

    static func restore(_ installed: Installed) {
        for (signal, previous) in installed.previous {
            var action = previous
            sigaction(signal, &action, nil)
        }
        var mask = installed.originalMask
        pthread_sigmask(SIG_SETMASK, &mask, nil)
    }

    /// The handler: async-signal-safe, it reads an atomic and calls `kill`.
    private static let handler: @convention(c) (Int32) -> Void = { signal in
        let pid = Forwarding.child.load(ordering: .relaxed)
        if pid > 0 { kill(pid, signal) }
    }

    /// Ends this process of `number`, with its default action, as the child ended.
    static func endOf(_ number: Int32) {
        var action = sigaction()
        setDefault(&action)
        sigemptyset(&action.sa_mask)
        sigaction(number, &action, nil)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, number)
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
        raise(number)
    }

    private static func isIgnored(_ action: sigaction) -> Bool {
        #if canImport(Glibc)
        return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
        #else
        return unsafeBitCast(action.__sigaction_u.__sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
        #endif
    }

    private static func setDefault(_ action: inout sigaction) {
        setHandler(&action, SIG_DFL)
    }

    /// The handler field, whose path through the C union differs between Glibc and Darwin.
    static func setHandler(_ action: inout sigaction, _ handler: (@convention(c) (Int32) -> Void)? = handler) {
        #if canImport(Glibc)
        action.__sigaction_handler.sa_handler = handler
        #else
        action.__sigaction_u.__sa_handler = handler
        #endif
    }
}

/// `posix_spawn`'s attributes, whose C type is a struct in Glibc and a pointer on Darwin.
struct SpawnAttributes {
    #if canImport(Glibc)
    private var raw = posix_spawnattr_t()
    #else
    private var raw: posix_spawnattr_t?
    #endif

    init() {
        posix_spawnattr_init(&raw)
    }

    mutating func destroy() {
        posix_spawnattr_destroy(&raw)
    }

    /// The child starts with `mask` as its blocked signals.
    mutating func setSignalMask(_ mask: inout sigset_t) {
        posix_spawnattr_setsigmask(&raw, &mask)
        posix_spawnattr_setflags(&raw, Int16(POSIX_SPAWN_SETSIGMASK))
    }

    mutating func spawn(_ pid: inout pid_t, _ path: String, _ argv: [UnsafeMutablePointer<CChar>?],
                        _ envp: [UnsafeMutablePointer<CChar>?]) -> Int32 {
        posix_spawn(&pid, path, nil, &raw, argv, envp)
    }
}
