import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage

extension Outbox {
    /// Queues a write that carries files, and in the same commit the member's record changes:
    /// once it returns, the files are durable in the journal's directory and the write with
    /// their manifests in the journal, or nothing is.
    ///
    /// ```swift
    /// let photo = Attachment(file: pickedURL, contentType: "image/jpeg", name: "note.jpg")
    /// guard outbox.canKeep(attachmentBytes: photo.size ?? 0) else { /* say so before the tap */ }
    /// let request = OutboxRequest(..., payload: Data(#"{"note":"\#(photo.id)"}"#.utf8))
    /// try await outbox.enqueue(request, changing: changes, attaching: [photo])
    /// ```
    ///
    /// Each file is uploaded on a queue of its own (a large photo never holds up another
    /// record's write); the write is sent once every one of its files is completed on the
    /// server, and ``OperationSnapshot/waitingOn`` says which file and how far until then.
    /// - Throws: as ``enqueue(_:changing:)``; ``OutboxError/invalidRequest(field:problem:)``
    ///   naming the attachment (a missing file, a directory, over
    ///   ``OutboxConfiguration.AttachmentSettings/maxFileBytes``, more than ``OutboxConfiguration.AttachmentSettings/maxPerWrite``, an id
    ///   the payload does not name); ``OutboxError/storageFull(limitBytes:errno:)`` when the
    ///   files cannot be kept (nothing was saved).
    public func enqueue(_ request: OutboxRequest, changing changes: [RecordChange] = [], attaching attachments: [Attachment]) async throws -> OperationID {
        guard !attachments.isEmpty else { return try await enqueue(request, changing: changes) }
        try ensureOpen()
        try checkPolicy(of: request.operationType)
        try request.validate(maxPayloadBytes: configuration.maxPayloadBytes)
        let sizes = try checkAttachments(attachments, for: request)
        // The same write saved again (a double tap) keeps no more than it did: its files count
        // against the budget once.
        let keptBefore = try request.operationID.flatMap { try operationState($0) }.map { Set($0.attachments.map(\.id)) } ?? []
        let total = zip(attachments, sizes).reduce(Int64(0)) { $0 + (keptBefore.contains($1.0.id) ? 0 : $1.1) }
        guard canKeep(attachmentBytes: total) else {
            throw OutboxError.storageFull(limitBytes: Int(clamping: configuration.attachments.budgetBytes))
        }
        var kept: [AttachmentManifest] = []
        var created: [SHA256Digest] = []
        do {
            for (index, attachment) in attachments.enumerated() {
                let (manifest, isNew) = try files.keep(attachment, field: "attachments[\(index)]")
                kept.append(manifest)
                if isNew { created.append(manifest.sha256) }
            }
            let outcome = try await appendIntent(request, changing: changes, attachments: kept)
            // Committed: the journal's copies stand for the originals given to be moved.
            files.removeMovedOriginals(attachments)
            switch outcome {
            case .new(let id):
                await worker.becameDue(at: configuration.clock.now(), because: .enqueued)
                await compactIfDue()
                return id
            case .existing(let snapshot):
                return snapshot.id
            }
        } catch {
            // Nothing was saved: the files this call made go with it (a file another write
            // keeps was there before, so it is not among them).
            // A read that fails here keeps the file (the next open collects it) and the save's error.
            for digest in created where (try? fileIsReferenced(digest)) == false { files.remove(digest) }
            throw error
        }
    }

    /// Whether attachments of `attachmentBytes` in all can be kept on the device now: within
    /// ``OutboxConfiguration.AttachmentSettings/budgetBytes`` beside the files kept already, and on a disk with room
    /// for them and a margin for the journal's own writes. Ask it before the member confirms, so
    /// the screen says "the photo will be sent when you're online" or that it cannot be kept.
    public func canKeep(attachmentBytes: Int64) -> Bool {
        guard attachmentBytes >= 0 else { return false }
        let settings = configuration.attachments
        guard files.keptBytes() + attachmentBytes <= settings.budgetBytes else { return false }
        guard let free = try? FileManager.default.attributesOfFileSystem(forPath: directory.path)[.systemFreeSize] as? NSNumber else {
            return true
        }
        return free.int64Value >= attachmentBytes + Self.diskMarginBytes
    }

    /// What the disk keeps free beyond an attachment: room for the journal's own commits.
    static let diskMarginBytes: Int64 = 16 << 20

    /// Refuses attachments that cannot be kept as given; answers their sizes.
    private func checkAttachments(_ attachments: [Attachment], for request: OutboxRequest) throws -> [Int64] {
        let settings = configuration.attachments
        guard attachments.count <= settings.maxPerWrite else {
            throw OutboxError.invalidRequest(field: "attachments", problem: "\(attachments.count) files; a write carries at most \(settings.maxPerWrite) (OutboxConfiguration.AttachmentSettings.maxPerWrite)")
        }
        let payload = String(decoding: request.payload, as: UTF8.self).uppercased()
        var seen: Set<AttachmentID> = []
        return try attachments.enumerated().map { index, attachment in
            let field = "attachments[\(index)]"
            func refuse(_ problem: String) -> OutboxError { .invalidRequest(field: field, problem: problem) }
            guard seen.insert(attachment.id).inserted else { throw refuse("repeats attachment id \(attachment.id): give each file its own id") }
            guard !attachment.name.isEmpty, attachment.name.utf8.count <= 255, !attachment.name.contains(where: \.isNewline) else {
                throw refuse("name must be 1 to 255 bytes on one line (the file's name as the member knows it)")
            }
            guard !attachment.contentType.isEmpty, attachment.contentType.contains("/") else {
                throw refuse("contentType \"\(attachment.contentType)\" is not a media type: give one such as image/jpeg")
            }
            guard payload.contains(attachment.id.description) else {
                throw refuse("the payload does not name attachment \(attachment.id): put its id where the server resolves it to the object")
            }
            if case .file(let url, _) = attachment.source {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                    throw refuse("\(url.path) does not exist: attach a file that does")
                }
                guard !isDirectory.boolValue else { throw refuse("\(url.path) is a directory: attach a file") }
            }
            guard let size = attachment.size else { throw refuse("the file cannot be read: attach a regular file this app may read") }
            guard size <= settings.maxFileBytes else {
                throw refuse("is \(size) bytes; at most \(settings.maxFileBytes) are accepted (OutboxConfiguration.AttachmentSettings.maxFileBytes)")
            }
            return size
        }
    }

    /// Whether a write in the journal still needs the file of `digest`.
    func fileIsReferenced(_ digest: SHA256Digest) throws -> Bool {
        try attachmentFileNeeds().needed.contains(digest)
    }

    /// Which kept files writes still need, and which they no longer need, by the rule of
    /// ``AttachmentKeeping``.
    func attachmentFileNeeds() throws -> (needed: Set<SHA256Digest>, done: Set<SHA256Digest>) {
        let schema = store.schema
        let now = configuration.clock.now()
        let keep = configuration.attachments.keepSeconds
        return try store.read { txn in
            var needed: Set<SHA256Digest> = []
            var done: Set<SHA256Digest> = []
            try txn.scan(schema.attachments) { entry in
                guard let state = try schema.state(try entry.value(), in: txn) else { return .next }
                let digests = state.attachments.map(\.manifest.sha256)
                if AttachmentKeeping.needsFiles(state, now: now, keepSeconds: keep) {
                    needed.formUnion(digests)
                } else {
                    done.formUnion(digests)
                }
                return .next
            }
            return (needed, done.subtracting(needed))
        }
    }

    /// Removes the files no write needs any longer. `strays`: also every file no write names and
    /// every copy a kill left half made, which only an open may do (no enqueue is between
    /// keeping its files and committing them then).
    /// - Returns: how many files were removed.
    @discardableResult
    func collectAttachmentFiles(strays: Bool) -> Int {
        let listing = files.listing()
        guard !listing.files.isEmpty || !listing.incoming.isEmpty else { return 0 }
        let needs: (needed: Set<SHA256Digest>, done: Set<SHA256Digest>)
        do {
            needs = try attachmentFileNeeds()
        } catch {
            log.problem(.journalRead, "could not read which attachments are still needed; no file is removed", error: error)
            return 0
        }
        var removed = 0
        for digest in listing.files.keys where !needs.needed.contains(digest) && (strays || needs.done.contains(digest)) {
            files.remove(digest)
            removed += 1
        }
        if strays {
            for url in listing.incoming { try? FileManager.default.removeItem(at: url) }
        }
        return removed
    }
}

/// How long a write's files stay on the device, as a pure rule: while the write may still be
/// sent, retried, exported or discarded (every status but a settled one), and after it settled
/// for the keep period; a discarded write's go at once.
enum AttachmentKeeping {
    static func needsFiles(_ state: OperationState, now: Date, keepSeconds: TimeInterval) -> Bool {
        guard state.status.isTerminal else { return true }
        if state.status == .discarded { return false }
        return now.timeIntervalSince(state.changedAt) < keepSeconds
    }
}

extension Outbox {
    /// Runs the attachments' queue alone until `segments` more segments landed in all, then
    /// stops: an app ended between two segments of an upload, for the tests.
    /// While a pass runs the queue this run does nothing: one run of the queue at a time.
    package func uploadSomeSegments(_ segments: Int) async {
        let landed: @Sendable () -> Int = { [store] in
            (try? store.queries.events(from: JournalSequence(rawValue: 1), limit: .max).filter { $0.kind == .segmentLanded }.count) ?? 0
        }
        let before = landed()
        _ = await replayPass.uploads.run { landed() - before >= segments }
    }
}
