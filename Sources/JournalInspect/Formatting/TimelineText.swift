import Foundation
import Outbox
import OutboxAudit

/// A timeline for people: the operation's fields, its events as aligned rows (with the restarts
/// and the compaction that explain them, and notes where the device clock jumped), the verdict.
package enum TimelineText {
    /// - Parameters:
    ///   - full: every row; otherwise a run of identical attempts is one row.
    package static func render(_ facts: OperationFacts, includePayload: Bool, full: Bool = false, moments: MomentFormat,
                              style: Style) -> String {
        let timeline = facts.timeline
        var text = fields(facts, includePayload: includePayload, moments: moments, style: style).render(style) + "\n"
        text += rows(facts, full: full, moments: moments, style: style)
        if includePayload, let payload = timeline.payload, !payload.isSealed {
            text += "\n" + style.paint("Payload", .bold) + "\n" + String(decoding: payload.payload, as: UTF8.self) + "\n"
        }
        text += "\n" + style.paint("Verdict:", .bold) + " " + Verdict.text(for: facts, moments: moments) + "\n"
        if !timeline.isComplete {
            text += style.paint("Incomplete:", .boldRed) + " \(timeline.damaged.count) of its records could not be read; "
                + (timeline.state == nil ? "no verdict can be proved.\n" : "the verdict follows the state the journal holds for it.\n")
        }
        return text
    }

    /// The header: what the write was, where it stands, and its payload's check.
    static func fields(_ facts: OperationFacts, includePayload: Bool, moments: MomentFormat, style: Style) -> FieldList {
        let timeline = facts.timeline
        var fields = FieldList()
        fields.add("Operation", timeline.id.idempotencyKey)
        if let state = timeline.state {
            if state.keptRequest {
                fields.add("Type", "\(state.operationType): \(state.method) \(state.endpoint)")
                fields.add("Label", "\"\(state.entityLabel)\", \(state.summary) [\(state.category)]")
                var owner = "business \(state.businessID), account \(state.account)"
                if let entity = state.entityID { owner += ", entity \(entity) (sent after earlier writes to it)" }
                fields.add("Belongs to", owner)
            } else {
                fields.add("Type", "\(state.operationType) (its method and endpoint were not kept)")
                fields.add("Label", "compacted before labels were kept: its label, summary, category, business, account and "
                    + "entity are not in the journal")
            }
            fields.add("Saved", "\(moments.both(state.createdAt)), seq \(state.firstSeq)")
            var status = style.paint(state.status.rawValue, Style.color(of: state.status))
                + ", \(state.attemptCount) attempt\(state.attemptCount == 1 ? "" : "s")"
            if let compactedAt = state.compactedAt {
                status += ", last changed \(moments.absolute(state.changedAt))"
                fields.add("Status", status)
                let seq = facts.compaction.map { " (seq \($0.seq))" } ?? ""
                fields.add("Details", "compacted on \(moments.absolute(compactedAt))\(seq): its events and payload were removed; "
                    + (state.keptRequest ? "what it was and how it ended were kept" : "its ledger row was kept"))
                if let event = facts.compaction, case .compacted(let compacted) = event.body {
                    fields.add("Digest", "SHA-256 \(compacted.digest.hex) over the \(compacted.removedCount) records removed then "
                        + "(seqs \(compacted.firstSeq)...\(compacted.lastSeq)): a copy of the journal taken before proves what they held")
                }
            } else {
                fields.add("Status", status)
            }
            for (name, value) in ChainText.fields(of: state) { fields.add(name, value) }
        } else {
            fields.add("Status", style.paint("unknown: no state of it could be read or folded from its events", .red))
        }
        fields.add("Payload", payload(facts, includePayload: includePayload, style: style))
        if !moments.isUTC {
            fields.add("Shown in", moments.zoneName(at: timeline.savedAt ?? moments.now))
        }
        return fields
    }

    private static func payload(_ facts: OperationFacts, includePayload: Bool, style: Style) -> String {
        let timeline = facts.timeline
        if let payload = timeline.payload, payload.isSealed {
            return "sealed: the journal is encrypted at rest; --key-file opens it and checks its SHA-256 "
                + "(recorded \(payload.recordedHash.hex))"
        }
        if let payload = timeline.payload {
            let check = payload.matches
                ? style.paint("matches", .green) + " the SHA-256 recorded when it was saved"
                : style.paint("DOES NOT MATCH", .boldRed)
                    + " the SHA-256 recorded when it was saved (\(payload.recordedHash.hex)): the stored bytes changed"
            return "\(payload.byteCount) bytes, SHA-256 \(payload.computedHash.hex), \(check)"
                + (includePayload ? "" : "; redacted (--payload shows it)")
        }
        if let state = timeline.state, state.compactedAt != nil {
            guard state.keptRequest else {
                return "compacted before labels were kept: neither the payload nor its size and SHA-256 are in the journal"
            }
            return "compacted: the payload itself is gone; it was \(state.payloadByteCount) bytes, SHA-256 \(state.requestHash.hex) "
                + "(recorded when it was saved)"
        }
        return style.paint("unreadable: the enqueued record is damaged", .red)
    }

    // MARK: Rows

    /// One line of the table, before runs are folded.
    private enum Line {
        case event(JournalEvent, gap: String, notes: [String])
        case damaged(Outbox.DamagedRecord)
    }

    /// The events, with damaged records in their place, the restarts and compaction that
    /// explain them, and a note wherever the device clock jumped.
    static func rows(_ facts: OperationFacts, full: Bool = false, moments: MomentFormat, style: Style) -> String {
        let timeline = facts.timeline
        let events = facts.events
        var table = TextTable(headers: ["SEQ", "MOMENT", "KIND", "ATTEMPT", "GAP", "OUTCOME", "DISPOSITION", "NEXT DUE", "ERROR"],
                              rightAligned: [0, 3])
        var lines: [Line] = []
        var previous: JournalEvent?
        for event in events {
            var notes: [String] = []
            if let previous, let change = ClockChange.between(previous, event) { notes.append(change.note(since: previous)) }
            if let restart = restartNote(before: event, facts: facts) { notes.append(restart) }
            lines.append(.event(event, gap: gap(before: event, facts: facts), notes: notes))
            previous = event
        }
        for record in timeline.damaged {
            let index = lines.firstIndex { line in
                if case .event(let event, _, _) = line { return event.seq > record.seq }
                return false
            } ?? lines.endIndex
            lines.insert(.damaged(record), at: index)
        }
        var index = 0
        while index < lines.count {
            if !full, let run = run(in: lines, from: index) {
                addRun(run, to: &table, moments: moments, style: style)
                index += run.count * 2
                continue
            }
            switch lines[index] {
            case .event(let event, let gap, let notes):
                table.add(cells(event, gap: gap, facts: facts, moments: moments))
                for note in notes { table.addNote(note, .yellow) }
                for note in attachmentNotes(event) { table.addNote(note) }
            case .damaged(let record):
                table.add([TextTable.Cell("\(record.seq)"), "-", TextTable.Cell("DAMAGED", .boldRed), "", "", "", "", "",
                           TextTable.Cell(record.reason, .red)])
            }
            index += 1
        }
        var text = table.render(style)
        if events.count > 1, events.contains(where: { $0.uptime == nil }) {
            text += "Gaps read the device clock: records before journal format 2 carry no uptime, so a clock set forward or "
                + "back reads as time passed.\n"
        }
        return text
    }

    /// Under an `enqueued` row, one line per file it carries: its manifest, readable, and the
    /// command that proves its upload.
    static func attachmentNotes(_ event: JournalEvent) -> [String] {
        guard case .enqueued(let enqueued) = event.body else { return [] }
        return enqueued.attachments.map { file in
            "attaches \(file.name): \(file.contentType), \(AttachmentText.size(file.size)), SHA-256 \(file.sha256.hex); "
                + "attachment \(file.id) ('attachment \(file.id.description.prefix(8))' proves its upload)"
        }
    }

    /// The cells of one event's row.
    private static func cells(_ event: JournalEvent, gap: String, facts: OperationFacts, moments: MomentFormat) -> [TextTable.Cell] {
        var attempt = ""
        var outcome = ""
        var disposition = TextTable.Cell("")
        var next = ""
        var error = ""
        switch event.body {
        case .enqueued(let enqueued):
            outcome = "saved, \(enqueued.request.payload.count) bytes"
            let files = enqueued.attachments.count
            if files > 0 { outcome += ", \(files) file\(files == 1 ? "" : "s") attached (below)" }
            if let supersedes = enqueued.supersedes { outcome += ", " + ChainText.replaces(supersedes) }
        case .attemptStarted(let started):
            attempt = "\(started.attempt)"
            outcome = "sending (woken by \(started.trigger))"
        case .attemptFinished(let finished):
            attempt = "\(finished.attempt)"
            outcome = EventText.outcome(finished.outcome)
            disposition = TextTable.Cell(finished.disposition.rawValue, Style.color(of: finished.disposition))
            next = finished.nextAttemptAt.map(moments.absolute) ?? ""
            error = EventText.error(code: finished.errorCode, message: finished.errorMessage)
            if let approval = finished.approvalRequestID { error = "approval request \(approval)" }
        case .attemptAbandoned(let abandoned):
            attempt = "\(abandoned.attempt)"
            outcome = "no outcome: the app ended"
            next = "due at once"
        case .withdrawn(let withdrawn):
            error = EventText.error(code: withdrawn.errorCode, message: withdrawn.errorMessage)
        case .attachmentGranted(let granted):
            outcome = "\(fileName(granted.attachment, facts)): upload granted, \(granted.segmentCount) segment"
                + "\(granted.segmentCount == 1 ? "" : "s") of \(granted.segmentSize) bytes for \(Moments.duration(granted.lifetimeSeconds))"
        case .segmentLanded(let landed):
            outcome = "\(fileName(landed.attachment, facts)): segment \(landed.segment.number) landed, \(landed.segment.size) bytes, "
                + "ETag \(landed.segment.etag)"
        case .attachmentCompleted(let completed):
            outcome = "\(fileName(completed.attachment, facts)): completed as \(completed.object), \(completed.size) bytes, "
                + "its SHA-256 the file's"
        case .attachmentRefused(let refused):
            outcome = "\(fileName(refused.attachment, facts)): refused" + (refused.statusCode.map { " (HTTP \($0))" } ?? " on the device")
                + "; the write is held, its file kept"
            error = EventText.error(code: refused.errorCode, message: refused.message.isEmpty ? nil : refused.message)
        case .journalOpened:
            outcome = facts.restarts.first { $0.opened.seq == event.seq }?.text ?? "the app started again"
        case .compacted(let compacted):
            outcome = "its events and payload removed: seqs \(compacted.firstSeq)...\(compacted.lastSeq) compacted "
                + "(\(compacted.removedCount) events of settled writes)"
        default:
            outcome = EventText.detail(event, moments: moments)
        }
        return [TextTable.Cell("\(event.seq)"), TextTable.Cell(moments.absolute(event.recordedAt)), TextTable.Cell(event.kind.rawValue),
                TextTable.Cell(attempt), TextTable.Cell(gap), TextTable.Cell(outcome), disposition, TextTable.Cell(next),
                TextTable.Cell(error)]
    }

    /// An attachment of the write by its name (`attachment 'attachment <id>'` proves it), or
    /// its id when the state does not know it.
    private static func fileName(_ id: AttachmentID, _ facts: OperationFacts) -> String {
        facts.state?.attachments.first { $0.id == id }.map { "\($0.manifest.name) (\(String($0.id.description.prefix(8))))" }
            ?? "attachment \(id)"
    }

    /// The GAP of an attempt's start: the time since the previous attempt ended (or started,
    /// when it was cut off: its abandonment is written at the next start), by the uptime when it
    /// can.
    static func gap(before event: JournalEvent, facts: OperationFacts) -> String {
        previousAttempt(before: event, facts: facts).map { Elapsed.between($0, event).gapText } ?? ""
    }

    /// The note under an attempt's start when the app restarted since the previous attempt: how
    /// much of the gap the app was not running, at most.
    static func restartNote(before event: JournalEvent, facts: OperationFacts) -> String? {
        guard let reference = previousAttempt(before: event, facts: facts) else { return nil }
        let restarts = facts.restarts.filter { reference.seq < $0.opened.seq && $0.opened.seq < event.seq }
        guard !restarts.isEmpty else { return nil }
        let down = restarts.compactMap { $0.downtime?.seconds }
        guard down.count == restarts.count else {
            return "the app started again during this gap; how long it was not running is unknown (the device clock was moved back)"
        }
        return "the app was not running for at most \(Moments.duration(down.reduce(0, +))) of this gap (at most: it may have run "
            + "a while without writing anything)"
    }

    /// The event the GAP of the attempt `event` starts counts from.
    private static func previousAttempt(before event: JournalEvent, facts: OperationFacts) -> JournalEvent? {
        guard case .attemptStarted(let started) = event.body else { return nil }
        let attempts = facts.timeline.attempts
        guard let index = attempts.firstIndex(where: { $0.number == started.attempt && $0.startedSeq == event.seq }), index > 0 else {
            return nil
        }
        let before = attempts[index - 1]
        let referenceSeq = before.wasAbandoned ? before.startedSeq : (before.endedSeq ?? before.startedSeq)
        return facts.timeline.events.first { $0.seq == referenceSeq }
    }

    /// The run of identical attempts that starts at `lines[index]`: at least ``AttemptRun/shortest``
    /// start-and-finish pairs in a row, none with a note (a clock's jump is shown on its row).
    private static func run(in lines: [Line], from index: Int) -> [(started: JournalEvent, finished: JournalEvent, gap: String)]? {
        var pairs: [(started: JournalEvent, finished: JournalEvent, gap: String)] = []
        var cursor = index
        while cursor + 1 < lines.count,
            case .event(let start, let gap, let startNotes) = lines[cursor], case .attemptStarted(let started) = start.body,
            startNotes.isEmpty,
            case .event(let end, _, let endNotes) = lines[cursor + 1], endNotes.isEmpty,
            case .attemptFinished(let finished) = end.body, finished.attempt == started.attempt
        {
            if let first = pairs.first, case .attemptFinished(let model) = first.finished.body, !AttemptRun.sameAnswer(model, finished) {
                break
            }
            pairs.append((start, end, gap))
            cursor += 2
        }
        return pairs.count >= AttemptRun.shortest ? pairs : nil
    }

    /// One row for a run of identical attempts, and a note that says so.
    private static func addRun(_ pairs: [(started: JournalEvent, finished: JournalEvent, gap: String)], to table: inout TextTable,
                               moments: MomentFormat, style: Style) {
        guard let first = pairs.first, let last = pairs.last, case .attemptFinished(let finished) = last.finished.body,
            case .attemptStarted(let firstStart) = first.started.body
        else { return }
        let gaps = pairs.dropFirst().map(\.gap).filter { !$0.isEmpty }
        var gap = first.gap
        if let shortest = gaps.first, let longest = gaps.last { gap = shortest == longest ? shortest : "\(shortest) to \(longest)" }
        table.add([
            TextTable.Cell("\(first.started.seq)-\(last.finished.seq)"), TextTable.Cell(moments.absolute(first.started.recordedAt)),
            TextTable.Cell("\(pairs.count) attempts"), TextTable.Cell("\(firstStart.attempt)-\(finished.attempt)"), TextTable.Cell(gap),
            TextTable.Cell("\(EventText.outcome(finished.outcome)) each, the last at \(moments.absolute(last.started.recordedAt))"),
            TextTable.Cell(finished.disposition.rawValue, Style.color(of: finished.disposition)),
            TextTable.Cell(finished.nextAttemptAt.map(moments.absolute) ?? ""),
            TextTable.Cell(EventText.error(code: finished.errorCode, message: finished.errorMessage)),
        ])
        table.addNote("attempts \(firstStart.attempt) to \(finished.attempt) met the same answer: \(pairs.count * 2) events in one row "
            + "(--full shows each)")
    }
}
