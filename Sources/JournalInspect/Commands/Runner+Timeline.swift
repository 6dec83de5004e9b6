import Foundation
import Outbox
import OutboxAudit

/// `timeline` and `export`: the proof of what happened to operations.
extension Runner {
    func timeline(_ options: TimelineOptions) throws -> ExitCode {
        let id = try resolve(options.id, command: .timeline)
        let timeline = try reader.timeline(of: id)
        let facts = try FactsReader(reader: reader, now: now, spanning: [timeline]).facts(of: timeline)
        if json {
            write(try encodeJSON(TimelineDocument(facts, includePayload: options.includePayload, moments: moments)))
        } else {
            write(TimelineText.render(facts, includePayload: options.includePayload, full: options.full, moments: moments,
                                      style: style))
        }
        return finish(damaged: timeline.damaged)
    }

    func export(_ options: ExportOptions) throws -> ExitCode {
        var ids: [OperationID] = []
        if options.all {
            ids = try reader.operationStates(matching: OperationQuery(limit: .max)).states.map(\.id).reversed()
        } else {
            for prefix in options.ids {
                let id = try resolve(prefix, command: .export)
                if !ids.contains(id) { ids.append(id) }
            }
        }
        var timelines: [OperationTimeline] = []
        var damaged: [Outbox.DamagedRecord] = []
        var unreadable: [OperationID] = []
        for id in ids {
            // With --all the ids come from the journal: one it holds nothing of is damage, not a usage error.
            guard let timeline = options.all ? try listedTimeline(id, unreadable: &unreadable) : try reader.timeline(of: id)
            else { continue }
            damaged += timeline.damaged
            timelines.append(timeline)
        }
        let facts = try FactsReader(reader: reader, now: now, spanning: timelines)
        let documents = try timelines.map { TimelineDocument(try facts.facts(of: $0), includePayload: options.includePayload, moments: moments) }
        let wanted = Set(ids)
        let ledger = try reader.ledger(LedgerQuery(limit: .max)).entries.filter { wanted.contains($0.operationID) }
        write(try encodeJSON(ExportDocument(exportedAt: now, journal: reader.path, payloadsIncluded: options.includePayload,
                                            operations: documents, ledger: ledger)))
        return finish(damaged: damaged + (options.all ? foldDamage : []), unreadable: unreadable)
    }
}
