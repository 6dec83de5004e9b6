import Foundation
import OutboxCore

extension JournalStore {
    /// The route as the journal last recorded it, and, when a route was seen, the change an
    /// opening records: the last process stopped watching at its last event (a process ends
    /// without saying so), so the connected clock counts nothing from there to this open.
    func routeAtOpening() throws(OutboxError) -> (route: EngineState.Route, lost: JournalStore.Draft?) {
        let schema = self.schema
        return try read { txn in
            let route = try schema.engineState(in: txn).route
            guard route.seen else { return (route, nil) }
            var lastAt = route.since ?? Date.distantPast
            try txn.scan(schema.events, reverse: true) { entry in
                if let event = try? schema.decode(Array(entry.valueBytes), seq: try entry.key()) {
                    lastAt = max(lastAt, event.recordedAt)
                    return .stop
                }
                return .next
            }
            let change = RouteChanged(seen: false, at: lastAt)
            return (route.applying(change), JournalStore.Draft(operationID: nil, body: .routeChanged(change)))
        }
    }
}
