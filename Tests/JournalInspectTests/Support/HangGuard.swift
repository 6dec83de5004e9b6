import Testing

extension Trait where Self == TimeLimitTrait {
    /// The time limit of every suite here: a guard against a hang, never a timing. Swift Testing
    /// runs every test of the package at once, so on a loaded 2-core machine a test's wall time
    /// is mostly its wait for a core: in one whole `swift test` run at load average 9 to 16,
    /// tests that take a second alone ended 45 to 100 s after they started, and two suites of
    /// another target with a 1-minute limit failed on it. Ten minutes is far past any such wait
    /// and well inside the whole run's budget.
    static var hangGuard: Self { .timeLimit(.minutes(10)) }
}
