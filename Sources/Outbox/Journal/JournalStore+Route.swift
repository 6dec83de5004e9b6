import Foundation
import OutboxCore

extension JournalStore {
    /// What an open reads before it records itself, in one read transaction.
    struct OpeningFacts {
        /// The route as the journal last recorded it, ended at the last process's last event
        /// when it was seen.
        var route: EngineState.Route
        /// The change an opening records when a route was seen: the last process stopped
        /// watching at its last event (a process ends without saying so), so the connected clock
        /// counts nothing from there to this open.
        var lostRoute: JournalStore.Draft?
        /// The abandonment of every attempt the last process started and never saw end.
        var abandoned: [JournalStore.Draft]
    }

    func openingFacts() throws(OutboxError) -> OpeningFacts {
        let schema = self.schema
        return try read { txn in
            let engine = try schema.engineState(in: txn)
            let abandoned = try schema.interruptedAttempts(in: txn)
            guard engine.route.seen else {
                return OpeningFacts(route: engine.route, lostRoute: nil, abandoned: abandoned)
            }
            var lastAt = engine.route.since ?? Date.distantPast
            try txn.scan(schema.events, reverse: true) { entry in
                if let event = try? schema.decode(Array(entry.valueBytes), seq: try entry.key()) {
                    lastAt = max(lastAt, event.recordedAt)
                    return .stop
                }
                return .next
            }
            let change = RouteChanged(seen: false, at: lastAt)
            return OpeningFacts(route: engine.route.applying(change), lostRoute: JournalStore.Draft(operationID: nil, body: .routeChanged(change)),
                                abandoned: abandoned)
        }
    }
}
