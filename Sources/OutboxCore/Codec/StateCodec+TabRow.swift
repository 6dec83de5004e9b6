import Foundation
package import OutboxWire
import OutboxCrypto

/// A Sync tab row as its `sync-tab` entry stores it (projection layout 12): the fields of an
/// operation's state that the tab shows and judges the row by, and nothing else.
///
/// The tab reads its cards from these entries alone, a few adjacent pages, where reading each
/// row's state from `operations` cost a page apiece in a long journal. Only what the row needs is
/// kept, so that a queued write's entry costs the journal little beside its state: its identity
/// and lane (id, business, entity), what the member reads (category, label, summary, sealed or
/// not, its last error, the server's value of a conflict, the row it replaces), when it changed
/// and is due, and what the eligibility rule asks of other rows (its dependencies, its records).
extension StateCodec {
    /// The first byte of a tab row: not a form of a stored state, so that neither is read as
    /// the other.
    private static let tabRowForm: UInt8 = 3

    /// Appends the Sync tab row of `state` to `writer`.
    package static func encodeTabRow(_ state: OperationState, into writer: inout ByteWriter) {
        writer.write(tabRowForm)
        writer.write(state.id)
        writer.write(state.status.code)
        writer.write(state.businessID)
        writer.write(state.entityID)
        writer.write(state.category)
        writer.write(state.entityLabel)
        writer.write(state.summary)
        writer.writeOptional(state.sealedPresentation) { $0.write(bytes: $1) }
        writer.write(state.nextAttemptAt)
        writer.write(state.lastErrorCode)
        writer.write(state.lastErrorMessage)
        writer.write(state.firstSeq.rawValue)
        writer.write(state.latestSeq.rawValue)
        writer.write(state.changedAt)
        writeDependencies(&writer, state.dependsOn)
        writeSupersession(&writer, state.supersedes)
        writeServerValue(&writer, of: state)
        writer.write(UInt32(state.records.count))
        for key in state.records { writer.write(key) }
    }

    /// The Sync tab row of `state`, as bytes: two states with the same bytes show the same row.
    package static func tabRowBytes(_ state: OperationState) -> [UInt8] {
        var writer = ByteWriter(capacity: 192)
        encodeTabRow(state, into: &writer)
        return writer.bytes
    }

    /// A state holding a tab row's fields (``encodeTabRow(_:into:)``); every other field holds
    /// what a state holds before its first event (no attempt, no outcome, an empty request's
    /// hash), and its creation moment is its latest change's. Only for showing the row.
    package static func decodeTabRow(_ bytes: [UInt8]) throws(DecodingProblem) -> OperationState {
        var reader = ByteReader(bytes)
        let form = try reader.readUInt8("tab row form")
        guard form == tabRowForm else { throw DecodingProblem("a tab row of form \(form), not \(tabRowForm)") }
        let id = try reader.readOperationID()
        let status = try reader.readCode(OutboxStatus.self, "status")
        let businessID = try reader.readString("business id")
        let entityID = try reader.readOptionalString("entity id")
        let category = try reader.readString("category")
        let entityLabel = try reader.readString("entity label")
        let summary = try reader.readString("summary")
        let sealedPresentation = try reader.readOptional("sealed presentation") { (reader) throws(DecodingProblem) in
            try reader.readBytes("sealed presentation")
        }
        let nextAttemptAt = try reader.readOptionalDate("next attempt")
        let lastErrorCode = try reader.readOptionalString("error code")
        let lastErrorMessage = try reader.readOptionalString("error message")
        let firstSeq = JournalSequence(rawValue: try reader.readUInt64("first seq"))
        let latestSeq = JournalSequence(rawValue: try reader.readUInt64("latest seq"))
        let changedAt = try reader.readDate("changed at")
        var state = OperationState(
            stored: id, status: status, businessID: businessID, operationType: "", method: "", endpoint: "",
            entityID: entityID, category: category, entityLabel: entityLabel, summary: summary, payloadVersion: 0,
            payloadByteCount: 0, requestHash: emptyRequestHash, account: "", sealedPresentation: sealedPresentation,
            createdAt: changedAt
        )
        state.nextAttemptAt = nextAttemptAt
        state.lastErrorCode = lastErrorCode
        state.lastErrorMessage = lastErrorMessage
        state.firstSeq = firstSeq
        state.latestSeq = latestSeq
        state.dependsOn = try readDependencies(&reader)
        state.supersedes = try readSupersession(&reader)
        try readServerValue(&reader, into: &state)
        state.records = try readKeys(&reader, "record count")
        try reader.expectEnd("the tab row")
        return state
    }

    /// The hash a tab row's state holds for its request, which the row does not keep.
    private static let emptyRequestHash = SHA256Digest(of: Data())
}
