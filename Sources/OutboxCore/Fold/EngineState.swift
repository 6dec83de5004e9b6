package import Foundation

/// The engine-level facts folded from engine events: whether the worker is paused and why, and
/// which engine last opened the journal.
package struct EngineState: Sendable, Equatable {
    /// The worker was paused by a 401 and the session has not been refreshed since.
    package var isPaused: Bool = false
    /// The error code that paused it.
    package var pauseReason: String?
    /// When it paused.
    package var pausedAt: Date?
    /// The operation whose attempt was answered 401.
    package var pausedBy: OperationID?
    /// The last `journalOpened` event.
    package var lastOpened: JournalOpened?
    /// How many times the journal was opened.
    package var openCount: Int = 0
    /// How many compactions ran, and the seq the last one reached.
    package var compactionCount: Int = 0
    package var compactedThrough: JournalSequence?
    /// Who the worker last found signed in, and since when: recorded once per change.
    package var session: SessionObservation = .signedIn
    package var sessionSince: Date?
    /// Whether a route to the server is seen, and the connected clock.
    package var route = Route()
    /// The installation the journal's writes belong to: the first the app named at an open, or
    /// the last that adopted them (``InstallationAdopted``).
    package var installation: String?
    /// The installation the journal was last opened on, when the app named one.
    package var openedOn: String?

    /// What an opening on `installation` records of it: the journal is open there, and its
    /// writes belong there unless an earlier opening named where they do. Applying it again
    /// changes nothing (an engine that has not yet recorded its opening judges by it).
    package mutating func open(on installation: String?) {
        openedOn = installation
        if self.installation == nil { self.installation = installation }
    }

    /// The installation the journal was opened on, when it is not the one its writes were made
    /// on (a journal restored from a backup onto another device): the worker sends nothing
    /// until the app revalidates them.
    package var foreignInstallation: (madeOn: String, openedOn: String)? {
        guard let installation, let openedOn, installation != openedOn else { return nil }
        return (installation, openedOn)
    }

    /// Whether a route to the server is seen, since when, and the seconds one was seen before
    /// that: the connected clock, folded from ``RouteChanged`` events.
    package struct Route: Sendable, Equatable {
        package var seen = false
        package var since: Date?
        /// The seconds a route was seen before ``since``.
        package var connectedSeconds: Double = 0

        package init(seen: Bool = false, since: Date? = nil, connectedSeconds: Double = 0) {
            self.seen = seen
            self.since = since
            self.connectedSeconds = connectedSeconds
        }

        /// The seconds a route was seen, over the journal's life, up to `moment`: a write's
        /// connected age is this now less this when it was made. A moment before ``since`` (a
        /// clock set back) counts nothing more.
        package func connectedClock(at moment: Date) -> Double {
            guard seen, let since else { return connectedSeconds }
            return connectedSeconds + max(0, moment.timeIntervalSince(since))
        }

        /// The route after `change`: seen time is banked when a route is lost.
        package func applying(_ change: RouteChanged) -> Route {
            guard change.seen != seen else { return self }
            return Route(seen: change.seen, since: change.at, connectedSeconds: connectedClock(at: change.at))
        }
    }

    package init() {}

    /// Applies an engine event; operation events leave the state as it is.
    package func applying(_ event: JournalEvent) -> EngineState {
        var next = self
        switch event.body {
        case .sessionPaused(let paused):
            next.isPaused = true
            next.pauseReason = paused.reason
            next.pausedAt = event.recordedAt
            next.pausedBy = paused.triggeredBy
        case .sessionResumed:
            next.isPaused = false
            next.pauseReason = nil
            next.pausedAt = nil
            next.pausedBy = nil
        case .journalOpened(let opened):
            next.lastOpened = opened
            next.openCount += 1
            next.open(on: opened.installation)
        case .installationAdopted(let adopted):
            next.installation = adopted.installation
        case .compacted(let compacted):
            next.compactionCount += 1
            next.compactedThrough = compacted.lastSeq
        case .sessionChanged(let changed):
            next.session = changed.observation
            next.sessionSince = event.recordedAt
        case .routeChanged(let changed):
            next.route = route.applying(changed)
        case .enqueued, .attemptStarted, .attemptFinished, .attemptAbandoned, .withdrawn, .requeued, .discarded,
            .approvalDecided, .superseded, .rebased, .dependencyEnded, .heldOnRollback, .rollbackAcknowledged,
            .recordsWritten, .recordBaseDropped, .deletedOnServer, .pageApplied, .pageRefused, .resnapshotStarted,
            .snapshotPageStaged, .resnapshotFinished, .resnapshotAbandoned, .summaryChecked, .claimMayBeForgotten,
            .attachmentGranted, .segmentLanded, .attachmentCompleted, .attachmentRefused:
            break
        }
        return next
    }
}
