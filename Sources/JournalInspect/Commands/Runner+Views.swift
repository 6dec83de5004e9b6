import Foundation
package import Outbox
package import OutboxAudit

/// `summary`, `ops` and `ledger`: read from the projections (or the fold of an older layout).
extension Runner {
    func summary() throws -> ExitCode {
        let summary = try reader.summary(now: now)
        let damaged = summary.damaged + foldDamage
        if json {
            write(try encodeJSON(SummaryDocument(summary, now: now, damaged: damaged)))
        } else {
            write(SummaryText.render(summary, moments: moments, style: style))
        }
        return finish(damaged: damaged)
    }

    func ops(_ options: OpsOptions) throws -> ExitCode {
        let query = OperationQuery(
            statuses: options.statuses.isEmpty ? nil : Set(options.statuses),
            categories: options.categories.isEmpty ? nil : Set(options.categories),
            operationTypes: options.types.isEmpty ? nil : Set(options.types),
            createdFrom: options.since?.resolve(now: now, zone: zone),
            createdBefore: options.until?.resolve(now: now, zone: zone),
            // A search reads every row the filters let through, then keeps the first that match.
            limit: options.search == nil ? options.limit : .max
        )
        var operations = try reader.operationStates(matching: query).states
        if let search = options.search {
            let candidates = operations
            operations = Array(candidates.filter(SearchText(search).matches).prefix(options.limit))
            if candidates.contains(where: { $0.sealedPresentation != nil && $0.entityLabel == SearchText.sealedText }) {
                context.standardError.write("journal-inspect: warning: the journal is encrypted at rest and no --key-file was "
                    + "given: labels and summaries are sealed, so only categories, entities and types were searched\n")
            }
        }
        if options.search != nil || !options.categories.isEmpty {
            try warnOfRowsWithoutLabels(query)
        }
        if json {
            write(try encodeJSON(OperationsDocument(operations: operations)))
        } else if operations.isEmpty {
            write("No operations match.\n")
        } else {
            write(OperationsText.render(operations, details: try details(of: operations), moments: moments, style: style))
        }
        return finish(damaged: foldDamage)
    }

    /// Rows compacted before labels were kept have no category, label, summary or entity: a
    /// search matches them by type only, a category never. Says how many the other filters let
    /// through, so none is left out silently.
    private func warnOfRowsWithoutLabels(_ query: OperationQuery) throws {
        var unfiltered = query
        unfiltered.categories = nil
        unfiltered.limit = .max
        let count = try reader.operationStates(matching: unfiltered).states.count { !$0.keptRequest }
        guard count > 0 else { return }
        context.standardError.write("journal-inspect: warning: \(count) operation\(count == 1 ? " was" : "s were") compacted before "
            + "labels were kept (by an engine older than journal format 2): \(count == 1 ? "it has" : "they have") no category, label, "
            + "summary or entity, so --category leaves \(count == 1 ? "it" : "them") out and --search matches "
            + "\(count == 1 ? "its type" : "their types") only; 'ops --type' lists them\n")
    }

    /// The DETAIL cell of each operation whose detail needs more than its state: who discarded
    /// it and why, the approver's note (from its events); the write a queued row waits behind
    /// or depends on. The rest are said from the state alone.
    func details(of operations: [OperationState]) throws -> [OperationID: String] {
        var details: [OperationID: String] = [:]
        for state in operations where state.compactedAt == nil
            && (state.status == .discarded || state.lastErrorCode == ErrorCode.approvalRejected)
        {
            guard let events = try? reader.journalEvents(of: state.id) else { continue }
            details[state.id] = OperationsText.detail(state, events: events, moments: moments)
        }
        let queued = operations.filter { $0.status == .queued }
        guard !queued.isEmpty else { return details }
        let facts = try FactsReader(projectionsOf: reader, now: now)
        for state in queued {
            let held: String
            switch try facts.waiting(for: state)?.on {
            case .laneHead(let head, let status)?, .recordWrite(let head, let status)?:
                held = "behind \(EventText.shortID(head))" + (status.map { " (\($0.rawValue))" } ?? "")
            case .dependency(let other, let status)?: held = "depends on \(EventText.shortID(other))" + (status.map { " (\($0.rawValue))" } ?? "")
            default:
                // Not sent before its files are completed: the first one not yet says how far.
                guard let file = state.attachments.first(where: { !$0.isCompleted }) else { continue }
                held = "waits for its file \(file.manifest.name) (\(AttachmentText.sizes(file.landedBytes, of: file.manifest.size)) uploaded)"
            }
            let detail = OperationsText.detail(state, events: nil, moments: moments)
            details[state.id] = detail.isEmpty ? held : detail + "; " + held
        }
        return details
    }

    func ledger(_ options: LedgerOptions) throws -> ExitCode {
        let rows = try reader.ledger(LedgerQuery(
            status: options.status,
            createdFrom: options.since?.resolve(now: now, zone: zone),
            createdBefore: options.until?.resolve(now: now, zone: zone),
            limit: options.limit
        )).entries
        if json {
            write(try encodeJSON(LedgerDocument(ledger: rows)))
        } else if options.csv {
            write(LedgerText.csv(rows, moments: moments))
        } else if rows.isEmpty {
            write("The ledger has no rows that match.\n")
        } else {
            write(LedgerText.table(rows, moments: moments, style: style))
        }
        return finish(damaged: foldDamage)
    }
}

/// The summary as label-value lines and a table of counts.
package enum SummaryText {
    package static func render(_ summary: JournalSummary, moments: MomentFormat, style: Style) -> String {
        let now = moments.now
        var fields = FieldList()
        fields.add("Journal", summary.path)
        let layout = summary.projectionVersion.map { "projections layout \($0)" } ?? "no projections layout stored"
        fields.add("Format", "journal format \(summary.formatVersion), \(layout)"
            + (summary.projectionsAreCurrent ? "" : " (not this engine's: folded from the events in memory)"))
        if let account = summary.account { fields.add("Account", account) }
        if let first = summary.firstSeq {
            fields.add("Events", "seq \(first)...\(summary.lastSeq): \(summary.eventCount) event\(summary.eventCount == 1 ? "" : "s"), "
                + "\(Moments.bytes(summary.eventBytes)) of records")
        } else {
            fields.add("Events", "none")
        }
        fields.add("On disk", "data.mdb \(Moments.bytes(summary.fileBytes)) (\(Moments.bytes(summary.usedBytes)) in use)")
        if let last = summary.lastEventAt {
            fields.add("Last event", moments.both(last))
        }
        let engine = summary.engine
        if engine.isPaused {
            var text = style.paint("paused", .magenta)
            if let at = engine.pausedAt { text += " since \(moments.both(at))" }
            text += ": \(engine.pauseReason ?? "unauthorized")"
            if let by = engine.pausedBy { text += ", met by operation \(EventText.shortID(by))" }
            text += "; nothing is sent until the session is refreshed"
            fields.add("Worker", text)
        } else {
            fields.add("Worker", "not paused")
        }
        switch engine.session {
        case .signedIn: break
        case .signedOut: fields.add("Session", "nobody signed in" + (engine.sessionSince.map { " since \(moments.both($0))" } ?? "")
            + "; nothing is sent until the member signs in")
        case .otherAccount: fields.add("Session", "another account signed in" + (engine.sessionSince.map { " since \(moments.both($0))" } ?? "")
            + "; nothing is sent under it")
        }
        if let oldest = summary.oldestPending {
            let waited = now.timeIntervalSince(oldest.createdAt)
            fields.add("Oldest pending", "\(EventText.shortID(oldest.id)) \"\(oldest.entityLabel)\" (\(oldest.operationType)), "
                + "\(style.paint(oldest.status.rawValue, Style.color(of: oldest.status))), "
                + (waited >= 0 ? "waiting \(Moments.duration(waited)) since \(moments.absolute(oldest.createdAt))"
                    : "saved \(moments.absolute(oldest.createdAt)), after the moment read as now (the device clock ran ahead)"))
        } else {
            fields.add("Oldest pending", "none: nothing is queued or syncing")
        }
        if summary.oldestPending != nil {
            let connected = summary.oldestPendingConnectedAgeSeconds.map { "\(Moments.duration($0)) of it with a route to the server" }
                ?? "made before the journal kept the connected clock"
            fields.add("Connected age", connected + (summary.routeSeen ? "; a route was seen at the last event" : "; no route seen at the last event"))
            if let healthy = summary.oldestHealthyPending, healthy.operation != summary.oldestPending?.id {
                fields.add("Oldest healthy", "\(EventText.shortID(healthy.operation)), waiting \(Moments.duration(healthy.ageSeconds))"
                    + (healthy.connectedAgeSeconds.map { ", \(Moments.duration($0)) of it connected" } ?? "")
                    + ": the oldest waiting on the engine, not on a person")
            } else if summary.oldestHealthyPending == nil {
                fields.add("Oldest healthy", "none: every waiting write waits on a person")
            }
        }
        let objective = summary.acknowledgement
        fields.add("Objective", "\(objective.withinInterval) of \(objective.acknowledged) writes acknowledged within "
            + "\(Moments.duration(objective.intervalSeconds)) of connected age"
            + (objective.share.map { String(format: " (%.1f %%)", $0 * 100) } ?? "")
            + (objective.pendingPastInterval > 0 ? "; \(objective.pendingPastInterval) waiting already past it" : ""))
        fields.add("Interrupted", "\(summary.abandonedAttempts) attempts abandoned at an open, \(summary.cancelledAttempts) cancelled by an expiry")
        for feed in summary.feeds {
            fields.add("Feed", "\(feed.business) at \(feed.cursor ?? "no cursor yet"), set by the event at seq \(feed.pageSeq)"
                + (feed.pageAt.map { ", \(moments.absolute($0))" } ?? "")
                + (feed.caughtUpAt.map { "; caught up \(moments.absolute($0)) (\(Moments.duration(max(0, now.timeIntervalSince($0)))) behind now)" }
                    ?? "; never caught up in this journal")
                + (feed.staging.map { "; resnapshot staging since seq \($0.startedSeq): \($0.records) records in \($0.pages) pages, read from \($0.position)" } ?? ""))
        }
        if let opened = engine.lastOpened {
            fields.add("Last opened", "by engine \(opened.engineVersion)" + (opened.appVersion.map { ", app \($0)" } ?? "")
                + " (opened \(engine.openCount) time\(engine.openCount == 1 ? "" : "s"))")
            fields.add("Device zone", opened.timeZone.map { "\($0), when the app last opened the journal (--tz member shows moments in it)" }
                ?? "not recorded (the app last opened the journal with an engine older than journal format 2)")
        }
        if !moments.isUTC { fields.add("Shown in", moments.zoneName(at: summary.lastEventAt ?? now)) }
        var table = TextTable(headers: ["STATUS", "OPERATIONS"], rightAligned: [1])
        for status in OutboxStatus.allCases {
            table.add([TextTable.Cell(status.rawValue, Style.color(of: status)), TextTable.Cell("\(summary.statusCounts[status] ?? 0)")])
        }
        table.add([TextTable.Cell("total", .bold), TextTable.Cell("\(summary.operationCount)")])
        return fields.render(style) + "\n" + table.render(style)
    }
}

/// Operations, one line each.
package enum OperationsText {
    /// - Parameter details: the DETAIL of rows whose detail was read from their events.
    package static func render(_ operations: [OperationState], details: [OperationID: String] = [:], moments: MomentFormat,
                              style: Style) -> String {
        var table = TextTable(headers: ["ID", "SAVED", "AGE", "TYPE", "LABEL", "STATUS", "ATTEMPTS", "DETAIL"],
                              rightAligned: [6])
        for state in operations {
            table.add([
                TextTable.Cell(EventText.shortID(state.id)),
                TextTable.Cell(moments.absolute(state.createdAt)),
                TextTable.Cell(moments.relative(state.createdAt)),
                TextTable.Cell(state.operationType),
                TextTable.Cell(label(state)),
                TextTable.Cell(state.status.rawValue, Style.color(of: state.status)),
                TextTable.Cell("\(state.attemptCount)"),
                TextTable.Cell(details[state.id] ?? detail(state, events: nil, moments: moments)),
            ])
        }
        return table.render(style)
    }

    /// The label a row shows: the member's words, or what a compaction left of them.
    package static func label(_ state: OperationState) -> String {
        state.keptRequest ? state.entityLabel : "(compacted before labels were kept)"
    }

    /// What a row's DETAIL says: the last error of a row still waiting; who dropped a discarded
    /// one and why (from its events, when given); the approver's note; what replaced it; when
    /// its details were compacted.
    package static func detail(_ state: OperationState, events: [JournalEvent]?, moments: MomentFormat) -> String {
        var text: String
        switch state.status {
        case .discarded:
            text = "discarded"
            if let events, let event = events.last(where: { $0.kind == .discarded }) {
                text += " " + EventText.detail(event, moments: moments) + " on \(moments.absolute(event.recordedAt))"
            }
        case .superseded:
            text = state.supersededBy.map { "replaced by \(EventText.shortID($0))" } ?? "replaced"
        case .synced, .pendingApproval, .syncing:
            text = ""
        case .failed where state.lastErrorCode == ErrorCode.approvalRejected:
            let note = events.flatMap { Verdict.approverNote(OperationTimeline(id: state.id, state: state, events: $0, damaged: [],
                                                                                attempts: [], payload: nil)) }
            text = "\(ErrorCode.approvalRejected): the approver rejected it" + (note.map { ": \"\($0)\"" } ?? "")
        default:
            text = EventText.error(code: state.lastErrorCode, message: state.lastErrorMessage)
        }
        if let at = state.compactedAt {
            let compacted = "details compacted on \(moments.day(at))"
            text = text.isEmpty ? compacted : text + "; " + compacted
        }
        return text
    }
}

/// The ledger as a table or as CSV.
package enum LedgerText {
    /// The CSV columns: the JSON field names, in the ledger's order.
    package static let csvColumns = [
        "operationID", "operationType", "entityType", "seq", "createdAt", "attempts", "latestOutcome", "serverRevision",
        "status", "isTerminal", "decision",
    ]

    /// - Parameter moments: the zone `createdAt` is written in (UTC unless `--tz` says otherwise).
    package static func csv(_ rows: [LedgerEntry], moments: MomentFormat = MomentFormat(now: Date())) -> String {
        var text = CSV.line(csvColumns)
        for row in rows {
            text += CSV.line([
                row.operationID.idempotencyKey, row.operationType, row.entityType, "\(row.seq)", moments.absolute(row.createdAt),
                "\(row.attempts)", row.latestOutcome, row.serverRevision ?? "", row.status.rawValue, row.isTerminal ? "true" : "false",
                row.decision?.rawValue ?? "",
            ])
        }
        return text
    }

    package static func table(_ rows: [LedgerEntry], moments: MomentFormat, style: Style) -> String {
        var table = TextTable(headers: ["ID", "TYPE", "ENTITY", "SEQ", "CREATED", "ATTEMPTS", "LATEST OUTCOME", "REVISION", "STATUS"],
                              rightAligned: [3, 5])
        for row in rows {
            table.add([
                TextTable.Cell(EventText.shortID(row.operationID)),
                TextTable.Cell(row.operationType),
                TextTable.Cell(row.entityType),
                TextTable.Cell("\(row.seq)"),
                TextTable.Cell(moments.absolute(row.createdAt)),
                TextTable.Cell("\(row.attempts)"),
                TextTable.Cell(row.latestOutcome),
                TextTable.Cell(row.serverRevision ?? "-"),
                // A decision the engine made for the member beside the status it left.
                TextTable.Cell(row.status.rawValue + (row.isTerminal ? " (final)" : "") + (row.decision.map { ", engine: \($0)" } ?? ""),
                               Style.color(of: row.status)),
            ])
        }
        return table.render(style)
    }
}
