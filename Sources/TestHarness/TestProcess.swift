import CTestProcess

/// What holds of every process that links the harness (the test runner, the benchmarks).
public enum TestProcess {
    /// Whether the process ignores SIGPIPE, as it does from the moment it loads
    /// (`Sources/CTestProcess/test_process.c`): a write whose reader has gone fails with EPIPE.
    public static var ignoresBrokenPipes: Bool { ctestprocess_ignores_broken_pipes() != 0 }
}
