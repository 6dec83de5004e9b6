public import Foundation

extension BatchOutcome {
    /// The word for an operation answered with `status`, `headers` and `body`: what its answer
    /// would mean to a client had it come alone.
    ///
    /// | answer | outcome |
    /// |---|---|
    /// | `Idempotent-Replayed: true` | ``replayed`` |
    /// | body `code` `idempotency_conflict` | ``keyConflict`` |
    /// | body `code` `idempotency_in_progress` | ``inProgress`` |
    /// | 412, or 409 with `code` `revision_conflict` | ``revisionConflict`` |
    /// | 2xx | ``accepted`` |
    /// | 401 | ``unauthorized`` |
    /// | 408, 429, 5xx | ``retry`` |
    /// | other 4xx | ``rejected`` |
    /// | anything else (1xx, 3xx) | ``retry``: nothing says it was applied |
    public init(status: Int, headers: [String: String], body: Data) {
        let replayed = headers.contains {
            $0.key.lowercased() == WireHeader.idempotentReplayed.lowercased() && $0.value.lowercased() == "true"
        }
        let code = status >= 400 ? AnswerBody(body).code : nil
        switch status {
        case _ where replayed: self = .replayed
        case _ where code == WireErrorCode.idempotencyConflict: self = .keyConflict
        case _ where code == WireErrorCode.idempotencyInProgress: self = .inProgress
        case 412: self = .revisionConflict
        case 409 where code == WireErrorCode.revisionConflict: self = .revisionConflict
        case 200..<300: self = .accepted
        case 401: self = .unauthorized
        case 408, 429, 500..<600: self = .retry
        case 400..<500: self = .rejected
        default: self = .retry
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
