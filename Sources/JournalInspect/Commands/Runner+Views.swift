public import Foundation
public import Outbox

/// `summary`, `ops` and `ledger`: read from the projections (or the fold of an older layout).
extension Runner {
    func summary() throws -> ExitCode {
        let summary = try reader.summary()
        let damaged = summary.damaged + foldDamage
        if json {
            write(try encodeJSON(SummaryDocument(summary, now: now, damaged: damaged)))
        } else {
            write(SummaryText.render(summary, now: now, style: style))
        }
        return finish(damaged: damaged)
    }

    func ops(_ options: OpsOptions) throws -> ExitCode {
        let query = OperationQuery(
            statuses: options.statuses.isEmpty ? nil : Set(options.statuses),
            categories: options.categories.isEmpty ? nil : Set(options.categories),
            operationTypes: options.types.isEmpty ? nil : Set(options.types),
            createdFrom: options.since?.resolve(now: now),
            createdBefore: options.until?.resolve(now: now),
            limit: options.limit
        )
        let operations = try reader.operations(matching: query)
        if json {
            write(try encodeJSON(OperationsDocument(operations: operations)))
        } else if operations.isEmpty {
            write("No operations match.\n")
        } else {
            write(OperationsText.render(operations, now: now, style: style))
        }
        return finish(damaged: foldDamage)
    }

    func ledger(_ options: LedgerOptions) throws -> ExitCode {
        let rows = try reader.ledger(LedgerQuery(
            status: options.status,
            createdFrom: options.since?.resolve(now: now),
            createdBefore: options.until?.resolve(now: now),
            limit: options.limit
        ))
        if json {
            write(try encodeJSON(LedgerDocument(ledger: rows)))
        } else if options.csv {
            write(LedgerText.csv(rows))
        } else if rows.isEmpty {
            write("The ledger has no rows that match.\n")
        } else {
            write(LedgerText.table(rows, now: now, style: style))
        }
        return finish(damaged: foldDamage)
    }
}

/// The summary as label-value lines and a table of counts.
public enum SummaryText {
    public static func render(_ summary: JournalSummary, now: Date, style: Style) -> String {
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
            fields.add("Last event", Moments.both(last, now: now))
        }
        let engine = summary.engine
        if engine.isPaused {
            var text = style.paint("paused", .magenta)
            if let at = engine.pausedAt { text += " since \(Moments.both(at, now: now))" }
            text += ": \(engine.pauseReason ?? "unauthorized")"
            if let by = engine.pausedBy { text += ", met by operation \(EventText.shortID(by))" }
            text += "; nothing is sent until the session is refreshed"
            fields.add("Worker", text)
        } else {
            fields.add("Worker", "not paused")
        }
        if let oldest = summary.oldestPending {
            fields.add("Oldest pending", "\(EventText.shortID(oldest.id)) \"\(oldest.entityLabel)\" (\(oldest.operationType)), "
                + "\(style.paint(oldest.status.rawValue, Style.color(of: oldest.status))), "
                + "waiting \(Moments.duration(now.timeIntervalSince(oldest.createdAt))) since \(Moments.absolute(oldest.createdAt))")
        } else {
            fields.add("Oldest pending", "none: nothing is queued or syncing")
        }
        if let opened = engine.lastOpened {
            fields.add("Last opened", "by engine \(opened.engineVersion)" + (opened.appVersion.map { ", app \($0)" } ?? "")
                + " (opened \(engine.openCount) time\(engine.openCount == 1 ? "" : "s"))")
        }
        var table = TextTable(headers: ["STATUS", "OPERATIONS"], rightAligned: [1])
        for status in OutboxStatus.allCases {
            table.add([TextTable.Cell(status.rawValue, Style.color(of: status)), TextTable.Cell("\(summary.statusCounts[status] ?? 0)")])
        }
        table.add([TextTable.Cell("total", .bold), TextTable.Cell("\(summary.operationCount)")])
        return fields.render(style) + "\n" + table.render(style)
    }
}

/// Operations, one line each.
public enum OperationsText {
    public static func render(_ operations: [OperationState], now: Date, style: Style) -> String {
        var table = TextTable(headers: ["ID", "SAVED", "AGE", "TYPE", "LABEL", "STATUS", "ATTEMPTS", "LAST ERROR"],
                              rightAligned: [6])
        for state in operations {
            table.add([
                TextTable.Cell(EventText.shortID(state.id)),
                TextTable.Cell(Moments.absolute(state.createdAt)),
                TextTable.Cell(Moments.relative(state.createdAt, now: now)),
                TextTable.Cell(state.operationType),
                TextTable.Cell(state.entityLabel),
                TextTable.Cell(state.status.rawValue, Style.color(of: state.status)),
                TextTable.Cell("\(state.attemptCount)"),
                TextTable.Cell(EventText.error(code: state.lastErrorCode, message: state.lastErrorMessage)),
            ])
        }
        return table.render(style)
    }
}

/// The ledger as a table or as CSV.
public enum LedgerText {
    /// The CSV columns: the JSON field names, in the ledger's order.
    public static let csvColumns = [
        "operationID", "operationType", "entityType", "seq", "createdAt", "attempts", "latestOutcome", "serverRevision",
        "status", "isTerminal",
    ]

    public static func csv(_ rows: [LedgerEntry]) -> String {
        var text = CSV.line(csvColumns)
        for row in rows {
            text += CSV.line([
                row.operationID.idempotencyKey, row.operationType, row.entityType, "\(row.seq)", Moments.absolute(row.createdAt),
                "\(row.attempts)", row.latestOutcome, row.serverRevision ?? "", row.status.rawValue, row.isTerminal ? "true" : "false",
            ])
        }
        return text
    }

    public static func table(_ rows: [LedgerEntry], now: Date, style: Style) -> String {
        var table = TextTable(headers: ["ID", "TYPE", "ENTITY", "SEQ", "CREATED", "ATTEMPTS", "LATEST OUTCOME", "REVISION", "STATUS"],
                              rightAligned: [3, 5])
        for row in rows {
            table.add([
                TextTable.Cell(EventText.shortID(row.operationID)),
                TextTable.Cell(row.operationType),
                TextTable.Cell(row.entityType),
                TextTable.Cell("\(row.seq)"),
                TextTable.Cell(Moments.absolute(row.createdAt)),
                TextTable.Cell("\(row.attempts)"),
                TextTable.Cell(row.latestOutcome),
                TextTable.Cell(row.serverRevision ?? "-"),
                TextTable.Cell(row.status.rawValue + (row.isTerminal ? " (final)" : ""), Style.color(of: row.status)),
            ])
        }
        return table.render(style)
    }
}
