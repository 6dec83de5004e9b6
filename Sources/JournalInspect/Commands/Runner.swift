import Foundation
import Outbox
import OutboxAudit

/// Runs one parsed command on an open journal and writes its output.
struct Runner {
    let reader: JournalReader
    let context: InspectContext
    let json: Bool
    /// The journal as the command line named it, for the hints printed.
    let journalArgument: String
    /// How moments print: `--tz`'s zone, ages counted to `--now`.
    let moments: MomentFormat

    var style: Style { context.style }
    /// The moment the output reads as now: `--now`, or the clock's.
    var now: Date { moments.now }
    var zone: MomentZone { moments.zone }

    func run(_ command: Command) throws -> ExitCode {
        switch command {
        case .summary: try summary()
        case .ops(let options): try ops(options)
        case .timeline(let options): try timeline(options)
        case .attachment(let options): try attachment(options)
        case .events(let options): try events(options)
        case .ledger(let options): try ledger(options)
        case .verify: try verify()
        case .export(let options): try export(options)
        case .report(let options): try report(options)
        case .record(let options): try record(options)
        case .records(let options): try records(options)
        }
    }

    // MARK: Shared

    func write(_ text: String) {
        context.standardOutput.write(text)
    }

    /// The timeline of an operation the journal itself listed (not one a person asked for);
    /// `nil`, with the id added to `unreadable`, when the journal holds nothing of it: the id was
    /// read from a damaged projection.
    func listedTimeline(_ id: OperationID, unreadable: inout [OperationID]) throws -> OperationTimeline? {
        do {
            return try reader.timeline(of: id)
        } catch OutboxError.operationNotFound {
            unreadable.append(id)
            return nil
        }
    }

    /// Reports damaged records, and listed operations of which the journal holds nothing, on
    /// standard error; answers the exit code of a command that read everything else.
    func finish(damaged: [Outbox.DamagedRecord], unreadable: [OperationID] = []) -> ExitCode {
        guard !damaged.isEmpty || !unreadable.isEmpty else { return .success }
        var text = ""
        for id in unreadable {
            text += "journal-inspect: warning: the journal's projections list operation \(id), but it holds no event of "
                + "it (a damaged projection); left out\n"
        }
        var seen: Set<JournalSequence> = []
        for record in damaged.sorted(by: { $0.seq < $1.seq }) where seen.insert(record.seq).inserted {
            text += "journal-inspect: warning: the record at seq \(record.seq) is damaged (\(record.reason))"
            if let id = record.claimedOperationID { text += "; its header names operation \(id)" }
            text += "; carried on without it\n"
        }
        text += "journal-inspect: the journal is damaged where this command had to read; "
            + "run 'journal-inspect \(journalArgument) verify' for every finding\n"
        context.standardError.write(text)
        return .damaged
    }

    /// The records a folded reader could not read: they may hide operations from any list.
    var foldDamage: [Outbox.DamagedRecord] { reader.recordsSkippedByFold }

    /// The one operation `prefix` names.
    /// - Throws: a ``UsageError`` listing the candidates when it names none or several.
    func resolve(_ prefix: String, command: CommandName) throws -> OperationID {
        let matches = try reader.operationIDs(matchingPrefix: prefix)
        if matches.count == 1, let only = matches.first { return only }
        // A whole id the projections do not know may still have events (a damaged enqueue):
        // the command reads them, or says the journal has none.
        if matches.isEmpty, let whole = OperationID(prefix) { return whole }
        if matches.isEmpty {
            throw UsageError("no operation's id starts with '\(prefix)'; 'journal-inspect \(journalArgument) ops' lists them",
                             command: command)
        }
        var table = TextTable(headers: ["ID", "TYPE", "LABEL", "STATUS", "SAVED"])
        let shown = 20
        let candidates = Set(matches.prefix(shown))
        let states = Dictionary(
            try reader.operationStates(matching: OperationQuery(limit: .max)).states.filter { candidates.contains($0.id) }.map { ($0.id, $0) },
            uniquingKeysWith: { first, _ in first })
        for id in matches.prefix(shown) {
            guard let state = states[id] else {
                table.add([TextTable.Cell(id.idempotencyKey)])
                continue
            }
            table.add([TextTable.Cell(id.idempotencyKey), TextTable.Cell(state.operationType), TextTable.Cell(OperationsText.label(state)),
                       TextTable.Cell(state.status.rawValue), TextTable.Cell(moments.absolute(state.createdAt))])
        }
        var message = "'\(prefix)' starts \(matches.count) operations' ids; give more characters. The candidates:\n"
        message += table.render(.plain).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
        if matches.count > shown { message += "\n  ... and \(matches.count - shown) more" }
        throw UsageError(message, command: command)
    }

    /// A document as JSON: sorted keys, ISO-8601 dates, slashes unescaped.
    func encodeJSON(_ value: some Encodable, pretty: Bool = true) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
        } catch {
            throw RunFailure(code: .internalError, message: "could not encode the JSON output: \(error)")
        }
    }
}
