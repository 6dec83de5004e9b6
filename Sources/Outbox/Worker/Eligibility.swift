package import Foundation
package import OutboxCore

/// "May this row be sent now?": the one rule, a pure function of facts read in one snapshot.
///
/// The worker's pass, an inline save, `OperationSnapshot.waitingOn`, the Sync tab's "Waits for
/// ..." and `journal-inspect`'s verdict all ask it, so what a member is told a row waits for is
/// what the worker waits for. The checks, in order:
///
/// | facts | answer |
/// |---|---|
/// | the row is not queued | ``Verdict/notQueued`` |
/// | the journal was opened on another installation than its writes were made on | waiting: ``OperationSnapshot.WaitingOn/otherInstallation(madeOn:)`` |
/// | a 401 paused the worker | waiting: ``OperationSnapshot.WaitingOn/sessionPaused(since:)`` |
/// | nobody signed in / another account | waiting: ``OperationSnapshot.WaitingOn/noSession`` / ``OperationSnapshot.WaitingOn/otherAccount`` |
/// | the first dependency not synced is neither discarded nor withdrawn (or unknown) | waiting: ``OperationSnapshot.WaitingOn/dependency(_:_:)`` |
/// | another row heads its lane | waiting: ``OperationSnapshot.WaitingOn/laneHead(_:_:)`` |
/// | an earlier write of a record it changes is not settled | waiting: ``OperationSnapshot.WaitingOn/recordWrite(_:_:)`` |
/// | a file it carries is not completed on the server | waiting: ``OperationSnapshot.WaitingOn/attachment(_:landed:of:)`` |
/// | its due moment is after now | waiting: ``OperationSnapshot.WaitingOn/scheduled(_:)`` |
/// | the first dependency not synced was discarded or withdrawn | ``Verdict/dependencyEnded(_:_:)``: the worker blocks it |
/// | its first attempt is older than the server's claims last (less a margin; the worker's facts only) | ``Verdict/claimMayBeForgotten(firstAttemptAt:window:)``: the worker blocks it |
/// | otherwise | ``Verdict/ready`` |
///
/// A dependency is judged by what stands for it now (itself, or the end of the chain of rows
/// that replaced it). The engine facts are the recorded ones for a read, and the session asked
/// live for a send (``engineHold(_:)``).
package enum Eligibility {
    /// Another row, as the rule needs it: its id and status (`nil` when the journal cannot say).
    package struct Row: Sendable, Equatable {
        package var id: OperationID
        package var status: OutboxStatus?

        package init(id: OperationID, status: OutboxStatus?) {
            self.id = id
            self.status = status
        }
    }

    /// The engine's side: the installation, the pause and who is signed in.
    package struct Engine: Sendable, Equatable {
        package var isPaused: Bool
        package var pausedAt: Date?
        package var session: SessionObservation
        /// The installation the writes were made on, when the journal is open on another.
        package var foreignInstallation: String?

        package init(isPaused: Bool, pausedAt: Date?, session: SessionObservation, foreignInstallation: String? = nil) {
            self.isPaused = isPaused
            self.pausedAt = pausedAt
            self.session = session
            self.foreignInstallation = foreignInstallation
        }

        /// The engine as the journal records it, with `session` as the caller sees it.
        package init(_ engine: EngineState, session: SessionObservation? = nil) {
            self.init(isPaused: engine.isPaused, pausedAt: engine.pausedAt, session: session ?? engine.session,
                      foreignInstallation: engine.foreignInstallation?.madeOn)
        }

        /// Nothing holds the engine: what a caller that checks the session itself passes.
        package static let free = Engine(isPaused: false, pausedAt: nil, session: .signedIn)
    }

    /// Everything the rule reads about one row.
    package struct Facts: Sendable, Equatable {
        package var id: OperationID
        package var status: OutboxStatus
        /// When the row is next due; `nil` for due now. The worker passes the moment the
        /// clock-skew clamp makes of it.
        package var dueAt: Date?
        /// Each dependency as it stands now, in the order the row names them.
        package var dependencies: [Row] = []
        /// The first row of its lane not yet terminal; `nil` when none is (or it is this row).
        package var laneHead: Row?
        /// For each record it changes, the first write of that record not yet settled, when it is
        /// another row: a record's writes reach the server in the member's order.
        package var recordHeads: [Row] = []
        package var engine: Engine = .free
        package var now: Date
        /// When its first attempt started (``OperationState/firstAttemptAt``).
        package var firstAttemptAt: Date?
        /// The first file it carries that is not completed yet (``OperationState/pendingAttachment``).
        package var pendingAttachment: AttachmentUpload?
        /// The bytes of its segment in flight, beyond the landed ones (``UploadProgress``).
        package var sendingBytes: Int64 = 0
        /// How old a first attempt may be before the server may have forgotten its key's claim:
        /// the worker's facts carry it (``ClaimRetention/window``); a read's leave it `nil`.
        package var claimWindow: Double?

        package init(id: OperationID, status: OutboxStatus, dueAt: Date?, dependencies: [Row] = [], laneHead: Row? = nil,
                     engine: Engine = .free, now: Date) {
            self.id = id
            self.status = status
            self.dueAt = dueAt
            self.dependencies = dependencies
            self.laneHead = laneHead
            self.engine = engine
            self.now = now
        }
    }

    /// The rule's answer.
    package enum Verdict: Sendable, Equatable {
        case ready
        case waiting(OperationSnapshot.WaitingOn)
        /// A write it depends on ended without being applied: it can never be sent as it is, and
        /// the worker blocks it (`dependencyEnded`).
        case dependencyEnded(OperationID, OutboxStatus)
        /// Its first attempt is older than the server keeps claims (less a margin): sent again
        /// under its key it could apply twice, and the worker blocks it (`claimMayBeForgotten`).
        case claimMayBeForgotten(firstAttemptAt: Date, window: Double)
        /// Not queued: its status says what it waits for.
        case notQueued

        /// What a member is told the row waits for: `nil` when it is ready, not queued, or about
        /// to be blocked (its status says so once the worker has).
        package var waitingOn: OperationSnapshot.WaitingOn? {
            if case .waiting(let on) = self { on } else { nil }
        }
    }

    /// The rule.
    package static func verdict(_ facts: Facts) -> Verdict {
        guard facts.status == .queued else { return .notQueued }
        if let hold = engineHold(facts.engine) { return .waiting(hold) }
        return rowVerdict(facts)
    }

    /// What holds every row at once: the 401 pause, then the session; `nil` when neither does.
    package static func engineHold(_ engine: Engine) -> OperationSnapshot.WaitingOn? {
        if let madeOn = engine.foreignInstallation { return .otherInstallation(madeOn: madeOn) }
        if engine.isPaused { return .sessionPaused(since: engine.pausedAt) }
        switch engine.session {
        case .signedOut: return .noSession
        case .otherAccount: return .otherAccount
        case .signedIn: return nil
        }
    }

    /// The rule's part about the row itself: its dependencies, its lane, its moment.
    package static func rowVerdict(_ facts: Facts) -> Verdict {
        guard facts.status == .queued else { return .notQueued }
        var ended: (OperationID, OutboxStatus)?
        if let first = facts.dependencies.first(where: { $0.status != .synced }) {
            switch first.status {
            case .discarded?, .withdrawn?: ended = (first.id, first.status!)
            default: return .waiting(.dependency(first.id, first.status))
            }
        }
        if let head = facts.laneHead, head.id != facts.id { return .waiting(.laneHead(head.id, head.status)) }
        if let head = facts.recordHeads.first(where: { $0.id != facts.id }) { return .waiting(.recordWrite(head.id, head.status)) }
        if let file = facts.pendingAttachment { return .waiting(.attachment(file.id, landed: min(file.manifest.size, file.landedBytes + facts.sendingBytes), of: file.manifest.size)) }
        if let due = facts.dueAt, due > facts.now { return .waiting(.scheduled(due)) }
        if let ended { return .dependencyEnded(ended.0, ended.1) }
        if let window = facts.claimWindow, let first = facts.firstAttemptAt, facts.now.timeIntervalSince(first) > window {
            return .claimMayBeForgotten(firstAttemptAt: first, window: window)
        }
        return .ready
    }
}
