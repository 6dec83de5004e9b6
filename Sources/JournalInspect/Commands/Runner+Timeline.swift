public import Foundation
public import Outbox

/// `timeline` and `export`: the proof of what happened to operations.
extension Runner {
    func timeline(_ options: TimelineOptions) throws -> ExitCode {
        let id = try resolve(options.id, command: .timeline)
        let timeline = try reader.timeline(of: id)
        let engine = try reader.engineState()
        if json {
            write(try encodeJSON(TimelineDocument(timeline, engine: engine, includePayload: options.includePayload)))
        } else {
            write(TimelineText.render(timeline, engine: engine, includePayload: options.includePayload, now: now, style: style))
        }
        return finish(damaged: timeline.damaged)
    }

    func export(_ options: ExportOptions) throws -> ExitCode {
        var ids: [OperationID] = []
        if options.all {
            ids = try reader.operations(matching: OperationQuery(limit: .max)).map(\.id).reversed()
        } else {
            for prefix in options.ids {
                let id = try resolve(prefix, command: .export)
                if !ids.contains(id) { ids.append(id) }
            }
        }
        let engine = try reader.engineState()
        var timelines: [TimelineDocument] = []
        var damaged: [DamagedRecord] = []
        var unreadable: [OperationID] = []
        for id in ids {
            // With --all the ids come from the journal: one it holds nothing of is damage, not a usage error.
            guard let timeline = options.all ? try listedTimeline(id, unreadable: &unreadable) : try reader.timeline(of: id)
            else { continue }
            damaged += timeline.damaged
            timelines.append(TimelineDocument(timeline, engine: engine, includePayload: options.includePayload))
        }
        let wanted = Set(ids)
        let ledger = try reader.ledger(LedgerQuery(limit: .max)).filter { wanted.contains($0.operationID) }
        write(try encodeJSON(ExportDocument(exportedAt: now, journal: reader.path, payloadsIncluded: options.includePayload,
                                            operations: timelines, ledger: ledger)))
        return finish(damaged: damaged + (options.all ? foldDamage : []), unreadable: unreadable)
    }
}

/// A timeline for people: the operation's fields, its events as aligned rows, the verdict.
public enum TimelineText {
    public static func render(_ timeline: OperationTimeline, engine: EngineState, includePayload: Bool, now: Date,
                              style: Style) -> String {
        var fields = FieldList()
        fields.add("Operation", timeline.id.idempotencyKey)
        if let state = timeline.state {
            fields.add("Type", "\(state.operationType): \(state.method) \(state.endpoint)")
            fields.add("Label", "\"\(state.entityLabel)\", \(state.summary) [\(state.category)]")
            var owner = "business \(state.businessID), account \(state.account)"
            if let entity = state.entityID { owner += ", entity \(entity) (sent after earlier writes to it)" }
            fields.add("Belongs to", owner)
            fields.add("Saved", "\(Moments.both(state.createdAt, now: now)), seq \(state.firstSeq)")
            fields.add("Status", style.paint(state.status.rawValue, Style.color(of: state.status))
                + ", \(state.attemptCount) attempt\(state.attemptCount == 1 ? "" : "s")")
            for (name, value) in ChainText.fields(of: state) { fields.add(name, value) }
        } else {
            fields.add("Status", style.paint("unknown: no state of it could be read or folded from its events", .red))
        }
        if let payload = timeline.payload, payload.isSealed {
            fields.add("Payload", "sealed: the journal is encrypted at rest; --key-file opens it and checks its SHA-256 "
                + "(recorded \(payload.recordedHash.hex))")
        } else if let payload = timeline.payload {
            let check = payload.matches
                ? style.paint("matches", .green) + " the SHA-256 recorded when it was saved"
                : style.paint("DOES NOT MATCH", .boldRed) + " the SHA-256 recorded when it was saved (\(payload.recordedHash.hex)): the stored bytes changed"
            fields.add("Payload", "\(payload.byteCount) bytes, SHA-256 \(payload.computedHash.hex), \(check)"
                + (includePayload ? "" : "; redacted (--payload shows it)"))
        } else {
            fields.add("Payload", style.paint("unreadable: the enqueued record is damaged", .red))
        }
        var text = fields.render(style) + "\n"
        text += rows(timeline, style: style)
        if includePayload, let payload = timeline.payload, !payload.isSealed {
            text += "\n" + style.paint("Payload", .bold) + "\n" + String(decoding: payload.payload, as: UTF8.self) + "\n"
        }
        text += "\n" + style.paint("Verdict:", .bold) + " " + Verdict.text(for: timeline, engine: engine) + "\n"
        if !timeline.isComplete {
            text += style.paint("Incomplete:", .boldRed) + " \(timeline.damaged.count) of its records could not be read; "
                + (timeline.state == nil ? "no verdict can be proved.\n" : "the verdict follows the state the journal holds for it.\n")
        }
        return text
    }

    /// The events, with damaged records in their place.
    static func rows(_ timeline: OperationTimeline, style: Style) -> String {
        var table = TextTable(headers: ["SEQ", "MOMENT", "KIND", "ATTEMPT", "GAP", "OUTCOME", "DISPOSITION", "NEXT DUE", "ERROR"],
                              rightAligned: [0, 3])
        let gaps = Dictionary(timeline.attempts.map { ($0.startedSeq, $0.secondsSincePreviousAttempt) }, uniquingKeysWith: { a, _ in a })
        var damaged = timeline.damaged[...]
        func addDamaged(before seq: JournalSequence?) {
            while let record = damaged.first, seq.map({ record.seq < $0 }) ?? true {
                table.add([TextTable.Cell("\(record.seq)"), "-", TextTable.Cell("DAMAGED", .boldRed), "", "", "", "", "",
                           TextTable.Cell(record.reason, .red)])
                damaged = damaged.dropFirst()
            }
        }
        for event in timeline.events {
            addDamaged(before: event.seq)
            var attempt = ""
            var gap = ""
            var outcome = ""
            var disposition = TextTable.Cell("")
            var next = ""
            var error = ""
            switch event.body {
            case .enqueued(let enqueued):
                outcome = "saved, \(enqueued.request.payload.count) bytes"
                if let supersedes = enqueued.supersedes { outcome += ", " + ChainText.replaces(supersedes) }
            case .attemptStarted(let started):
                attempt = "\(started.attempt)"
                if let seconds = gaps[event.seq] ?? nil { gap = "+" + Moments.duration(seconds) }
                outcome = "sending (woken by \(started.trigger))"
            case .attemptFinished(let finished):
                attempt = "\(finished.attempt)"
                outcome = EventText.outcome(finished.outcome)
                disposition = TextTable.Cell(finished.disposition.rawValue, Style.color(of: finished.disposition))
                next = finished.nextAttemptAt.map(Moments.absolute) ?? ""
                error = EventText.error(code: finished.errorCode, message: finished.errorMessage)
                if let approval = finished.approvalRequestID { error = "approval request \(approval)" }
            case .attemptAbandoned(let abandoned):
                attempt = "\(abandoned.attempt)"
                outcome = "no outcome: the app ended"
                next = "due at once"
            case .withdrawn(let withdrawn):
                error = EventText.error(code: withdrawn.errorCode, message: withdrawn.errorMessage)
            default:
                outcome = EventText.detail(event)
            }
            table.add([TextTable.Cell("\(event.seq)"), TextTable.Cell(Moments.absolute(event.recordedAt)),
                       TextTable.Cell(event.kind.rawValue), TextTable.Cell(attempt), TextTable.Cell(gap), TextTable.Cell(outcome),
                       disposition, TextTable.Cell(next), TextTable.Cell(error)])
        }
        addDamaged(before: nil)
        return table.render(style)
    }
}

/// The chains an operation is part of, in words: what it replaces, what replaced it, what it
/// waits for.
enum ChainText {
    /// The timeline's fields for `state`'s chains; none for a write in no chain.
    static func fields(of state: OperationState) -> [(String, String)] {
        var fields: [(String, String)] = []
        if let supersedes = state.supersedes { fields.append(("Replaces", replaces(supersedes))) }
        if let by = state.supersededBy {
            fields.append(("Replaced by", "\(by.idempotencyKey) (\(reason(state.supersededReason)))"))
        }
        if !state.dependsOn.isEmpty {
            let ids = state.dependsOn.map(\.idempotencyKey).joined(separator: ", ")
            fields.append(("Depends on", "\(ids) (sent only once \(state.dependsOn.count == 1 ? "it is" : "each is") synced)"))
        }
        if let ended = state.endedDependency {
            fields.append(("Held by", "\(ended.idempotencyKey), which it depends on, ended unapplied: a person decides"))
        }
        return fields
    }

    /// "corrects 1A2B3C4D (...)": the enqueue of a write that replaces another.
    static func replaces(_ supersedes: Supersession) -> String {
        "\(verb(supersedes.reason)) \(EventText.shortID(supersedes.operation))"
    }

    private static func verb(_ reason: SupersedeReason) -> String {
        switch reason {
        case .revised: "corrects"
        case .resolvedMine: "resolves the conflict of"
        case .coalesced: "coalesces"
        }
    }

    private static func reason(_ reason: SupersedeReason?) -> String {
        switch reason {
        case .revised?: "the member corrected it"
        case .resolvedMine?: "the member chose their version over the server's"
        case .coalesced?: "coalesced into a newer write of the same record before it was sent"
        case nil: "replaced"
        }
    }
}
