public import Outbox
import Foundation
public import OutboxCore

/// The audit reads of ``JournalReader``, for the process that has the journal open: an app that
/// keeps its own audit trail exports it with these, without `journal-inspect`.
extension Outbox {
    /// A page of events matching `query`, carrying on past damaged records (listed in the page).
    ///
    /// ```swift
    /// var query = EventQuery(operationTypes: ["product.create"], recordedFrom: lastExport)
    /// let page = try outbox.events(matching: query)
    /// let json = try JSONEncoder().encode(page.entries)
    /// ```
    public func events(matching query: EventQuery) throws -> EventPage {
        try ensureOpen()
        return try store.queries.events(matching: query)
    }

    /// A page of operations filtered by status, category, type and creation moment, newest
    /// first, each as ``operation(_:)`` answers it now.
    public func operations(matching query: OperationQuery) throws -> OperationPage {
        try ensureOpen()
        return try store.queries.operations(matching: query, now: configuration.clock.now())
    }

    /// The same page as folded states, reading no request.
    package func operationStates(matching query: OperationQuery) throws -> OperationStatePage {
        try ensureOpen()
        return try store.queries.operationStates(matching: query)
    }

    /// The operations whose id starts with `prefix` (hyphens and case ignored).
    public func operationIDs(matchingPrefix prefix: String) throws -> [OperationID] {
        try ensureOpen()
        return try store.queries.operationIDs(matchingPrefix: prefix)
    }

    /// Everything the journal holds about one operation: its events, attempts and payload check.
    /// - Throws: ``OutboxError/operationNotFound(_:)``.
    public func timeline(of id: OperationID) throws -> OperationTimeline {
        try ensureOpen()
        return try store.queries.timeline(of: id)
    }

    /// Checks every record's checksum and every operation's invariants, and compares the stored
    /// projections with a rebuild from the events, in one snapshot; then hashes the file of every
    /// attachment a write not settled still needs (a missing or damaged one is a finding).
    ///
    /// ```swift
    /// let report = try outbox.verify()
    /// assert(report.isClean, "\(report.findings)")
    /// ```
    public func verify() throws -> VerificationReport {
        try ensureOpen()
        return try store.queries.verify(files: files)
    }

    /// The attachments whose id starts with `prefix` (hyphens and case ignored), among the
    /// writes whose details the journal holds.
    public func attachmentIDs(matchingPrefix prefix: String) throws -> [AttachmentID] {
        try ensureOpen()
        return try store.queries.attachmentIDs(matchingPrefix: prefix)
    }

    /// The proof of one attachment: its manifest, its write, its upload's events and its local
    /// file (hashed, streaming, unless `hashingFile` is `false`: then only its presence and
    /// size); `nil` when no write the journal holds carries it.
    public func attachment(_ id: AttachmentID, hashingFile: Bool = true) throws -> AttachmentProof? {
        try ensureOpen()
        return try store.queries.attachmentProof(id, files: files, hashing: hashingFile,
                                                 keepSeconds: configuration.attachments.keepSeconds)
    }

    /// The proofs of every attachment the journal holds a manifest of, in journal order; their
    /// files looked at for presence and size only, unless `hashingFiles`.
    public func attachments(hashingFiles: Bool = false) throws -> [AttachmentProof] {
        try ensureOpen()
        return try store.queries.attachmentProofs(files: files, hashing: hashingFiles,
                                                  keepSeconds: configuration.attachments.keepSeconds)
    }
}
