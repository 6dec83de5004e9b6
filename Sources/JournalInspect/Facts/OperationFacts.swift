package import Foundation
package import Outbox
package import OutboxAudit

/// Everything the tool says about one operation, read once: its timeline, and what around it in
/// the journal explains it (the app restarting, a compaction, what a queued row waits for). The
/// timeline, the verdict, `export` and `report` are all written from it, so they agree.
package struct OperationFacts: Sendable {
    package var timeline: OperationTimeline
    /// For a compacted operation: the `compacted` event that removed its events and payload.
    package var compaction: JournalEvent?
    /// Each time the app opened the journal between the operation's first and last event.
    package var restarts: [Restart]
    package var engine: EngineState
    /// For a queued row: what it waits for.
    package var waiting: Waiting?
    /// The journal's last event: the last moment the app is known to have run.
    package var journalLastEvent: JournalEvent?
    /// The moment the output reads as now (`--now`, or the clock's); `nil` leaves out what
    /// depends on it.
    package var now: Date?

    package init(timeline: OperationTimeline, compaction: JournalEvent? = nil, restarts: [Restart] = [], engine: EngineState,
                waiting: Waiting? = nil, journalLastEvent: JournalEvent? = nil, now: Date? = nil) {
        self.timeline = timeline
        self.compaction = compaction
        self.restarts = restarts
        self.engine = engine
        self.waiting = waiting
        self.journalLastEvent = journalLastEvent
        self.now = now
    }

    package var id: OperationID { timeline.id }

    /// The state the journal holds, or the one folded from the events that read.
    package var state: OperationState? {
        timeline.state ?? (try? Fold.replay(timeline.events))
    }

    /// The operation's events with the journal's events that explain them (restarts, the
    /// compaction), in journal order.
    package var events: [JournalEvent] {
        (timeline.events + restarts.map(\.opened) + (compaction.map { [$0] } ?? [])).sorted { $0.seq < $1.seq }
    }
}

/// The app opening the journal again while a write waited: how long it had not run before.
package struct Restart: Sendable {
    /// The `journalOpened` event.
    package var opened: JournalEvent
    /// The journal's last event before it: the app's last sign of life before it stopped.
    package var lastBefore: JournalEvent?

    package init(opened: JournalEvent, lastBefore: JournalEvent?) {
        self.opened = opened
        self.lastBefore = lastBefore
    }

    /// Whether the device itself restarted (a new boot); `nil` when the records cannot tell.
    package var deviceRestarted: Bool? {
        guard let before = lastBefore?.uptime, let after = opened.uptime else { return nil }
        return before.bootID != after.bootID
    }

    /// At most how long the app was not running: from its last record to this opening. An upper
    /// bound: the app may have run a while without writing anything.
    package var downtime: Elapsed? {
        lastBefore.map { Elapsed.between($0, opened) }
    }

    /// `the app started again after the device restarted; it had not run for at most 3 h 1 min (since seq 9)`.
    package var text: String {
        var text = "the app started again"
        switch deviceRestarted {
        case true?: text += " after the device restarted"
        case false?: text += " (the device kept running)"
        case nil: break
        }
        if let lastBefore, let downtime {
            if let seconds = downtime.seconds {
                text += "; it had not run for at most \(Moments.duration(seconds)) (since seq \(lastBefore.seq)"
                    + (downtime == .measured(seconds) ? ")" : ", by the device clock)")
            } else {
                text += "; how long it had not run is unknown: the device clock reads earlier than at seq \(lastBefore.seq)"
            }
        }
        return text
    }
}

/// What a queued row waits for, with the write it waits on as it stands.
package struct Waiting: Sendable {
    package var on: OperationSnapshot.WaitingOn
    /// The write it waits behind or depends on; for a paused worker, the write the 401 met.
    package var other: OperationState?

    package init(on: OperationSnapshot.WaitingOn, other: OperationState? = nil) {
        self.on = on
        self.other = other
    }
}
