public import Foundation

extension BatchOutcome {
    /// The word for an operation answered with `status`, `headers` and `body`: what its answer
    /// means (``AnswerMeaning``, the table the engine's disposition table asks too), named.
    ///
    /// | meaning | outcome |
    /// |---|---|
    /// | applied (2xx), with `Idempotent-Replayed: true` | ``replayed`` |
    /// | applied (2xx) | ``accepted`` |
    /// | body `code` `idempotency_conflict` | ``keyConflict`` |
    /// | body `code` `idempotency_in_progress` | ``inProgress`` |
    /// | 412, or 409 with `code` `revision_conflict` | ``revisionConflict`` |
    /// | 401 | ``unauthorized`` |
    /// | 403, other 4xx | ``rejected`` |
    /// | 408, 429, 5xx, and anything else (1xx, 3xx) | ``retry``: nothing says it was applied |
    public init(status: Int, headers: [String: String], body: Data) {
        let replayed = headers.contains {
            $0.key.lowercased() == WireHeader.idempotentReplayed.lowercased() && AnswerMeaning.isReplayed($0.value)
        }
        // Only a refusal's body can carry a code the table reads.
        let code = status >= 400 ? AnswerBody(body).code : nil
        switch AnswerMeaning(status: status, code: code, replayed: replayed) {
        case .applied(let replayed): self = replayed ? .replayed : .accepted
        case .keyConflict: self = .keyConflict
        case .inProgress: self = .inProgress
        case .revisionConflict: self = .revisionConflict
        case .unauthorized: self = .unauthorized
        case .forbidden, .refused: self = .rejected
        case .notNow, .unexpected: self = .retry
        }
    }
}

extension BatchResult {
    /// The result of an operation answered with `status`, `headers` and `body`, its outcome
    /// read from them (``BatchOutcome/init(status:headers:body:)``).
    public init(operationID: String, status: Int, headers: [String: String], body: Data) {
        self.init(operationID: operationID, outcome: BatchOutcome(status: status, headers: headers, body: body),
                  status: status, headers: headers, body: body)
    }
}
