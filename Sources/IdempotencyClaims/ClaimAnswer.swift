import OutboxWire

/// What ``IdempotencyClaims`` answers a request: the response to send and how it came about.
public struct ClaimAnswer: Hashable, Sendable {
    /// How the response came about.
    public enum Outcome: Hashable, Sendable {
        /// The write ran now and committed with its claim.
        case applied
        /// The write had already run: its stored response, sent again with
        /// `Idempotent-Replayed: true`.
        case replayed
        /// 409 `idempotency_conflict`: the key was used with a different body.
        case conflict
        /// 409 `idempotency_in_progress`: a request with this key is still finalizing.
        case inProgress
        /// 400 `idempotency_key_required`: no key, or a blank one.
        case keyRequired
        /// 400 `idempotency_key_invalid`: a key too long or holding control characters.
        case keyInvalid
        /// The write refused the request (``ClaimRefusal``): its answer, with nothing written and
        /// no claim kept, so the same key may run the write later.
        case refused
    }

    /// How the response came about.
    public var outcome: Outcome
    /// The response to send, exactly.
    public var response: ClaimResponse

    public init(outcome: Outcome, response: ClaimResponse) {
        self.outcome = outcome
        self.response = response
    }

    /// The error codes this library answers with, as they appear in JSON bodies.
    public enum Code {
        public static let keyRequired = WireErrorCode.idempotencyKeyRequired
        public static let keyInvalid = WireErrorCode.idempotencyKeyInvalid
        public static let conflict = WireErrorCode.idempotencyConflict
        public static let inProgress = WireErrorCode.idempotencyInProgress
    }

    static func keyProblem(_ problem: IdempotencyKey.Problem) -> ClaimAnswer {
        switch problem {
        case .missing:
            ClaimAnswer(
                outcome: .keyRequired,
                response: .problem(status: 400, code: Code.keyRequired, message: problem.description))
        case .tooLong, .controlCharacter:
            ClaimAnswer(
                outcome: .keyInvalid,
                response: .problem(status: 400, code: Code.keyInvalid, message: problem.description))
        }
    }

    static let conflict = ClaimAnswer(
        outcome: .conflict,
        response: .problem(
            status: 409, code: Code.conflict,
            message: "this Idempotency-Key was already used with a different request body"))

    static let inProgress: ClaimAnswer = {
        var response = ClaimResponse.problem(
            status: 409, code: Code.inProgress,
            message: "a request with this Idempotency-Key is still being processed; retry shortly")
        response.headers.append(ClaimResponse.Header(name: WireHeader.retryAfter, value: "1"))
        return ClaimAnswer(outcome: .inProgress, response: response)
    }()

    static func replay(_ stored: ClaimResponse) -> ClaimAnswer {
        ClaimAnswer(outcome: .replayed, response: stored.markedReplayed())
    }

    /// The answer for a decision that does not run the write; `nil` for ``ClaimDecision/take``.
    static func answer(for decision: ClaimDecision) -> ClaimAnswer? {
        switch decision {
        case .take: nil
        case .replay(let stored): .replay(stored)
        case .conflict: .conflict
        case .inProgress: .inProgress
        }
    }
}
