/// What an answer to a write means, from its status, its body's `code` and its
/// `Idempotent-Replayed` header: the one table both halves ask. The engine's disposition table
/// (`DispositionTable` in `OutboxCore`) refines it with what only the engine decides (an approval,
/// a body that is not JSON, a terminal transition's 409, its own error codes, `Retry-After`);
/// the batch wire's word for each result (``BatchOutcome``) is a name for each meaning.
///
/// | answer | meaning |
/// |---|---|
/// | 4xx or 5xx with body `code` `idempotency_conflict` | ``keyConflict`` |
/// | 4xx or 5xx with body `code` `idempotency_in_progress` | ``inProgress`` |
/// | 412, or 409 with `code` `revision_conflict` | ``revisionConflict`` |
/// | 2xx | ``applied(replayed:)``, replayed with `Idempotent-Replayed: true` |
/// | 401 | ``unauthorized`` |
/// | 403 | ``forbidden`` |
/// | 408, 429, 5xx | ``notNow`` |
/// | other 4xx | ``refused`` |
/// | anything else (1xx, 3xx) | ``unexpected``: nothing says it was applied |
///
/// The body's code decides before the status, and only on a 4xx or 5xx. `Idempotent-Replayed`
/// counts only on a 2xx: a replayed refusal is still a refusal.
package enum AnswerMeaning: Sendable, Equatable {
    /// Applied (2xx); `replayed`: before, the stored answer replayed.
    case applied(replayed: Bool)
    /// The key was used with another payload.
    case keyConflict
    /// The first request with the key is still finalizing.
    case inProgress
    /// The record changed since the revision the write started from.
    case revisionConflict
    /// The credentials were refused.
    case unauthorized
    /// The caller may not make this write.
    case forbidden
    /// Not applied, and may be sent again later: 408, 429, 5xx.
    case notNow
    /// Refused: the payload or the request needs correcting (other 4xx).
    case refused
    /// A status no answer to a write should have (1xx, 3xx, ...).
    case unexpected

    /// The meaning of `status` with the body's error `code` (``AnswerBody/code``) and whether
    /// the answer said `Idempotent-Replayed: true` (``isReplayed(_:)``).
    package init(status: Int, code: String?, replayed: Bool) {
        let code = status >= 400 ? code : nil
        switch status {
        case _ where code == WireErrorCode.idempotencyConflict: self = .keyConflict
        case _ where code == WireErrorCode.idempotencyInProgress: self = .inProgress
        case 412: self = .revisionConflict
        case 409 where code == WireErrorCode.revisionConflict: self = .revisionConflict
        case 200..<300: self = .applied(replayed: replayed)
        case 401: self = .unauthorized
        case 403: self = .forbidden
        case 408, 429, 500..<600: self = .notNow
        case 400..<500: self = .refused
        default: self = .unexpected
        }
    }

    /// Whether an `Idempotent-Replayed` header's value says the answer was replayed: `true`,
    /// in any case.
    package static func isReplayed(_ value: String?) -> Bool {
        value?.lowercased() == "true"
    }
}
