public import Outbox
import Synchronization

/// A session a test (or an app's preview) can sign in and out at will.
///
/// ```swift
/// let session = SwitchableSession(account: "member-42")
/// session.signOut()              // the worker halts before its next row
/// session.signIn("member-42")
/// ```
public final class SwitchableSession: OutboxSession {
    private let account: Mutex<String?>

    public init(account: String?) {
        self.account = Mutex(account)
    }

    public func signIn(_ account: String) {
        self.account.withLock { $0 = account }
    }

    public func signOut() {
        account.withLock { $0 = nil }
    }

    public func currentAccount() async -> String? {
        account.withLock { $0 }
    }
}
