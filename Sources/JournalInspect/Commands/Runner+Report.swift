import Foundation
import Outbox
import OutboxAudit

/// `report --html <file>`: the one file a ticket needs.
extension Runner {
    func report(_ options: ReportOptions) throws -> ExitCode {
        var output = OutputFile(path: options.htmlPath, force: options.force, journalDirectory: reader.path, label: "the report")
        output.calls = context.fileWriteCalls
        // Refused before anything is read: the same check runs again when the file is written.
        if let refusal = output.refusal() { throw refusal }
        var ids: [OperationID] = []
        if options.ids.isEmpty {
            ids = try reader.operationStates(matching: OperationQuery(limit: options.limit)).states.map(\.id)
        } else {
            for prefix in options.ids {
                let id = try resolve(prefix, command: .report)
                if !ids.contains(id) { ids.append(id) }
            }
        }
        let summary = try reader.summary(now: now)
        var timelines: [OperationTimeline] = []
        var damaged = summary.damaged + foldDamage
        var unreadable: [OperationID] = []
        for id in ids {
            // Without ids the list comes from the journal: one it holds nothing of is damage.
            guard let timeline = options.ids.isEmpty ? try listedTimeline(id, unreadable: &unreadable) : try reader.timeline(of: id)
            else { continue }
            damaged += timeline.damaged.filter { record in !damaged.contains { $0.seq == record.seq } }
            timelines.append(timeline)
        }
        let facts = try FactsReader(reader: reader, now: now, spanning: timelines)
        let html = HTMLReport.render(HTMLReportInput(
            summary: summary,
            depth: try reader.queueDepthHistory(maxSamples: 400),
            operations: try timelines.map(facts.facts(of:)),
            engine: facts.engine,
            moments: moments,
            damaged: damaged.sorted { $0.seq < $1.seq },
            attachments: try reader.attachments()
        ))
        let data = Data(html.utf8)
        try output.write(data)
        if json {
            write(try encodeJSON(ReportDocument(file: options.htmlPath, bytes: data.count, operations: timelines.count, damaged: damaged)))
        } else {
            write("Wrote \(options.htmlPath) (\(Moments.bytes(data.count))): the summary, the queue's depth over "
                + "\(summary.eventCount) events, and \(timelines.count) operation timeline\(timelines.count == 1 ? "" : "s").\n")
        }
        return finish(damaged: damaged, unreadable: unreadable)
    }
}
