import OutboxCore

extension Outbox {
    /// What an app tells the engine happened (``Outbox/wake(_:)``): the reasons of
    /// ``WakeReason`` that are the app's to give. The engine's own (a timer, a drain, an enqueue, an
    /// inline save, a retry, a refreshed session, a pull) it gives itself.
    public enum AppWake: String, Sendable, CaseIterable {
        /// The app started: a sweep of everything due.
        case appLaunch
        /// The device regained a network path.
        case connectivityRegained
        /// The app came to the foreground.
        case foreground
        /// The device's clock was changed (iOS: `significantTimeChangeNotification`): the timer is
        /// armed again from the new time.
        case clockChanged

        /// The reason the attempts it starts record.
        package var reason: WakeReason {
            switch self {
            case .appLaunch: .appLaunch
            case .connectivityRegained: .connectivityRegained
            case .foreground: .foreground
            case .clockChanged: .clockChanged
            }
        }
    }
}
