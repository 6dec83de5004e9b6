#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `posix_spawn`'s file actions and attributes, whose C types are structs in Glibc and pointers
/// on Darwin, and the calls that differ between the two.
///
/// Glibc declares `pipe2`, `posix_spawn_file_actions_addchdir_np` and
/// `posix_spawn_file_actions_addclosefrom_np` only under `_GNU_SOURCE`, which the Swift module
/// for Glibc does not define; they are looked up by name in the C library instead.
struct SpawnActions {
    #if canImport(Glibc)
    private var actions = posix_spawn_file_actions_t()
    private var attributes = posix_spawnattr_t()
    #else
    private var actions: posix_spawn_file_actions_t?
    private var attributes: posix_spawnattr_t?
    #endif

    init() {
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
    }

    mutating func destroy() {
        posix_spawn_file_actions_destroy(&actions)
        posix_spawnattr_destroy(&attributes)
    }

    /// The child starts with no signal blocked and every signal's default action: an ignored
    /// SIGPIPE or a blocked SIGTERM of the test process is none of the child's business.
    /// On Darwin every descriptor not given to the child by a file action is closed in it.
    mutating func resetSignals() {
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK) | Int32(POSIX_SPAWN_SETSIGDEF)
        #if canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        posix_spawnattr_setflags(&attributes, Int16(flags))
    }

    /// The child's `target` (0, 1 or 2) is `descriptor`.
    mutating func duplicate(_ descriptor: Int32, to target: Int32) -> Int32 {
        posix_spawn_file_actions_adddup2(&actions, descriptor, target)
    }

    /// The child's `target` is `path`, opened with `flags`.
    mutating func open(_ path: String, _ flags: Int32, to target: Int32) -> Int32 {
        posix_spawn_file_actions_addopen(&actions, target, path, flags, 0o644)
    }

    /// The child keeps this process's `descriptor` (0, 1 or 2) as it is.
    mutating func inherit(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
        // Under POSIX_SPAWN_CLOEXEC_DEFAULT even the standard streams are closed unless named.
        return posix_spawn_file_actions_addinherit_np(&actions, descriptor)
        #else
        return 0
        #endif
    }

    /// The child starts in `directory`.
    mutating func changeDirectory(to directory: String) -> Int32 {
        #if canImport(Glibc)
        guard let change = GNUCalls.addChangeDirectory else { return ENOSYS }
        return change(&actions, directory)
        #else
        return posix_spawn_file_actions_addchdir_np(&actions, directory)
        #endif
    }

    /// Every descriptor from 3 up is closed in the child, whether or not it was opened
    /// close-on-exec by whoever opened it (Darwin does this through
    /// POSIX_SPAWN_CLOEXEC_DEFAULT; a Glibc older than 2.34 has no such action, and there only
    /// descriptors opened close-on-exec stay out of the child).
    mutating func closeOthers() -> Int32 {
        #if canImport(Glibc)
        guard let closeFrom = GNUCalls.addCloseFrom else { return 0 }
        return closeFrom(&actions, 3)
        #else
        return 0
        #endif
    }

    mutating func spawn(_ pid: inout pid_t, _ path: String, _ argv: [UnsafeMutablePointer<CChar>?],
                        _ envp: [UnsafeMutablePointer<CChar>?]) -> Int32 {
        posix_spawn(&pid, path, &actions, &attributes, argv, envp)
    }
}

/// A pipe whose both ends are close-on-exec from the start, so that no other thread's spawn
/// can carry them into a child: the child gets its end through a file action's `dup2`, which
/// clears the flag on the copy only.
func closeOnExecPipe() -> (read: Int32, write: Int32)? {
    var ends: [Int32] = [-1, -1]
    #if canImport(Glibc)
    if let pipe2 = GNUCalls.pipe2 {
        return pipe2(&ends, O_CLOEXEC) == 0 ? (ends[0], ends[1]) : nil
    }
    #endif
    // Darwin has no pipe2; there POSIX_SPAWN_CLOEXEC_DEFAULT keeps the ends out of every child
    // started through ``SpawnActions``, whatever the flags say.
    guard pipe(&ends) == 0 else { return nil }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    #if canImport(Darwin)
    // A write to a reader that has gone fails with EPIPE instead of killing this process.
    _ = fcntl(ends[1], F_SETNOSIGPIPE, 1)
    #endif
    return (ends[0], ends[1])
}

#if canImport(Glibc)
/// Glibc's GNU extensions, found by name (see ``SpawnActions``).
private enum GNUCalls {
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    typealias AddChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    static let pipe2: Pipe2? = lookUp("pipe2")
    static let addChangeDirectory: AddChangeDirectory? = lookUp("posix_spawn_file_actions_addchdir_np")
    static let addCloseFrom: AddCloseFrom? = lookUp("posix_spawn_file_actions_addclosefrom_np")

    private static func lookUp<F>(_ name: String) -> F? {
        // A nil handle is RTLD_DEFAULT: the symbol as the process's libraries define it.
        guard let symbol = dlsym(nil, name) else { return nil }
        return unsafeBitCast(symbol, to: F.self)
    }
}
#endif
