import Outbox
import OutboxAudit
import Synchronization

/// Whether a simulated network is up, and whether it healed for good (every request through,
/// no fault): the switch the simulations' networks share.
final class NetworkSignal: Sendable {
    private let state = Mutex((online: true, healed: false))

    var isOnline: Bool { state.withLock { $0.online } }
    var isHealed: Bool { state.withLock { $0.healed } }

    func setOnline(_ online: Bool) {
        state.withLock { $0.online = online }
    }

    /// From now on every request goes through and its answer comes back.
    func heal() {
        state.withLock { $0 = (online: true, healed: true) }
    }

    /// The signal drops, or returns and `outbox` hears of it.
    /// - Returns: whether it is up now.
    @discardableResult
    func flip(waking outbox: Outbox) -> Bool {
        let online = state.withLock { state in
            state.online.toggle()
            return state.online
        }
        if online { outbox.wake(.connectivityRegained) }
        return online
    }
}
