package import Foundation
package import Outbox
package import OutboxAudit

/// What a report shows.
package struct HTMLReportInput: Sendable {
    package var summary: JournalSummary
    /// The queue's depth after each operation event, thinned.
    package var depth: [QueueDepthSample]
    /// Each operation drawn, with what explains it.
    package var operations: [OperationFacts]
    package var engine: EngineState
    /// The zone moments print in, and the moment the report is as of.
    package var moments: MomentFormat
    /// Damaged records the report met.
    package var damaged: [Outbox.DamagedRecord]
    /// Every attachment the journal holds a manifest of, in journal order (their files looked
    /// at for presence and size).
    package var attachments: [AttachmentProof]

    package var generatedAt: Date { moments.now }

    package init(summary: JournalSummary, depth: [QueueDepthSample], operations: [OperationFacts], engine: EngineState,
                moments: MomentFormat, damaged: [Outbox.DamagedRecord], attachments: [AttachmentProof] = []) {
        self.attachments = attachments
        self.summary = summary
        self.depth = depth
        self.operations = operations
        self.engine = engine
        self.moments = moments
        self.damaged = damaged
    }
}

/// One self-contained HTML file: inline CSS and SVG, no scripts, no outside assets. Every piece
/// of text from the journal is escaped.
package enum HTMLReport {
    package static func render(_ input: HTMLReportInput) -> String {
        let summary = input.summary
        let moments = input.moments
        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Outbox journal report: \(escape(summary.account ?? summary.path))</title>
            <style>\(css)</style>
            </head>
            <body>
            <h1>Outbox journal report</h1>
            <p class="meta">Generated \(escape(moments.absolute(input.generatedAt))) by journal-inspect \(escape(JournalInspect.version)) \
            from <code>\(escape(summary.path))</code>. Read-only: the journal was not changed. Payloads are not included.</p>

            """
        if !input.damaged.isEmpty {
            html += "<p class=\"warning\">\(input.damaged.count) damaged record\(input.damaged.count == 1 ? "" : "s") could not be read "
                + "(seq \(escape(input.damaged.map { "\($0.seq)" }.joined(separator: ", ")))); what follows leaves them out. "
                + "Run <code>journal-inspect verify</code> for every finding.</p>\n"
        }
        html += summarySection(summary, engine: input.engine, moments: moments)
        html += depthSection(input.depth, moments: moments)
        html += attachmentsSection(input.attachments, shown: Set(input.operations.map(\.id)), moments: moments)
        html += operationsSection(input.operations, moments: moments)
        html += "</body>\n</html>\n"
        return html
    }

    /// Text safe in HTML content and attribute values.
    package static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    // MARK: Sections

    static func summarySection(_ summary: JournalSummary, engine: EngineState, moments: MomentFormat) -> String {
        let now = moments.now
        var rows: [(String, String)] = [
            ("Journal", summary.path),
            ("Format", "journal format \(summary.formatVersion), projections layout \(summary.projectionVersion.map { "\($0)" } ?? "none")"),
            ("Account", summary.account ?? "-"),
            ("Events", summary.firstSeq.map { "seq \($0)...\(summary.lastSeq): \(summary.eventCount) events" } ?? "none"),
            ("On disk", "data.mdb \(Moments.bytes(summary.fileBytes)) (\(Moments.bytes(summary.usedBytes)) in use)"),
            ("Last event", summary.lastEventAt.map { moments.both($0) } ?? "-"),
        ]
        if engine.isPaused {
            rows.append(("Worker", "paused: \(engine.pauseReason ?? "unauthorized")"
                + (engine.pausedAt.map { " since \(moments.both($0))" } ?? "")))
        } else {
            rows.append(("Worker", "not paused"))
        }
        if let oldest = summary.oldestPending {
            let waited = now.timeIntervalSince(oldest.createdAt)
            rows.append(("Oldest pending", "\(EventText.shortID(oldest.id)) \"\(oldest.entityLabel)\", \(oldest.status.rawValue), "
                + (waited >= 0 ? "waiting \(Moments.duration(waited))" : "saved \(moments.absolute(oldest.createdAt))")))
        }
        if !moments.isUTC { rows.append(("Shown in", moments.zoneName(at: summary.lastEventAt ?? now))) }
        var html = "<section>\n<h2>Summary</h2>\n<div class=\"columns\">\n<table class=\"fields\">\n"
        for (label, value) in rows {
            html += "<tr><th>\(escape(label))</th><td>\(escape(value))</td></tr>\n"
        }
        html += "</table>\n<table class=\"counts\">\n<tr><th>Status</th><th>Operations</th></tr>\n"
        for status in OutboxStatus.allCases {
            html += "<tr><td><span class=\"status s-\(status.rawValue)\">\(escape(status.rawValue))</span></td>"
                + "<td class=\"n\">\(summary.statusCounts[status] ?? 0)</td></tr>\n"
        }
        html += "<tr><th>total</th><td class=\"n\">\(summary.operationCount)</td></tr>\n</table>\n</div>\n</section>\n"
        return html
    }

    /// A line chart of the pending count, event by event: the x axis is journal order (seq), the
    /// only order that counts; the first and last moments label it.
    static func depthSection(_ samples: [QueueDepthSample], moments: MomentFormat) -> String {
        var html = "<section>\n<h2>Queue depth over the journal's life</h2>\n"
        guard let first = samples.first, let last = samples.last else {
            return html + "<p>No operation events yet.</p>\n</section>\n"
        }
        let width = 800.0, height = 220.0, left = 48.0, right = 16.0, top = 12.0, bottom = 40.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let highest = max(1, samples.map(\.pending).max() ?? 1)
        func x(_ index: Int) -> Double {
            samples.count == 1 ? left + plotWidth / 2 : left + plotWidth * Double(index) / Double(samples.count - 1)
        }
        func y(_ pending: Int) -> Double { top + plotHeight * (1 - Double(pending) / Double(highest)) }
        var path = ""
        for (index, sample) in samples.enumerated() {
            path += (index == 0 ? "M" : " L") + format(x(index)) + " " + format(y(sample.pending))
        }
        html += "<svg class=\"chart\" viewBox=\"0 0 \(format(width)) \(format(height))\" role=\"img\" "
            + "aria-label=\"Operations not yet final after each event\">\n"
        html += "<line class=\"axis\" x1=\"\(format(left))\" y1=\"\(format(top + plotHeight))\" x2=\"\(format(left + plotWidth))\" y2=\"\(format(top + plotHeight))\"/>\n"
        html += "<line class=\"axis\" x1=\"\(format(left))\" y1=\"\(format(top))\" x2=\"\(format(left))\" y2=\"\(format(top + plotHeight))\"/>\n"
        html += "<text class=\"tick\" x=\"\(format(left - 6))\" y=\"\(format(top + 4))\" text-anchor=\"end\">\(highest)</text>\n"
        html += "<text class=\"tick\" x=\"\(format(left - 6))\" y=\"\(format(top + plotHeight + 4))\" text-anchor=\"end\">0</text>\n"
        html += "<path class=\"depth\" d=\"\(path)\"/>\n"
        for (index, sample) in samples.enumerated() {
            html += "<circle class=\"sample\" cx=\"\(format(x(index)))\" cy=\"\(format(y(sample.pending)))\" r=\"2\">"
                + "<title>seq \(sample.seq), \(escape(moments.absolute(sample.recordedAt))): \(sample.pending) waiting</title></circle>\n"
        }
        html += "<text class=\"tick\" x=\"\(format(left))\" y=\"\(format(height - 20))\">seq \(first.seq), \(escape(moments.absolute(first.recordedAt)))</text>\n"
        html += "<text class=\"tick\" x=\"\(format(left + plotWidth))\" y=\"\(format(height - 20))\" text-anchor=\"end\">seq \(last.seq), \(escape(moments.absolute(last.recordedAt)))</text>\n"
        html += "<text class=\"tick\" x=\"\(format(left + plotWidth / 2))\" y=\"\(format(height - 4))\" text-anchor=\"middle\">journal order (seq)</text>\n"
        html += "</svg>\n<p class=\"note\">Operations not yet final (queued, syncing, waiting for approval, failed or blocked) "
            + "after each event, highest \(highest), now \(last.pending).</p>\n</section>\n"
        return html
    }

    /// The most attachments the section lists.
    static let attachmentRows = 500

    /// Every attached file: its name, size, write and where its upload stands; nothing when the
    /// journal holds none.
    static func attachmentsSection(_ attachments: [AttachmentProof], shown: Set<OperationID>, moments: MomentFormat) -> String {
        guard !attachments.isEmpty else { return "" }
        var html = "<section>\n<h2>Attachments</h2>\n<table class=\"attachments\">\n"
            + "<tr><th>name</th><th>size</th><th>write</th><th>state</th><th>verdict</th></tr>\n"
        for proof in attachments.suffix(attachmentRows) {
            let write = EventText.shortID(proof.operationID)
            let link = shown.contains(proof.operationID)
                ? "<a href=\"#op-\(escape(proof.operationID.idempotencyKey))\"><code>\(escape(write))</code></a>"
                : "<code>\(escape(write))</code>"
            let standing = AttachmentStanding(proof)
            html += "<tr><td title=\"\(escape("\(proof.manifest.id)"))\">\(escape(proof.manifest.name))</td>"
                + "<td class=\"n\">\(escape(AttachmentText.size(proof.manifest.size)))</td>"
                + "<td>\(link) <span class=\"status s-\(escape(proof.operationStatus.rawValue))\">\(escape(proof.operationStatus.rawValue))</span></td>"
                + "<td><span class=\"a-\(escape(standing.rawValue))\">\(escape(stateText(proof, standing)))</span></td>"
                + "<td>\(escape(AttachmentText.verdict(proof, moments: moments)))</td></tr>\n"
        }
        html += "</table>\n"
        if attachments.count > attachmentRows {
            html += "<p class=\"note\">The last \(attachmentRows) of \(attachments.count) attachments are listed.</p>\n"
        }
        html += "<p class=\"note\">Each file was looked at for its presence and size; <code>journal-inspect &lt;journal&gt; attachment "
            + "&lt;id&gt;</code> hashes one, <code>verify</code> every one a write still needs.</p>\n</section>\n"
        return html
    }

    /// `uploading 3 of 5 segments`, `completed`, `refused (attachment_refused)`, `file missing`.
    static func stateText(_ proof: AttachmentProof, _ standing: AttachmentStanding) -> String {
        switch standing {
        case .completed: return "completed"
        case .refused: return "refused (\(proof.refusedCode ?? "refused"))"
        case .fileMissing: return "file missing"
        case .fileDamaged: return "file damaged"
        case .notUploaded: return "not uploaded"
        case .uploading:
            guard let count = proof.segmentCount else { return "uploading, not granted yet" }
            return "uploading \(proof.landedSegments.count) of \(count) segment\(count == 1 ? "" : "s")"
        }
    }

    static func operationsSection(_ operations: [OperationFacts], moments: MomentFormat) -> String {
        var html = "<section>\n<h2>Operations</h2>\n"
        guard !operations.isEmpty else { return html + "<p>No operations.</p>\n</section>\n" }
        html += legend
        for facts in operations {
            html += operationArticle(facts, moments: moments)
        }
        return html + "</section>\n"
    }

    static func operationArticle(_ facts: OperationFacts, moments: MomentFormat) -> String {
        let timeline = facts.timeline
        let state = timeline.state
        let status = state?.status.rawValue ?? "unknown"
        var html = "<article class=\"op\" id=\"op-\(escape(timeline.id.idempotencyKey))\">\n"
        html += "<h3><code>\(escape(EventText.shortID(timeline.id)))</code> \(escape(state.map(OperationsText.label) ?? "(unreadable)")) "
            + "<span class=\"type\">\(escape(state?.operationType ?? ""))</span> "
            + "<span class=\"status s-\(escape(status))\">\(escape(status))</span></h3>\n"
        html += "<p class=\"verdict\">\(escape(Verdict.text(for: facts, moments: moments)))</p>\n"
        if let state {
            let request = state.keptRequest ? "\(escape(state.method)) \(escape(state.endpoint)) · " : ""
            html += "<p class=\"meta\">\(escape(timeline.id.idempotencyKey)) · \(request)"
                + "saved \(escape(moments.both(state.createdAt))) · seq \(state.firstSeq)"
                + (state.compactedAt.map { " · details compacted on \(escape(moments.absolute($0)))" } ?? "") + "</p>\n"
        }
        if let state, state.compactedAt != nil {
            // Its attempts went with its events: what was kept of them is a sentence, not a line.
            html += "<p class=\"note\">\(state.attemptCount) attempt\(state.attemptCount == 1 ? "" : "s"), the last "
                + "\(escape(state.latestOutcome?.rawValue ?? "none")); their events were removed by the compaction below.</p>\n"
        } else {
            html += attemptLine(facts, moments: moments)
        }
        let events = facts.events
        html += "<details><summary>\(events.count) event\(events.count == 1 ? "" : "s")\(timeline.damaged.isEmpty ? "" : ", \(timeline.damaged.count) damaged")</summary>\n"
        html += "<table class=\"events\">\n<tr><th>seq</th><th>moment</th><th>kind</th><th>details</th></tr>\n"
        var rows: [(JournalSequence, String)] = events.map { event in
            let detail = facts.restarts.first { $0.opened.seq == event.seq }?.text ?? EventText.detail(event, moments: moments)
            return (event.seq, "<tr><td class=\"n\">\(event.seq)</td><td>\(escape(moments.absolute(event.recordedAt)))</td>"
                + "<td>\(escape(event.kind.rawValue))</td><td>\(escape(detail))</td></tr>\n")
        }
        rows += timeline.damaged.map { record in
            (record.seq, "<tr class=\"damaged\"><td class=\"n\">\(record.seq)</td><td>-</td><td>DAMAGED</td><td>\(escape(record.reason))</td></tr>\n")
        }
        html += rows.sorted { $0.0 < $1.0 }.map(\.1).joined()
        html += "</table>\n</details>\n</article>\n"
        return html
    }

    /// The operation as a line: saved, then each attempt as a dot coloured by its outcome, the
    /// gap before it above the line, then where it stands.
    static func attemptLine(_ facts: OperationFacts, moments: MomentFormat) -> String {
        let timeline = facts.timeline
        let step = 96.0, left = 28.0, middle = 34.0
        let attempts = timeline.attempts
        let count = attempts.count + 2
        let width = left * 2 + step * Double(count - 1)
        var svg = "<div class=\"line\"><svg viewBox=\"0 0 \(format(width)) 72\" width=\"\(format(width))\" height=\"72\" role=\"img\" "
            + "aria-label=\"\(attempts.count) attempts\">\n"
        svg += "<line class=\"track\" x1=\"\(format(left))\" y1=\"\(format(middle))\" x2=\"\(format(width - left))\" y2=\"\(format(middle))\"/>\n"
        // Saved.
        svg += "<rect class=\"saved\" x=\"\(format(left - 6))\" y=\"\(format(middle - 6))\" width=\"12\" height=\"12\">"
            + "<title>saved\(timeline.savedAt.map { " " + moments.absolute($0) } ?? "")</title></rect>\n"
        svg += "<text class=\"label\" x=\"\(format(left))\" y=\"\(format(middle + 24))\" text-anchor=\"middle\">saved</text>\n"
        for (index, attempt) in attempts.enumerated() {
            let x = left + step * Double(index + 1)
            let outcomeClass: String
            let label: String
            if attempt.wasAbandoned {
                (outcomeClass, label) = ("o-abandoned", "cut off")
            } else if let disposition = attempt.disposition, let outcome = attempt.outcome {
                (outcomeClass, label) = ("o-\(disposition.rawValue)", EventText.shortOutcome(outcome))
            } else {
                (outcomeClass, label) = ("o-inflight", "in flight")
            }
            var tip = "attempt \(attempt.number), started \(moments.absolute(attempt.startedAt)) (woken by \(attempt.trigger))"
            if let disposition = attempt.disposition { tip += ": \(label) -> \(disposition.rawValue)" }
            let error = EventText.error(code: attempt.errorCode, message: attempt.errorMessage)
            if !error.isEmpty { tip += "; \(error)" }
            if let next = attempt.nextAttemptAt { tip += "; next at \(moments.absolute(next))" }
            let start = timeline.events.first { $0.seq == attempt.startedSeq }
            if let start, let restart = TimelineText.restartNote(before: start, facts: facts) { tip += "; \(restart)" }
            svg += "<circle class=\"attempt \(outcomeClass)\" cx=\"\(format(x))\" cy=\"\(format(middle))\" r=\"9\"><title>\(escape(tip))</title></circle>\n"
            svg += "<text class=\"number\" x=\"\(format(x))\" y=\"\(format(middle + 4))\" text-anchor=\"middle\">\(attempt.number)</text>\n"
            svg += "<text class=\"label\" x=\"\(format(x))\" y=\"\(format(middle + 24))\" text-anchor=\"middle\">\(escape(label))</text>\n"
            if let start {
                let gap = TimelineText.gap(before: start, facts: facts)
                if !gap.isEmpty {
                    svg += "<text class=\"gap\" x=\"\(format(x - step / 2))\" y=\"\(format(middle - 14))\" text-anchor=\"middle\">\(escape(gap))</text>\n"
                }
            }
        }
        let endX = left + step * Double(count - 1)
        let status = timeline.state?.status.rawValue ?? "unknown"
        svg += "<path class=\"end s-\(escape(status))\" d=\"M\(format(endX)) \(format(middle - 9)) L\(format(endX + 9)) \(format(middle)) "
            + "L\(format(endX)) \(format(middle + 9)) L\(format(endX - 9)) \(format(middle)) Z\"><title>\(escape(status))</title></path>\n"
        svg += "<text class=\"label\" x=\"\(format(endX))\" y=\"\(format(middle + 24))\" text-anchor=\"middle\">\(escape(status))</text>\n"
        return svg + "</svg></div>\n"
    }

    static let legend: String = {
        let entries: [(String, String)] = [
            ("o-accepted", "accepted"), ("o-replayed", "replayed"), ("o-pending_approval", "held for approval"),
            ("o-transient_failure", "will retry"), ("o-unauthorized", "401, paused"), ("o-rejected", "rejected"),
            ("o-blocked", "blocked"), ("o-abandoned", "cut off"), ("o-inflight", "in flight"),
        ]
        var svg = "<p class=\"legend\">"
        for (cssClass, label) in entries {
            svg += "<span><svg width=\"14\" height=\"14\" viewBox=\"0 0 14 14\"><circle class=\"attempt \(cssClass)\" cx=\"7\" cy=\"7\" r=\"6\"/></svg> \(label)</span> "
        }
        return svg + "</p>\n"
    }()

    private static func format(_ value: Double) -> String {
        String(format: "%.1f", value)
    }

    static let css = """
        body{font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#1d2329;margin:2rem auto;max-width:72rem;padding:0 1rem}
        h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;border-bottom:1px solid #dde2e7;padding-bottom:.2rem;margin-top:2rem}
        h3{font-size:1rem;margin:.2rem 0}code{font-family:ui-monospace,Menlo,Consolas,monospace}
        .meta,.note{color:#5b6670;font-size:.9em}.warning{background:#fff1f0;border:1px solid #e5534b;padding:.5rem .8rem}
        .columns{display:flex;gap:2rem;flex-wrap:wrap}table{border-collapse:collapse}th,td{text-align:left;padding:.15rem .6rem;vertical-align:top}
        .fields th{color:#5b6670;font-weight:600}.n{text-align:right;font-variant-numeric:tabular-nums}
        .status{display:inline-block;border-radius:.6rem;padding:0 .5rem;font-size:.85em;color:#fff;background:#8a949e}
        .s-synced{background:#2e8540}.s-queued{background:#b7791f}.s-syncing{background:#2b6cb0}.s-pending_approval{background:#1f8a99}
        .s-failed{background:#d64545}.s-blocked{background:#9b1c1c}.s-withdrawn,.s-discarded,.s-unknown{background:#8a949e}
        path.end.s-synced{fill:#2e8540}path.end.s-queued{fill:#b7791f}path.end.s-syncing{fill:#2b6cb0}path.end.s-pending_approval{fill:#1f8a99}
        path.end.s-failed{fill:#d64545}path.end.s-blocked{fill:#9b1c1c}path.end.s-withdrawn,path.end.s-discarded,path.end.s-unknown{fill:#8a949e}
        .chart{width:100%;max-width:800px;height:auto}.axis{stroke:#8a949e;stroke-width:1}.depth{fill:none;stroke:#2b6cb0;stroke-width:2}
        .sample{fill:#2b6cb0}.tick,.label,.gap{font-size:11px;fill:#5b6670}.number{font-size:10px;fill:#fff;font-weight:700}
        .op{border:1px solid #dde2e7;border-radius:.4rem;padding:.6rem .9rem;margin:.8rem 0}.type{color:#5b6670;font-weight:400;font-size:.9em}
        .verdict{font-weight:600;margin:.3rem 0}.line{overflow-x:auto}.track{stroke:#c4ccd4;stroke-width:2}.saved{fill:#5b6670}
        .attempt{stroke:#fff;stroke-width:1.5}.o-accepted,.o-replayed{fill:#2e8540}.o-pending_approval{fill:#1f8a99}
        .o-transient_failure{fill:#d69e2e}.o-unauthorized{fill:#805ad5}.o-rejected{fill:#d64545}.o-blocked{fill:#9b1c1c}
        .o-abandoned{fill:#a0aec0}.o-inflight{fill:#2b6cb0}.legend span{margin-right:1rem;white-space:nowrap}.legend svg{vertical-align:middle}
        .events td,.events th{font-size:.9em;border-bottom:1px solid #eef1f4}.damaged td{color:#d64545}
        .attachments td,.attachments th{font-size:.9em;border-bottom:1px solid #eef1f4}.a-completed{color:#2e8540;font-weight:600}
        .a-refused,.a-file_missing,.a-file_damaged{color:#d64545;font-weight:600}.a-uploading{color:#b7791f;font-weight:600}
        """
}
