public import Foundation
public import OutboxCore
public import OutboxCrypto
import OutboxStorage

extension Outbox {
    /// Writes every pending write (every row the badge counts: queued, syncing, failed,
    /// blocked, conflicted) to `url`, sealed with `key`, for an import into this account's journal
    /// after a wipe (a shared device, a sign-out that must not lose work). Rows waiting for
    /// approval are left out: the server holds them.
    ///
    /// ```swift
    /// try outbox.exportPending(to: exportURL, key: keychainKey)
    /// try await outbox.signOut(discardPending: true)
    /// // later, on the same account:
    /// let report = try await fresh.importPending(from: exportURL, key: keychainKey)
    /// ```
    ///
    /// Each write goes exactly as enqueued: its operation id (its idempotency key), its request
    /// byte for byte, its record changes (the member's overlay). The file is written whole or not
    /// at all (a temporary file renamed over `url`); Docs/export.md gives its format.
    /// - Returns: the writes exported, in the order an import enqueues them.
    /// - Throws: ``OutboxError/permissionDenied(path:)``, ``OutboxError/storageFull(limitBytes:errno:)``
    ///   or ``OutboxError/storage(code:message:)`` when the file cannot be written (nothing is
    ///   left at `url` then); ``OutboxError/closed``.
    @discardableResult
    public func exportPending(to url: URL, key: SealingKey) throws -> [PendingWrite] {
        try ensureOpen()
        let contents = PendingExport.Contents(account: configuration.account, exportedAt: configuration.clock.now(),
                                              writes: try exportableWrites())
        let bytes = try PendingExport(contents: contents).sealed(with: key)
        do {
            try FileSystem.replaceWhole(url.path, with: bytes)
        } catch {
            throw OutboxError(storage: error, limitBytes: store.options.limitBytes, path: url.path,
                              atFileSizeLimit: FileSystem.isAtFileSizeLimit)
        }
        log.log(.info, "pending writes exported", [EngineLog.Key.count: "\(contents.writes.count)"])
        return contents.writes.compactMap { write in OperationID(write.operationID).map(write.named) }
    }

    /// Enqueues again the writes of an export of this account's pending work, each under its own
    /// operation id and idempotency key: one that reached the server before the export (or
    /// before the wipe) is answered by the server's claim as a replay, so nothing applies twice.
    /// A write already in this journal is skipped, so importing a file twice enqueues it once;
    /// an import cut short (a full disk) is finished by importing the file again.
    ///
    /// Every write goes through ``enqueue(_:changing:)``'s checks, its record changes with it,
    /// and is queued (a failed, blocked or conflicted one is sent again and answered as before).
    /// - Throws: before anything is written: ``OutboxError/exportWrongKey(path:)``,
    ///   ``OutboxError/exportDamaged(path:reason:)`` (also a file that cannot be read),
    ///   ``OutboxError/exportNewerFormat(path:found:supported:)``,
    ///   ``OutboxError/exportOtherAccount(path:exported:configured:)``; while writing,
    ///   ``OutboxError/storageFull(limitBytes:errno:)`` and ``OutboxError/closed``.
    @discardableResult
    public func importPending(from url: URL, key: SealingKey) async throws -> Outbox.ImportReport {
        try ensureOpen()
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: url))
        } catch {
            throw OutboxError.exportDamaged(path: url.path, reason: "it cannot be read (\(error.localizedDescription))")
        }
        let export = try PendingExport.open(bytes, key: key, account: configuration.account, path: url.path)
        // Every write is read and checked before any is enqueued: a damaged one refuses the file.
        let writes = try export.contents.writes.map { write throws(OutboxError) in
            let request = try write.request(path: url.path)
            guard write.account.utf8.elementsEqual(export.contents.account.utf8) else {
                throw OutboxError.exportDamaged(path: url.path, reason: "write \(write.operationID) names account \"\(write.account)\", the export \"\(export.contents.account)\"")
            }
            return (named: write.named(request.operationID!), request: request, changes: write.recordChanges,
                    firstSentAt: write.firstAttemptAt, files: try write.files(path: url.path))
        }
        var report = Outbox.ImportReport(account: export.contents.account, exportedAt: export.contents.exportedAt)
        for write in writes {
            if let existing = try operationState(write.named.operationID) {
                // Discarded here (a sign-out without a wipe), it cannot come back under its id:
                // said, not passed off as already imported.
                if existing.status == .discarded || existing.status == .withdrawn {
                    report.refused.append(Outbox.RefusedImport(write: write.named, error: .invalidRequest(
                        field: "operationID",
                        problem: "\(write.named.operationID) is \(existing.status.rawValue) in this journal: import into a fresh journal (Outbox.wipeJournal(at:) after the sign-out, then open it again)"
                    )))
                } else {
                    report.alreadyInJournal.append(write.named)
                }
                continue
            }
            do {
                // Never coalesced: a row attempted before the export looks unattempted here.
                // Its claim's age comes with it: a write first sent long ago is not replayed blindly.
                // Its files are kept first, as an enqueue keeps them.
                let manifests = try write.files.enumerated().map { index, file in
                    try files.keep(file, field: "attachments[\(index)]").manifest
                }
                switch try await appendIntent(write.request, changing: write.changes, coalescing: false, firstSentAt: write.firstSentAt,
                                              attachments: manifests) {
                case .new: report.imported.append(write.named)
                case .existing: report.alreadyInJournal.append(write.named)
                }
            } catch let error as OutboxError where error.refusesOneWrite {
                report.refused.append(Outbox.RefusedImport(write: write.named, error: error))
            }
        }
        log.log(.info, "pending writes imported", [
            EngineLog.Key.count: "\(report.imported.count)",
            EngineLog.Key.reason: .string("\(report.alreadyInJournal.count) already in the journal, \(report.refused.count) refused"),
        ])
        if !report.imported.isEmpty {
            await worker.becameDue(at: configuration.clock.now(), because: .enqueued)
        }
        return report
    }

    // MARK: Internals

    /// The rows the badge counts, in lane order (a correction in the place of the row it
    /// replaced), as the export holds them: one snapshot.
    private func exportableWrites() throws -> [PendingExport.Write] {
        let queries = store.queries
        let schema = store.schema
        return try queries.read { txn in
            let states = try queries.projections.oldestFirst(statuses: OutboxStatus.waitingToSync, after: nil, limit: .max,
                                                             where: { _ in true }, in: txn)
                .sorted { ($0.laneSeq, $0.firstSeq) < ($1.laneSeq, $1.firstSeq) }
            return try states.map { state in
                let enqueued = try schema.enqueued(of: state, in: txn)
                let request = enqueued.request
                // A dependency as it stands now; one already synced no longer holds the write back.
                var dependsOn: [String] = []
                for dependency in state.dependsOn {
                    let standing = try schema.standing(dependency, in: txn)
                    guard standing?.status != .synced else { continue }
                    let id = (standing?.id ?? dependency).idempotencyKey
                    if !dependsOn.contains(id) { dependsOn.append(id) }
                }
                return PendingExport.Write(
                    operationID: state.id.idempotencyKey, status: state.status.rawValue, account: enqueued.account,
                    businessID: request.businessID, operationType: request.operationType, method: request.method,
                    endpoint: request.endpoint, payload: request.payload, requestHash: enqueued.requestHash.hex,
                    payloadVersion: request.payloadVersion, entityID: request.entityID, category: request.category,
                    entityLabel: request.entityLabel, summary: request.summary,
                    // The revision it is sent against now (a rebase moves it).
                    baseRevision: state.baseRevision, revisionFrom: request.revisionFrom.map(PendingExport.Key.init),
                    dependsOn: dependsOn,
                    changes: enqueued.changes.map { PendingExport.Change(key: PendingExport.Key($0.key), value: $0.value) },
                    createdAt: state.createdAt, attempts: state.attemptCount, firstAttemptAt: state.firstAttemptAt,
                    attachments: try exportedFiles(of: enqueued)
                )
            }
        }
    }
}

extension Outbox {
    /// The files a write carries, read whole for the export: a file missing or damaged fails
    /// the export, naming it, rather than exporting a write without its photo.
    fileprivate func exportedFiles(of enqueued: Enqueued) throws -> [PendingExport.File]? {
        guard !enqueued.attachments.isEmpty else { return nil }
        return try enqueued.attachments.map { manifest in
            if let problem = files.check(manifest) {
                throw OutboxError.invalidRequest(field: "attachments", problem: "\(manifest.name) (\(manifest.id)) cannot be exported: \(problem)")
            }
            // Opened when sealed at rest: the export is sealed whole with its own key.
            var bytes = Data(capacity: Int(manifest.size))
            try files.withPlaintextChunks(of: manifest.sha256) { bytes.append(contentsOf: $0) }
            return PendingExport.File(id: manifest.id.description, name: manifest.name, contentType: manifest.contentType,
                                      sha256: manifest.sha256.hex, bytes: bytes)
        }
    }
}

extension OutboxError {
    /// Whether an import refuses only the one write (this engine's checks of a request), not
    /// the whole file.
    var refusesOneWrite: Bool {
        switch self {
        case .invalidRequest, .onlineOnly, .operationIDReused: true
        default: false
        }
    }
}

extension PendingExport.Key {
    init(_ key: RecordKey) {
        self.init(business: key.business, type: key.type, id: key.id)
    }

    var recordKey: RecordKey { RecordKey(business: business, type: type, id: id) }
}

extension PendingExport.Write {
    /// How the member and the report name it, under its parsed id.
    func named(_ id: OperationID) -> PendingWrite {
        PendingWrite(operationID: id, category: category, entityLabel: entityLabel, summary: summary,
                     status: OutboxStatus(rawValue: status) ?? .queued, attachments: (attachments ?? []).map(\.name))
    }

    /// The request as it was enqueued, under its own operation id: checked against its hash.
    func request(path: String) throws(OutboxError) -> OutboxRequest {
        func damaged(_ reason: String) -> OutboxError { .exportDamaged(path: path, reason: "write \(operationID): \(reason)") }
        guard let id = OperationID(operationID) else { throw damaged("its operation id is not a UUID") }
        guard OutboxStatus(rawValue: status) != nil else { throw damaged("its status \"\(status)\" is unknown") }
        guard SHA256Digest(of: payload).hex == requestHash else { throw damaged("its payload does not match its hash") }
        var dependencies: [OperationID] = []
        for dependency in dependsOn {
            guard let id = OperationID(dependency) else { throw damaged("a dependency is not a UUID") }
            dependencies.append(id)
        }
        return OutboxRequest(
            businessID: businessID, operationType: operationType, method: method, endpoint: endpoint, payload: payload,
            entityID: entityID, category: category, entityLabel: entityLabel, summary: summary, payloadVersion: payloadVersion,
            operationID: id, baseRevision: baseRevision, revisionFrom: revisionFrom?.recordKey, dependsOn: dependencies
        )
    }

    /// The files it carries, as attachments, each checked against its hash.
    func files(path: String) throws(OutboxError) -> [Attachment] {
        try (attachments ?? []).map { file throws(OutboxError) in
            guard let id = AttachmentID(file.id) else { throw .exportDamaged(path: path, reason: "write \(operationID): an attachment id is not a UUID") }
            guard SHA256Digest(of: file.bytes).hex == file.sha256 else {
                throw .exportDamaged(path: path, reason: "write \(operationID): the bytes of \(file.name) do not match their hash")
            }
            return Attachment(id: id, bytes: file.bytes, contentType: file.contentType, name: file.name)
        }
    }

    /// The record changes it carries, as ``Outbox/enqueue(_:changing:)`` takes them.
    var recordChanges: [RecordChange] {
        changes.map { change in
            change.value.map { .put(change.key.recordKey, $0) } ?? .delete(change.key.recordKey)
        }
    }
}

extension Outbox {
    /// What ``Outbox/importPending(from:key:)`` did with each write of an export.
    public struct ImportReport: Sendable, Equatable {
        /// The account the export was written under: this journal's.
        public var account: String
        /// When the export was written, by that device's clock: display only.
        public var exportedAt: Date
        /// Enqueued again under their own operation ids and idempotency keys, in the file's order.
        public var imported: [PendingWrite] = []
        /// Already in this journal (the file imported before, or the journal never wiped): nothing
        /// was written for them.
        public var alreadyInJournal: [PendingWrite] = []
        /// Refused by this engine's checks, each with the error saying why: nothing of them was
        /// written. A write depending on a refused one is refused in turn.
        public var refused: [Outbox.RefusedImport] = []
    }
}

extension Outbox {
    /// A write of an export that an import did not enqueue, and why.
    public struct RefusedImport: Sendable, Equatable {
        public var write: PendingWrite
        public var error: OutboxError
    }
}
