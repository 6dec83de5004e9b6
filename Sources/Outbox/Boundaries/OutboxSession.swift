/// Who is signed in now, asked before every operation the worker sends.
public protocol OutboxSession: Sendable {
    /// The account signed in now. `nil` (signed out) or an account other than the journal's
    /// halts the pass: nothing is ever sent under the wrong identity.
    func currentAccount() async -> String?
}

/// A session that always answers the same account: for apps whose journal lives exactly as
/// long as their sign-in, and for tests.
public struct FixedSession: OutboxSession {
    public let account: String?

    public init(account: String?) {
        self.account = account
    }

    public func currentAccount() async -> String? { account }
}
