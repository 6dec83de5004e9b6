/// An enum stored in the journal as a one-byte code.
///
/// Codes are part of the record format: never renumber one, only add.
package protocol JournalCode: CaseIterable {
    /// The byte the journal stores.
    var code: UInt8 { get }
}

extension JournalCode {
    /// The case stored as `code`; `nil` for a byte no case has.
    package init?(code: UInt8) {
        guard let match = Self.allCases.first(where: { $0.code == code }) else { return nil }
        self = match
    }
}

/// What woke the worker for a pass, recorded on each attempt it starts (``AttemptStarted/trigger``).
package enum WakeReason: String, Sendable, Codable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    package var description: String { rawValue }

    /// The app started: a sweep of everything due.
    case appLaunch
    /// The device regained a network path.
    case connectivityRegained
    /// The app came to the foreground.
    case foreground
    /// An inline save's own attempt failed as retryable.
    case saveRetryable
    /// The timer armed for the earliest scheduled retry fired.
    case timer
    /// The app asked for a pass now (`drain()`).
    case drain
    /// An inline save sending its own row at once.
    case inlineSave
    /// The session was refreshed after a 401 pause.
    case sessionResumed
    /// A write was enqueued.
    case enqueued
    /// A person asked to retry a failed or blocked row.
    case retryRequested
    /// The device's clock was changed (iOS: `significantTimeChangeNotification`): retry moments
    /// are wall-clock, so the timer is re-armed from the new time.
    case clockChanged
    /// The app asked for a pull now (`pull()`): a pass that sends what is due, then pulls every
    /// feed.
    case pullRequested

    package var code: UInt8 {
        switch self {
        case .appLaunch: 1
        case .connectivityRegained: 2
        case .foreground: 3
        case .saveRetryable: 4
        case .timer: 5
        case .drain: 6
        case .inlineSave: 7
        case .sessionResumed: 8
        case .enqueued: 9
        case .retryRequested: 10
        case .clockChanged: 11
        case .pullRequested: 12
        }
    }

}

/// What an attempt produced.
package enum AttemptOutcome: Sendable, Equatable, CustomStringConvertible {
    /// The server answered with this HTTP status.
    case response(statusCode: Int)
    /// No response arrived: offline, a timeout, a reset connection.
    case noResponse(TransportRequest.Failure)
    /// The engine refused to send (the stored payload no longer matched its hash).
    case notSent

    package var description: String {
        switch self {
        case .response(let statusCode): "HTTP \(statusCode)"
        case .noResponse(let failure): "no response (\(failure))"
        case .notSent: "not sent"
        }
    }
}

/// What the engine decided from an attempt's outcome (the disposition table).
package enum Disposition: String, Sendable, Codable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    package var description: String { rawValue }

    /// Whether the server took the write (synced, or waiting for a person's approval): what the
    /// service objective counts as acknowledged.
    package var acknowledges: Bool {
        self == .accepted || self == .replayed || self == .pendingApproval
    }

    /// 2xx with JSON: applied. The row is synced.
    case accepted
    /// The server had already applied this key (a replayed response, or a terminal transition's
    /// 409): synced, recorded as a replay.
    case replayed
    /// 202 with an approval body: held for someone's decision.
    case pendingApproval = "pending_approval"
    /// No response, 5xx, 429, in progress, or a non-JSON 2xx: queued and scheduled.
    case transientFailure = "transient_failure"
    /// 401: queued with no schedule, the worker paused until the session is refreshed.
    case unauthorized
    /// 400, 404, 422 and other 4xx: the payload needs correcting.
    case rejected
    /// 403, a key conflict, a corrupt payload: a person must decide.
    case blocked
    /// 412, or 409 `revision_conflict`: the record changed elsewhere since the edit began.
    case conflicted
    /// A transient failure past the retry policy's limits: failed, code `gave_up`.
    case gaveUp = "gave_up"

    /// The status the row takes.
    package var status: OutboxStatus {
        switch self {
        case .accepted, .replayed: .synced
        case .pendingApproval: .pendingApproval
        case .transientFailure, .unauthorized: .queued
        case .rejected, .gaveUp: .failed
        case .blocked: .blocked
        case .conflicted: .conflicted
        }
    }

    package var code: UInt8 {
        switch self {
        case .accepted: 1
        case .replayed: 2
        case .pendingApproval: 3
        case .transientFailure: 4
        case .unauthorized: 5
        case .rejected: 6
        case .blocked: 7
        case .conflicted: 8
        case .gaveUp: 9
        }
    }

}

/// The latest outcome of an operation, as the reconciliation ledger names it.
package enum OutcomeCategory: String, Sendable, Codable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    package var description: String { rawValue }

    case accepted
    case replayed
    case pendingApproval = "pending_approval"
    case transientFailure = "transient_failure"
    case rejected
    case blocked
    case unauthorized
    case abandoned
    case conflicted
    case gaveUp = "gave_up"

    package init(_ disposition: Disposition) {
        switch disposition {
        case .accepted: self = .accepted
        case .replayed: self = .replayed
        case .pendingApproval: self = .pendingApproval
        case .transientFailure: self = .transientFailure
        case .unauthorized: self = .unauthorized
        case .rejected: self = .rejected
        case .blocked: self = .blocked
        case .conflicted: self = .conflicted
        case .gaveUp: self = .gaveUp
        }
    }

    package var code: UInt8 {
        switch self {
        case .accepted: 1
        case .replayed: 2
        case .pendingApproval: 3
        case .transientFailure: 4
        case .rejected: 5
        case .blocked: 6
        case .unauthorized: 7
        case .abandoned: 8
        case .conflicted: 9
        case .gaveUp: 10
        }
    }

}

/// Who asked for a decision recorded in the journal.
package enum Requester: String, Sendable, Codable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    package var description: String { rawValue }

    /// The member, from the app.
    case member
    /// The app itself, on the member's behalf (sign-out).
    case app
    /// A rule the app configured, applied by the engine (a conflict rule).
    case rule

    package var code: UInt8 {
        switch self {
        case .member: 1
        case .app: 2
        case .rule: 3
        }
    }

}

/// Why a row was discarded.
package enum DiscardReason: String, Sendable, Codable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    package var description: String { rawValue }

    /// The member chose to drop it.
    case memberDiscarded
    /// The member signed out and chose to drop what was waiting.
    case signOut
    /// The record changed elsewhere and the server's version was kept: by the member
    /// (`resolveConflict(_:keeping: .theirs)`) or by the type's conflict rule.
    case serverWon

    package var code: UInt8 {
        switch self {
        case .memberDiscarded: 1
        case .signOut: 2
        case .serverWon: 3
        }
    }

}

/// Why a row was replaced by another.
package enum SupersedeReason: String, Sendable, Codable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    package var description: String { rawValue }

    /// The member corrected a failed, blocked or conflicted write (`revise`).
    case revised
    /// The member resolved a conflict keeping their own version (`resolveConflict(_:keeping: .mine)`).
    case resolvedMine
    /// A newer write of the same type to the same entity replaced it before it was ever sent.
    case coalesced

    package var code: UInt8 {
        switch self {
        case .revised: 1
        case .resolvedMine: 2
        case .coalesced: 3
        }
    }
}

/// Who the worker found signed in, recorded when it changes and a pass stops or goes on for it.
package enum SessionObservation: String, Sendable, Codable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    package var description: String { rawValue }

    /// The journal's own account: passes send.
    case signedIn
    /// Nobody: passes send nothing.
    case signedOut
    /// Another account than the journal's: passes send nothing, ever, under it.
    case otherAccount

    package var code: UInt8 {
        switch self {
        case .signedIn: 1
        case .signedOut: 2
        case .otherAccount: 3
        }
    }

    /// What the worker finds when `account` is signed in (`nil`: nobody) on a journal of
    /// `journalAccount`. Accounts are compared byte for byte: the same name in NFC and in NFD is
    /// another account, never sent to.
    package init(signedIn account: String?, journalAccount: String) {
        guard let account else {
            self = .signedOut
            return
        }
        self = account.utf8.elementsEqual(journalAccount.utf8) ? .signedIn : .otherAccount
    }
}

/// A decision the engine made for the member about one of their writes, folded from the event
/// that made it: what the Sync tab tells the member for a while and the ledger keeps.
public enum AutomaticDecision: String, Sendable, Codable, CustomStringConvertible, JournalCode {
    /// The raw value, as the journal's readers print it.
    public var description: String { rawValue }

    /// The type's conflict rule kept the server's version: the member's write was discarded.
    case serverKept = "server_kept"
    /// The type's conflict rule sent the member's write again over a change made elsewhere.
    case resentOverServer = "resent_over_server"
    /// The retry policy gave up sending it: it failed without the server refusing it.
    case gaveUp = "gave_up"
    /// A newer write of the same entity replaced it before it was sent: the member's own latest
    /// value goes instead, so it is in the ledger only.
    case coalesced

    /// Whether the member is told (on the Sync tab): every decision that drops or rewrites what
    /// they typed, or leaves it unsent.
    public var isShownToMember: Bool { self != .coalesced }

    public var code: UInt8 {
        switch self {
        case .serverKept: 1
        case .resentOverServer: 2
        case .gaveUp: 3
        case .coalesced: 4
        }
    }
}

extension TransportRequest {
    /// Why no response arrived.
    public enum Failure: String, Sendable, Codable, CustomStringConvertible, JournalCode {
        /// The raw value, as the journal's readers print it.
        public var description: String { rawValue }

        case offline
        case timedOut
        case connectionLost
        case cannotConnect
        case hostNotFound
        case secureConnectionFailed
        case cancelled
        case other
        /// The request was a batch whose answer did not name this operation: no response for it.
        case missingFromBatch

        public var code: UInt8 {
            switch self {
            case .offline: 1
            case .timedOut: 2
            case .connectionLost: 3
            case .cannotConnect: 4
            case .hostNotFound: 5
            case .secureConnectionFailed: 6
            case .cancelled: 7
            case .other: 8
            case .missingFromBatch: 9
            }
        }

    }
}
