import Foundation
import Outbox
import OutboxAudit
import OutboxTesting

/// What must hold after every step of the storm, after every open, and once the network heals.
extension AttachmentSimulation {
    /// Whether a write still needs its files on the device, as Docs/attachments.md promises:
    /// while it may still be sent, retried or discarded (every status but a settled one), and a
    /// settled one but discarded for the keep period after it settled.
    static func needsFiles(_ state: OperationState, now: Date) -> Bool {
        guard state.status.isTerminal else { return true }
        return state.status != .discarded && now.timeIntervalSince(state.changedAt) < OutboxConfiguration.AttachmentSettings().keepSeconds
    }

    var attachmentsFolder: URL { directory.appendingPathComponent("attachments", isDirectory: true) }

    func label(_ id: OperationID) -> String { audit.labels[id] ?? id.description }

    /// After every step: the journal through the audit, and the files on the device and in the
    /// store of each write with new events (of every write after an open, which collects files,
    /// and at the end).
    func checkStep(everyWrite: Bool) throws {
        let since = checkedThrough
        try syncAudit()
        checkedThrough = audit.lastSeq
        let now = clock.now()
        for id in writes where everyWrite || (audit.rows[id]?.latestSeq ?? since) > since {
            guard let state = try outbox.operationState(id), let row = audit.rows[id] else {
                throw InvariantBroken("\(label(id)) returned from enqueue and is gone from the journal")
            }
            guard state.status == row.status else {
                throw InvariantBroken("\(label(id)) is \(state.status), and its history says \(row.status)")
            }
            guard state.attachments.map(\.id) == carried[id] else {
                throw InvariantBroken("\(label(id)) carries \(state.attachments.map(\.id)), not the files it was saved with")
            }
            if Self.needsFiles(state, now: now) {
                for upload in state.attachments { try checkKept(upload.manifest, of: id) }
            }
            for upload in state.attachments { try checkStored(upload, of: id) }
        }
    }

    /// A file a write still needs is on the device, whole.
    func checkKept(_ manifest: AttachmentManifest, of id: OperationID) throws {
        let plain = attachmentsFolder.appendingPathComponent(manifest.sha256.hex)
        if let kept = FileManager.default.contents(atPath: plain.path) {
            guard SHA256Digest(of: kept) == manifest.sha256 else {
                throw InvariantBroken("\(label(id)) still needs \(manifest.name) and its file holds other bytes (\(kept.count), the manifest's \(manifest.size))")
            }
        } else if !FileManager.default.fileExists(atPath: plain.path + ".sealed") {
            throw InvariantBroken("\(label(id)) is \(try outbox.operationState(id)?.status.rawValue ?? "?") and still needs \(manifest.name) (\(manifest.id)); its file is gone")
        }
    }

    /// What the store holds of a file agrees with the journal: each segment the journal says
    /// landed is there with its ETag; a completed object is the file; each segment was stored at
    /// most once more than the copies the engine did not learn of, and none after the completion.
    func checkStored(_ upload: AttachmentUpload, of id: OperationID) throws {
        let file = upload.id
        let held = store.etags(file)
        for segment in upload.landed where held[segment.number] != segment.etag {
            throw InvariantBroken("\(label(id)): the journal says segment \(segment.number) of \(file) landed with ETag \(segment.etag); the store holds \(held[segment.number] ?? "nothing")")
        }
        if upload.isCompleted {
            guard let object = store.object(file), SHA256Digest(of: object) == upload.manifest.sha256, object == bytes[file] else {
                throw InvariantBroken("\(label(id)): \(file) is completed and the store's object is not its file (\(store.object(file)?.count ?? -1) bytes, the file \(upload.manifest.size))")
            }
        }
        for number in held.keys.sorted() {
            let key = UploadNetwork.SegmentKey(attachment: file, number: number)
            let stored = store.puts(file, segment: number)
            let allowed = 1 + network.resendsAllowed(key)
            guard stored <= allowed else {
                throw InvariantBroken("\(label(id)): \(key) was stored \(stored) times; \(allowed - 1) interruption(s) in flight allow \(allowed)")
            }
        }
        guard store.putsAfterCompletion(file) == 0 else {
            throw InvariantBroken("\(label(id)): \(store.putsAfterCompletion(file)) segment(s) of \(file) were stored after its object was completed")
        }
    }

    /// After an ending, before the next engine uploads: the segments the store holds and the
    /// journal does not say landed are copies the engine did not learn of. Each allows the
    /// segment to be sent once more. One file uploads at a time, one segment at a time: an
    /// ending leaves at most one such copy the storm had not noted already (by a lost answer).
    func noteUnlearnedSegments() throws {
        var fresh: [UploadNetwork.SegmentKey] = []
        for id in writes {
            guard let state = try outbox.operationState(id) else { continue }
            for upload in state.attachments where !upload.isCompleted {
                let landed = Set(upload.landed.map(\.number))
                let unlearned = store.etags(upload.id).keys.filter { !landed.contains($0) }.sorted()
                fresh += network.unlearned(unlearned.map { UploadNetwork.SegmentKey(attachment: upload.id, number: $0) })
            }
        }
        guard fresh.count <= 1 else {
            throw InvariantBroken("an ended engine left \(fresh.count) segments in the store that its journal does not say landed (\(fresh.map(\.description).joined(separator: "; "))): it went on uploading past its ending")
        }
    }

    /// After an open: no half-made copy is left, and every file kept is one a write needs (the
    /// open collects the others).
    func checkFilesCollected() throws {
        let now = clock.now()
        var needed: Set<String> = []
        for id in writes {
            guard let state = try outbox.operationState(id), Self.needsFiles(state, now: now) else { continue }
            needed.formUnion(state.attachments.map(\.manifest.sha256.hex))
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: attachmentsFolder.path)) ?? []
        for name in names.sorted() {
            let hex = name.hasSuffix(".sealed") ? String(name.dropLast(".sealed".count)) : name
            guard needed.contains(hex) else {
                throw InvariantBroken("after an open, \(name) is kept in the attachments folder, and no write needs it")
            }
        }
    }

    /// Once the network healed and every write settled: each synced write was applied once and
    /// its files' objects are their bytes; no write was applied twice; nothing is left on the
    /// wire that no attempt accounts for.
    func checkFinal() throws {
        try audit.checkFinal()
        for id in writes {
            let applied = server.appliedCount(id.idempotencyKey)
            guard let row = audit.rows[id] else { throw InvariantBroken("\(label(id)) is not in the journal") }
            if row.status == .synced {
                guard applied == 1 else { throw InvariantBroken("\(label(id)) is synced and the server applied it \(applied) times") }
                for file in carried[id] ?? [] where store.object(file) != bytes[file] {
                    throw InvariantBroken("\(label(id)) is synced and its file \(file) is not in the store as its bytes")
                }
            } else if applied > 1 {
                throw InvariantBroken("\(label(id)) (\(row.status)) was applied \(applied) times")
            }
        }
        for (file, content) in bytes.sorted(by: { $0.key < $1.key }) {
            if let object = store.object(file), object != content {
                throw InvariantBroken("the store completed \(file) as \(object.count) bytes that are not its file's \(content.count)")
            }
        }
    }
}
