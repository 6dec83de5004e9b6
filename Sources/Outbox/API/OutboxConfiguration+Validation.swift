import OutboxCore

extension OutboxConfiguration {
    /// The smallest storage budget a journal works in: room for its databases, an operation or
    /// two, and the reserve that lets what is queued drain.
    public static let minimumJournalBytes = 256 << 10
    /// The largest storage budget: the map is given a quarter more, and must fit the address space.
    public static let maximumJournalBytes = 1 << 40
    /// The smallest starting size of a new journal's map: what creating its databases needs.
    public static let minimumInitialJournalBytes = 64 << 10
    /// The most lanes sent at once.
    public static let maximumConcurrentLanes = 256
    /// The largest payload limit.
    public static let maximumPayloadBytes = 64 << 20
    /// The longest account name, in UTF-8 bytes.
    public static let maximumAccountBytes = 1_024

    /// Checks every value against its range before anything is opened.
    /// - Throws: ``OutboxError/invalidConfiguration(field:problem:)`` naming the first field out of
    ///   range and the range it must be in.
    func validate() throws(OutboxError) {
        func refuse(_ field: String, _ problem: String) -> OutboxError {
            .invalidConfiguration(field: field, problem: problem)
        }
        if account.isEmpty { throw refuse("account", "must not be empty: give the signed-in member's account id") }
        if account.utf8.count > Self.maximumAccountBytes {
            throw refuse("account", "is \(account.utf8.count) bytes; at most \(Self.maximumAccountBytes) are allowed")
        }
        if !(1...Self.maximumConcurrentLanes).contains(maxConcurrentLanes) {
            throw refuse("maxConcurrentLanes", "must be within 1...\(Self.maximumConcurrentLanes), not \(maxConcurrentLanes)")
        }
        if !(1...Self.maximumPayloadBytes).contains(maxPayloadBytes) {
            throw refuse("maxPayloadBytes", "must be within 1...\(Self.maximumPayloadBytes) bytes, not \(maxPayloadBytes)")
        }
        if !(Self.minimumJournalBytes...Self.maximumJournalBytes).contains(maxJournalBytes) {
            throw refuse("maxJournalBytes", "must be within \(Self.minimumJournalBytes)...\(Self.maximumJournalBytes) bytes (256 KiB to 1 TiB), not \(maxJournalBytes)")
        }
        // A starting size above the budget starts at the budget.
        if !(Self.minimumInitialJournalBytes...Self.maximumJournalBytes).contains(initialJournalBytes) {
            throw refuse("initialJournalBytes", "must be within \(Self.minimumInitialJournalBytes)...\(Self.maximumJournalBytes) bytes (64 KiB to 1 TiB), not \(initialJournalBytes)")
        }
        if attachments.maxFileBytes < 0 { throw refuse("attachments.maxFileBytes", "must not be negative, not \(attachments.maxFileBytes)") }
        if attachments.maxPerWrite < 0 { throw refuse("attachments.maxPerWrite", "must not be negative, not \(attachments.maxPerWrite)") }
        if attachments.budgetBytes < attachments.maxFileBytes {
            throw refuse("attachments.budgetBytes", "is \(attachments.budgetBytes) bytes, below maxFileBytes (\(attachments.maxFileBytes)): raise it or lower maxFileBytes")
        }
        if !(attachments.keepSeconds >= 0 && attachments.keepSeconds.isFinite) {
            throw refuse("attachments.keepSeconds", "must be a number of seconds, not \(attachments.keepSeconds)")
        }
        if !attachments.uploadsEndpoint.hasPrefix("/") {
            throw refuse("attachments.uploadsEndpoint", "must be a path starting with /, not \"\(attachments.uploadsEndpoint)\"")
        }
        if !(attemptBudgetSeconds > 0 && attemptBudgetSeconds.isFinite) {
            throw refuse("attemptBudgetSeconds", "must be a positive number of seconds (the transport's timeout), not \(attemptBudgetSeconds)")
        }
        if !OutboxMetrics.AcknowledgementObjective.boundsSeconds.contains(acknowledgementObjectiveSeconds) {
            throw refuse("acknowledgementObjectiveSeconds", "must be one of \(OutboxMetrics.AcknowledgementObjective.boundsSeconds.map { "\(Int($0))" }.joined(separator: ", ")) seconds, not \(acknowledgementObjectiveSeconds)")
        }
        if !(claimRetentionSeconds > 0 && claimRetentionSeconds.isFinite) {
            throw refuse("claimRetentionSeconds", "must be a positive number of seconds (how long the server keeps idempotency claims), not \(claimRetentionSeconds)")
        }
        if !(claimRetentionMarginSeconds >= 0 && claimRetentionMarginSeconds < claimRetentionSeconds) {
            throw refuse("claimRetentionMarginSeconds", "must be zero or more seconds and less than claimRetentionSeconds (\(claimRetentionSeconds)), not \(claimRetentionMarginSeconds)")
        }
        if !(decisionNoticeSeconds >= 0 && decisionNoticeSeconds.isFinite) {
            throw refuse("decisionNoticeSeconds", "must be zero or more seconds, not \(decisionNoticeSeconds)")
        }
        if let installation, installation.isEmpty || installation.utf8.count > Self.maximumAccountBytes {
            throw refuse("installation", "must be 1...\(Self.maximumAccountBytes) bytes of text (an identifier the app keeps outside backups), or nil")
        }
        if let problem = retryPolicy.problems.first {
            throw refuse("retryPolicy.\(problem.field)", problem.problem)
        }
        if let compaction {
            if compaction.maxEvents < 1 { throw refuse("compaction.maxEvents", "must be at least 1, not \(compaction.maxEvents)") }
            if !(compaction.keepSettledSeconds >= 0 && compaction.keepSettledSeconds.isFinite) {
                throw refuse("compaction.keepSettledSeconds", "must be zero or more seconds, not \(compaction.keepSettledSeconds)")
            }
        }
        for (type, policy) in exactOperationPolicies {
            if case .rebase(let maxTimes) = policy.conflictRule, !(1...100).contains(maxTimes) {
                throw refuse("operationPolicies[\"\(type)\"].conflictRule", "rebases within 1...100 times, not \(maxTimes)")
            }
        }
        if case .rebase(let maxTimes)? = defaultPolicy?.conflictRule, !(1...100).contains(maxTimes) {
            throw refuse("defaultPolicy.conflictRule", "rebases within 1...100 times, not \(maxTimes)")
        }
        if let batching {
            if let problem = OutboxRequest.endpointProblem(batching.endpoint) {
                throw refuse("batching.endpoint", problem)
            }
            if !(1...Batching.maximumOperations).contains(batching.maxOperations) {
                throw refuse("batching.maxOperations", "must be within 1...\(OutboxConfiguration.Batching.maximumOperations), not \(batching.maxOperations)")
            }
            if batching.maxBytes < 1 { throw refuse("batching.maxBytes", "must be at least 1 byte, not \(batching.maxBytes)") }
        }
        if let empty = exactOperationPolicies.keys.first(where: \.string.isEmpty) {
            throw refuse("operationPolicies", "names an empty operation type (\"\(empty)\"): give each policy its type")
        }
        if let pull, let problem = pull.problem {
            throw refuse("pull.\(problem.field)", problem.problem)
        }
    }
}

extension PullConfiguration {
    /// The first field out of range and what it must be; `nil` when every one is in range.
    var problem: (field: String, problem: String)? {
        for (field, endpoint) in [("changesEndpoint", changesEndpoint), ("snapshotEndpoint", snapshotEndpoint), ("summaryEndpoint", summaryEndpoint)] {
            if let problem = OutboxRequest.endpointProblem(endpoint) { return (field, problem) }
            if endpoint.utf8.contains(UInt8(ascii: "?")) {
                return (field, "must be a path without a query (the engine adds its own), not \"\(endpoint)\"")
            }
        }
        if !(1...Self.maximumPageSize).contains(pageSize) {
            return ("pageSize", "must be within 1...\(Self.maximumPageSize), not \(pageSize)")
        }
        if maxPagesPerPass < 1 { return ("maxPagesPerPass", "must be at least 1, not \(maxPagesPerPass)") }
        if let interval = summaryIntervalSeconds, !(interval > 0 && interval.isFinite) {
            return ("summaryIntervalSeconds", "must be more than zero seconds, or nil for never, not \(interval)")
        }
        for (type, pulled) in exactTypes.sorted(by: { $0.key.string.utf8.lexicographicallyPrecedes($1.key.string.utf8) }) {
            let check = RecordKey(business: "b", type: type.string, id: "i").problem
            if let check { return ("types[\"\(type)\"]", "names a type that \(check.problem)") }
            if !(pulled.freshnessSeconds >= 0 && pulled.freshnessSeconds.isFinite) {
                return ("types[\"\(type)\"].freshnessSeconds", "must be zero or more seconds, not \(pulled.freshnessSeconds)")
            }
        }
        for (index, business) in businesses.enumerated() {
            if let check = RecordKey(business: business, type: "t", id: "i").problem {
                return ("businesses[\(index)]", "names a business that \(check.problem)")
            }
        }
        return nil
    }
}
