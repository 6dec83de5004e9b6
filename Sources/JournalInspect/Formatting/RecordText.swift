package import Foundation
package import Outbox
package import OutboxAudit

/// A record for people: why the member's phone holds its value (the events that made it), how
/// it stands (the member's view, the server's base, the sync state) and the verdict; and a page
/// of records, one line each.
///
/// Values are the member's data: each is named by its SHA-256 unless `includeValues` (the
/// `--payload` option) asks for its JSON text.
package enum RecordText {
    /// - Parameters:
    ///   - values: the values the history names, by their SHA-256 in hex, when they are to be shown
    ///     (`--payload`); `nil` names each by its hash only.
    ///   - sealed: the journal is encrypted at rest and was read without its key.
    package static func render(_ history: LocalRecord.History, values: [String: Data]?, sealed: Bool = false, moments: MomentFormat,
                              style: Style) -> String {
        let includeValues = values != nil
        var text = fields(history, includeValues: includeValues, sealed: sealed, moments: moments, style: style).render(style)
        if !history.entries.isEmpty {
            text += "\n" + rows(history.entries, moments: moments).render(style)
        }
        if let values {
            text += "\n" + style.paint("Values", .bold) + "\n" + valueLines(history.entries, values: values)
        }
        text += "\n" + style.paint("Verdict:", .bold) + " " + verdict(history, sealed: sealed) + "\n"
        return text
    }

    /// The library's verdict; for values sealed from this reader, what can be told without them
    /// (the engine reads a sealed value as none, so its words would say "deleted").
    static func verdict(_ history: LocalRecord.History, sealed: Bool) -> String {
        guard sealed, let record = history.record else { return history.verdict }
        return "its values are sealed (the journal is encrypted at rest): --key-file opens them, and the verdict needs them; "
            + "its sync state without them: \(syncShort(record))"
            + (record.server.map { "; the server last confirmed revision \($0.revision) (seq \($0.seq))" } ?? "")
    }

    /// The header: the record, the member's view, the server's base, the sync state.
    static func fields(_ history: LocalRecord.History, includeValues: Bool, sealed: Bool, moments: MomentFormat, style: Style) -> FieldList {
        var fields = FieldList()
        fields.add("Record", history.key.description)
        guard let record = history.record else { return fields }
        let value: (Data) -> String = { describe($0, includeValues: includeValues, sealed: sealed) }
        if record.isLocalOnly {
            fields.add("Shows", record.value.map(value) ?? "nothing: deleted on the phone")
            fields.add("Server", "none: a local-only record, written on the phone and never sent")
        } else {
            fields.add("Shows", record.value.map(value) ?? nothingShown(record, sealed: sealed))
            if let base = record.server {
                var server = "revision \(base.revision), learnt \(moments.both(base.learntAt)) at seq \(base.seq): "
                server += base.value.map(value) ?? (sealed ? sealedWords : "deleted on the server")
                fields.add("Server", server)
            } else {
                fields.add("Server", "not known to the phone yet: no answer has brought the server's value")
            }
        }
        if let version = record.schemaVersion { fields.add("Schema", "version \(version) of its type, as stored") }
        for (index, line) in syncLines(record, includeValues: includeValues, sealed: sealed, style: style).enumerated() {
            fields.add(index == 0 ? "Sync" : "", line)
        }
        return fields
    }

    /// A value in words: its size and SHA-256, and its JSON text when asked for.
    static func describe(_ value: Data, includeValues: Bool, sealed: Bool) -> String {
        let text = "\(value.count) bytes, SHA-256 \(SHA256Digest(of: value).hex)"
        return includeValues ? text + ": " + json(value) : text + "; redacted (--payload shows it)"
    }

    /// What a sealed value reads without the journal's key.
    static let sealedWords = "sealed: the journal is encrypted at rest; --key-file opens it"

    /// Why the view holds no value.
    private static func nothingShown(_ record: LocalRecord, sealed: Bool) -> String {
        if record.sync.pending.last?.deletes == true { return "nothing: the member deleted it" }
        if sealed { return sealedWords }
        if record.server?.isDeleted == true { return "nothing: deleted on the server" }
        if record.sync.rolledBack != nil || !record.sync.held.isEmpty {
            return "nothing: the member's change was rolled back and the server's value is not known"
        }
        return "nothing"
    }

    /// A value's JSON text on one line: line breaks (whitespace between JSON tokens, never
    /// inside a string, where JSON escapes them) read as spaces.
    static func json(_ value: Data) -> String {
        String(decoding: value, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .joined(separator: " ")
    }

    /// The sync state, one part a line.
    static func syncLines(_ record: LocalRecord, includeValues: Bool, sealed: Bool, style: Style) -> [String] {
        if record.isLocalOnly { return ["local-only: written on the phone, never sent"] }
        let sync = record.sync
        if sync.isSynced { return [style.paint("synced", .green) + ": the member sees the server's value"] }
        var lines: [String] = []
        if !sync.pending.isEmpty {
            lines.append(style.paint("pending", .yellow) + ": " + sync.pending.map { pending in
                EventText.shortID(pending.operation) + " " + pending.status.rawValue + (pending.deletes ? " (deletes it)" : "")
            }.joined(separator: ", ") + ": the member's change, not confirmed yet")
        }
        if !sync.confirmed.isEmpty {
            lines.append("confirmed: " + sync.confirmed.map(EventText.shortID).joined(separator: ", ")
                + ": the server applied it; its value has not arrived, so the member's stays")
        }
        if let conflict = sync.conflict {
            let server = conflict.serverValue.map { includeValues ? json($0) : "the value " + shortHash(SHA256Digest(of: $0)) }
                ?? (sealed ? "sealed" : "deleted there, or not sent")
            lines.append(style.paint("conflict", .boldRed) + ": \(EventText.shortID(conflict.operation)) met the server's revision "
                + "\(conflict.serverRevision ?? "(not said)") (\(server)): the member decides")
        }
        if let rolledBack = sync.rolledBack {
            lines.append(style.paint("rolled back", .red) + ": \(EventText.shortID(rolledBack.operation)) \(rolledBack.status.rawValue), "
                + "\(rolledBack.code): \"\(rolledBack.message)\": the member's change is hidden until retried, corrected or acknowledged")
        }
        if !sync.held.isEmpty {
            lines.append(style.paint("held", .boldRed) + ": " + sync.held.map(EventText.shortID).joined(separator: ", ")
                + ": made on a rolled-back change, hidden, never sent on it: the member decides")
        }
        return lines
    }

    /// The events that made the record's value.
    static func rows(_ entries: [LocalRecord.History.Entry], moments: MomentFormat) -> TextTable {
        var table = TextTable(headers: ["SEQ", "MOMENT", "KIND", "WRITE", "WHAT", "REVISION", "VALUE"], rightAligned: [0, 5])
        for entry in entries {
            table.add([
                TextTable.Cell("\(entry.seq)"), TextTable.Cell(moments.absolute(entry.recordedAt)), TextTable.Cell(entry.kind.rawValue),
                TextTable.Cell(entry.operation.map(EventText.shortID) ?? "-"), TextTable.Cell(entry.what),
                TextTable.Cell(entry.revision.map { "\($0)" } ?? ""), TextTable.Cell(entry.valueHash.map(shortHash) ?? ""),
            ])
        }
        return table
    }

    /// Each value the events name, once, by the first digits of its hash: its JSON text, or why
    /// the journal no longer holds it.
    static func valueLines(_ entries: [LocalRecord.History.Entry], values: [String: Data]) -> String {
        var seen = Set<String>()
        var text = ""
        for hash in entries.compactMap(\.valueHash) where seen.insert(hash.hex).inserted {
            text += shortHash(hash) + "  " + (values[hash.hex].map(json)
                ?? "(not held any more: the base keeps the server's latest revision only)") + "\n"
        }
        return text.isEmpty ? "(the events name no value)\n" : text
    }

    /// The first 12 hex digits of a value's SHA-256, as the verdict names it.
    static func shortHash(_ digest: SHA256Digest) -> String {
        String(digest.hex.prefix(12))
    }

    // MARK: A page of records

    package static func page(_ page: RecordQuery.Page, includeValues: Bool, style: Style) -> String {
        var table = TextTable(headers: ["ID", "VALUE", "REVISION", "SYNC"], rightAligned: [2])
        for record in page.records {
            // A page lists only records whose view holds a value.
            let value = record.value.map { includeValues ? shortened(json($0)) : shortHash(SHA256Digest(of: $0)) } ?? "-"
            table.add([TextTable.Cell(record.key.id), TextTable.Cell(value),
                       TextTable.Cell(record.server.map { "\($0.revision)" } ?? "-"), TextTable.Cell(syncShort(record))])
        }
        return table.render(style)
    }

    /// A table cell's JSON text: the first 80 characters (`--json` holds the whole value).
    private static func shortened(_ text: String) -> String {
        text.count > 80 ? String(text.prefix(77)) + "..." : text
    }

    /// The sync state in a few words: `synced`; `pending 6C4E0A1B queued`; `rolled back
    /// 5DFB6840 failed (validation_failed)`; several parts joined by `; `.
    package static func syncShort(_ record: LocalRecord) -> String {
        if record.isLocalOnly { return "local-only" }
        let sync = record.sync
        if sync.isSynced { return "synced" }
        var parts: [String] = []
        if !sync.pending.isEmpty {
            parts.append("pending " + sync.pending.map {
                "\(EventText.shortID($0.operation)) \($0.status.rawValue)" + ($0.deletes ? " (delete)" : "")
            }.joined(separator: ", "))
        }
        if !sync.confirmed.isEmpty { parts.append("confirmed " + sync.confirmed.map(EventText.shortID).joined(separator: ", ")) }
        if let conflict = sync.conflict {
            parts.append("conflict \(EventText.shortID(conflict.operation)) (server at revision \(conflict.serverRevision ?? "?"))")
        }
        if let rolledBack = sync.rolledBack {
            parts.append("rolled back \(EventText.shortID(rolledBack.operation)) \(rolledBack.status.rawValue) (\(rolledBack.code))")
        }
        if !sync.held.isEmpty { parts.append("held " + sync.held.map(EventText.shortID).joined(separator: ", ")) }
        return parts.joined(separator: "; ")
    }
}
