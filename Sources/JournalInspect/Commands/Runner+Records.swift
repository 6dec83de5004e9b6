import Foundation
import Outbox
import OutboxAudit

/// `record` and `records`: the member's data, and why the phone holds it.
///
/// The journal does not say which record types the app declared local-only (that is the app's
/// configuration), and a local-only record lives apart from the synced ones: a record the
/// journal holds nothing of as a synced type's is read again as a local-only type's.
extension Runner {
    func record(_ options: RecordOptions) throws -> ExitCode {
        let history = try recordHistory(options.key, showingValues: options.includeValues)
        let sealed = try reader.isSealedWithoutKey()
        let values = options.includeValues ? try valuesNamed(in: history) : [:]
        if json {
            write(try encodeJSON(RecordDocument(history, includeValues: options.includeValues, values: values, sealed: sealed)))
        } else {
            var text = RecordText.render(history, values: options.includeValues ? values : nil, sealed: sealed, moments: moments,
                                         style: style)
            if history.record == nil {
                text += "'journal-inspect \(journalArgument) records \(options.key.business)/\(options.key.type)' lists the records "
                    + "the journal holds of this business and type (ids are compared byte for byte).\n"
            }
            write(text)
        }
        return .success
    }

    func records(_ options: RecordsOptions) throws -> ExitCode {
        let query = RecordQuery(business: options.business, type: options.type, after: options.after, limit: options.limit)
        var page = try reader.records(query)
        if page.records.isEmpty {
            let local = try reader.records(query, policy: .localOnly)
            if !local.records.isEmpty { page = local }
        }
        let sealed = try reader.isSealedWithoutKey()
        if sealed {
            context.standardError.write("journal-inspect: warning: the journal is encrypted at rest and no --key-file was given: "
                + "the engine reads a sealed value as none, so records whose view is sealed are left out of the page as if "
                + "deleted; give --key-file to list them\n")
        }
        if json {
            write(try encodeJSON(RecordsDocument(
                business: options.business, type: options.type, after: options.after, valuesIncluded: options.includeValues,
                valuesSealed: sealed, records: page.records.map { RecordStateDocument($0, includeValues: options.includeValues, sealed: sealed) },
                nextAfter: page.nextAfter)))
        } else if page.records.isEmpty {
            write("No records of \(options.business)/\(options.type)" + (options.after.map { " after \($0)" } ?? "")
                + " in this journal.\n")
        } else {
            var text = RecordText.page(page, includeValues: options.includeValues, style: style)
            if let next = page.nextAfter {
                text += "(\(page.records.count) records shown; the next page starts at --after \(next))\n"
            }
            write(text)
        }
        return .success
    }

    /// The values a history names by their SHA-256 (in hex), as far as the journal still holds them: each
    /// write's change (in its `enqueued` event), the view, the base and a conflict's server
    /// value. An earlier base the server replaced is not kept: only its hash is.
    private func valuesNamed(in history: LocalRecord.History) throws -> [String: Data] {
        var values: [String: Data] = [:]
        func add(_ value: Data?) {
            if let value { values[SHA256Digest(of: value).hex] = value }
        }
        for id in Set(history.entries.filter { $0.kind == .enqueued && $0.valueHash != nil }.compactMap(\.operation)) {
            guard let enqueued = try reader.timeline(of: id).events.first(where: { $0.kind == .enqueued }),
                case .enqueued(let body) = enqueued.body
            else { continue }
            add(body.changes.first { $0.key == history.key }?.value)
        }
        add(history.record?.value)
        add(history.record?.server?.value)
        add(history.record?.sync.conflict?.serverValue)
        return values
    }

    /// The record's history as a synced type's, or as a local-only type's when the journal holds
    /// nothing of it as a synced one.
    private func recordHistory(_ key: RecordKey, showingValues: Bool) throws -> LocalRecord.History {
        let synced = try reader.recordHistory(key, showingValues: showingValues)
        guard synced.record == nil, synced.entries.isEmpty else { return synced }
        let local = try reader.recordHistory(key, policy: .localOnly, showingValues: showingValues)
        return local.record == nil ? synced : local
    }
}
