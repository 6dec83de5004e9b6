import Foundation
import OutboxCore
import Synchronization

/// Whether a route to the server is seen, as the engine last recorded it, and the connected
/// clock: the seconds a route was seen over the journal's life (``EngineState/Route``).
///
/// Every request's result is shown to it; it drafts a `routeChanged` event only when whether a
/// route is seen changes (any HTTP response is a route, a request that got none is not; a
/// request the app's expiry cancelled says nothing), so a day of requests costs a few records.
/// Its memory moves with the draft, so two results at once draft one change.
final class RouteWatch: Sendable {
    private let route: Mutex<EngineState.Route>

    init(_ route: EngineState.Route) {
        self.route = Mutex(route)
    }

    /// The event to record when a request that `responded` (or not) at `moment` changes
    /// whether a route is seen; `nil` when it does not.
    func observe(responded: Bool, at moment: Date) -> JournalStore.Draft? {
        route.withLock { route in
            guard route.seen != responded else { return nil }
            let change = RouteChanged(seen: responded, at: moment)
            route = route.applying(change)
            return JournalStore.Draft(operationID: nil, body: .routeChanged(change))
        }
    }

    /// Records a change no outcome carries (a feed request's result, the end of a budgeted drain)
    /// on its own, with one flush, not two: a crash may undo it, and the next open ends a route
    /// the last process saw anyway. A failure is logged: the route is a measure, not a fact a
    /// member relies on.
    func recordAlone(responded: Bool, at moment: Date, writer: JournalWriter, log: EngineLog, failure: String) async {
        guard let draft = observe(responded: responded, at: moment) else { return }
        do {
            _ = try await writer.append([draft], flush: false)
        } catch {
            log.problem(.factNotRecorded, failure, error: error)
        }
    }

    /// What a transport result says of the route; `nil` for a request cancelled by the app's end
    /// of background time, which says nothing.
    static func responded(_ result: TransportResult) -> Bool? {
        switch result {
        case .response: true
        case .noResponse(.cancelled): nil
        case .noResponse: false
        }
    }

    /// The connected clock at `moment`.
    func connectedClock(at moment: Date) -> Double {
        route.withLock { $0.connectedClock(at: moment) }
    }

    var isSeen: Bool { route.withLock { $0.seen } }
}
