public import Outbox
public import Foundation
public import OutboxCore
public import OutboxCrypto

/// Everything the journal, and the file beside it, hold about one attachment: the proof of
/// whether "the photo went", and if not, why.
///
/// ```swift
/// let id = try reader.attachmentIDs(matchingPrefix: "8f1c")[0]
/// let proof = try reader.attachment(id)            // nil: no write in the journal carries it
/// proof?.completion?.object                        // the object the server completed
/// proof?.file                                      // .intact: there, hashing to its manifest
/// ```
public struct AttachmentProof: Sendable, Equatable {
    /// A grant the server gave: its shape and lifetime. Its URLs (their signatures) are never
    /// journaled, so never here.
    public struct Grant: Sendable, Equatable {
        public var seq: JournalSequence
        public var recordedAt: Date
        public var segmentSize: Int64
        public var segmentCount: Int
        /// The URLs' lifetime the server stated, in seconds.
        public var lifetimeSeconds: Double
    }

    /// A segment that reached the object store.
    public struct Segment: Sendable, Equatable {
        public var seq: JournalSequence
        public var recordedAt: Date
        public var number: Int
        public var size: Int64
        public var etag: String
    }

    /// The server's completion of the object.
    public struct Completion: Sendable, Equatable {
        public var seq: JournalSequence
        public var recordedAt: Date
        /// The server's reference to the object.
        public var object: String
        public var size: Int64
        public var sha256: SHA256Digest
    }

    /// A refusal: the server's, the store's, or one found on the device.
    public struct Refusal: Sendable, Equatable {
        public var seq: JournalSequence
        public var recordedAt: Date
        /// `nil` for a refusal found on the device (a missing or damaged file).
        public var statusCode: Int?
        public var errorCode: String
        public var message: String
    }

    package var manifest: AttachmentManifest
    /// The file as the write's manifest names it: its id, name, media type, size and SHA-256.
    public var attachmentID: AttachmentID { manifest.id }
    public var name: String { manifest.name }
    public var contentType: String { manifest.contentType }
    public var size: Int64 { manifest.size }
    public var sha256: SHA256Digest { manifest.sha256 }
    /// The write that carries it.
    public var operationID: OperationID
    /// The write as the journal holds it now.
    package var operation: OperationState
    public var operationStatus: OutboxStatus { operation.status }
    public var operationAttempts: Int { operation.attemptCount }
    /// The write's `enqueued` event: when the file's manifest was committed.
    public var savedSeq: JournalSequence { operation.firstSeq }
    public var savedAt: Date { operation.createdAt }

    /// The local file, `attachments/<sha256 hex>` in the journal's directory.
    public var fileURL: URL
    /// What was found there (``AttachmentFileCheck``).
    public var file: AttachmentFileCheck
    /// Whether the local copy is kept sealed at rest (``fileURL`` ends in `.sealed`).
    public var fileIsSealed: Bool { fileURL.lastPathComponent.hasSuffix(AttachmentFiles.sealedSuffix) }
    /// Whether the write still needs the file: every status but a settled one. A settled
    /// write's file may be gone (see ``fileKeptUntil``).
    public var needsFile: Bool { !operation.status.isTerminal }
    /// For a settled write: until when the engine keeps its file (the moment it settled plus
    /// the keep period; a discarded write's file goes at the engine's next open). The engine
    /// removes files when it opens the journal, so one may outlast this.
    public var fileKeptUntil: Date?

    /// Every grant, landed segment, completion and refusal of this attachment, in journal order.
    public var grants: [Grant]
    public var segments: [Segment]
    public var completion: Completion?
    public var refusals: [Refusal]
    /// The events that tell its story, in journal order: the write's `enqueued`, this
    /// attachment's upload events, and the write's retries, discards and attempts.
    package var events: [JournalEvent]
    /// The same events as the engine shows them (``HistoryEntry``), in the same order.
    public var entries: [HistoryEntry] { events.map { HistoryEntry($0) } }
    /// The write's records that could not be read: the proof is incomplete when any is listed.
    public var damaged: [Outbox.DamagedRecord]

    /// The upload as its events left it: the segment size of the last grant, the segments
    /// landed under it, whether it is completed or refused.
    package var upload: AttachmentUpload

    /// The last grant's segment size; `nil` before any grant.
    public var segmentSize: Int64? { upload.segmentSize }
    /// How many segments the file takes at the last grant's segment size.
    public var segmentCount: Int? { upload.segmentSize.map { AttachmentUpload.segmentCount(size: manifest.size, segmentSize: $0) } }
    /// The segments that count toward its completion now (landed under the last grant's size).
    package var landedSegments: [LandedSegment] { upload.landed }
    /// How many segments count toward its completion now.
    public var landedSegmentCount: Int { upload.landed.count }
    /// The bytes the store holds: all of them once completed.
    public var landedBytes: Int64 { upload.landedBytes }
    public var isCompleted: Bool { upload.isCompleted }
    /// The code of the refusal that holds its write, until a person retries it.
    public var refusedCode: String? { upload.refusedCode }
}

/// What was found of an attachment's local file.
public enum AttachmentFileCheck: Sendable, Equatable {
    /// There, of its manifest's size, and its bytes hash to its manifest's SHA-256.
    case intact
    /// There and of its manifest's size; its bytes were not read (a quick look).
    case presentNotHashed
    /// Sealed at rest, opened whole: its bytes hash to its manifest's SHA-256.
    case intactSealed
    /// Sealed at rest, of the size its manifest's bytes seal to; not opened (a quick look, or a
    /// reader without the journal's key).
    case sealedNotOpened
    /// Not there.
    case missing
    /// There, but not its manifest's bytes, or unreadable: why, in a sentence.
    case damaged(String)
}

extension AttachmentFiles {
    /// Looks at the file of `manifest`: hashing its bytes (streaming, a chunk at a time), or
    /// only its presence and size.
    func inspect(_ manifest: AttachmentManifest, hashing: Bool) -> AttachmentFileCheck {
        guard let (file, sealed) = location(of: manifest.sha256) else { return .missing }
        if hashing {
            switch check(manifest) {
            case nil: return sealed ? .intactSealed : .intact
            case .missing?: return .missing
            case .sealedWithoutKey?: break
            case .damaged(let why)?: return .damaged(why)
            }
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory) else { return .missing }
        guard !isDirectory.boolValue else { return .damaged("it is a directory, not a file") }
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value
        guard let size else { return .damaged("its size cannot be read") }
        let expected = Self.storedSize(of: manifest, sealed: sealed)
        guard size == expected else {
            return .damaged(sealed ? "it holds \(size) bytes sealed, where its manifest's bytes seal to \(expected)"
                                   : "it holds \(size) bytes, its manifest \(manifest.size)")
        }
        return sealed ? .sealedNotOpened : .presentNotHashed
    }

    /// Whether the directory of attachments exists at all (a copy of a journal may leave it out).
    var directoryExists: Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}

extension JournalQueries {
    /// The writes whose `enqueued` carried attachments and whose details the journal still
    /// holds (a compaction keeps no manifest), in journal order.
    func writesCarryingAttachments() throws(OutboxError) -> [OperationState] {
        let schema = self.schema
        let projections = self.projections
        return try read { txn in
            var states: [OperationState] = []
            if projections is StoredProjections {
                try txn.scan(schema.attachments) { entry in
                    if let state = try schema.state(try entry.value(), in: txn), !state.attachments.isEmpty { states.append(state) }
                    return .next
                }
            } else {
                for id in try projections.operationIDs(in: txn) {
                    guard let state = try projections.state(id, in: txn), !state.attachments.isEmpty, state.compactedAt == nil else { continue }
                    states.append(state)
                }
            }
            return states.sorted { $0.firstSeq < $1.firstSeq }
        }
    }

    /// The attachments whose id starts with `prefix` (hyphens and case ignored), sorted.
    func attachmentIDs(matchingPrefix prefix: String) throws(OutboxError) -> [AttachmentID] {
        let wanted = prefix.uppercased().filter { $0 != "-" }
        guard !wanted.isEmpty else { return [] }
        let ids = try writesCarryingAttachments().flatMap { $0.attachments.map(\.id) }
        return Set(ids.filter { $0.description.filter { $0 != "-" }.hasPrefix(wanted) }).sorted()
    }

    /// The proof of attachment `id`; `nil` when no write the journal holds carries it. Reads the
    /// journal in its own snapshots, then the file outside them: hashing a large file never
    /// holds a read transaction open.
    /// - Parameters:
    ///   - hashing: read the whole file and hash it, or only look at its presence and size.
    ///   - keepSeconds: how long the app keeps a settled write's files (``OutboxConfiguration.AttachmentSettings/keepSeconds``).
    func attachmentProof(_ id: AttachmentID, files: AttachmentFiles, hashing: Bool, keepSeconds: TimeInterval)
        throws(OutboxError) -> AttachmentProof?
    {
        guard let state = try writesCarryingAttachments().last(where: { $0.attachments.contains { $0.id == id } }) else { return nil }
        return try attachmentProof(id, of: state, files: files, hashing: hashing, keepSeconds: keepSeconds)
    }

    /// Every attachment the journal holds a manifest of, in journal order.
    func attachmentProofs(files: AttachmentFiles, hashing: Bool, keepSeconds: TimeInterval) throws(OutboxError) -> [AttachmentProof] {
        var proofs: [AttachmentProof] = []
        for state in try writesCarryingAttachments() {
            for upload in state.attachments {
                if let proof = try attachmentProof(upload.id, of: state, files: files, hashing: hashing, keepSeconds: keepSeconds) {
                    proofs.append(proof)
                }
            }
        }
        return proofs
    }

    private func attachmentProof(_ id: AttachmentID, of state: OperationState, files: AttachmentFiles, hashing: Bool,
                                 keepSeconds: TimeInterval) throws(OutboxError) -> AttachmentProof? {
        let timeline = try timeline(of: state.id)
        // The state read with the events: the write may have moved on since `state` was read.
        let current = timeline.state ?? state
        guard let upload = current.attachments.first(where: { $0.id == id }) ?? state.attachments.first(where: { $0.id == id }) else {
            return nil
        }
        var grants: [AttachmentProof.Grant] = []
        var segments: [AttachmentProof.Segment] = []
        var completion: AttachmentProof.Completion?
        var refusals: [AttachmentProof.Refusal] = []
        var events: [JournalEvent] = []
        for event in timeline.events {
            switch event.body {
            case .attachmentGranted(let granted) where granted.attachment == id:
                grants.append(.init(seq: event.seq, recordedAt: event.recordedAt, segmentSize: granted.segmentSize,
                                    segmentCount: granted.segmentCount, lifetimeSeconds: granted.lifetimeSeconds))
            case .segmentLanded(let landed) where landed.attachment == id:
                segments.append(.init(seq: event.seq, recordedAt: event.recordedAt, number: landed.segment.number,
                                      size: landed.segment.size, etag: landed.segment.etag))
            case .attachmentCompleted(let completed) where completed.attachment == id:
                completion = .init(seq: event.seq, recordedAt: event.recordedAt, object: completed.object, size: completed.size,
                                   sha256: completed.sha256)
            case .attachmentRefused(let refused) where refused.attachment == id:
                refusals.append(.init(seq: event.seq, recordedAt: event.recordedAt, statusCode: refused.statusCode,
                                      errorCode: refused.errorCode, message: refused.message))
            case .enqueued, .requeued, .discarded, .attemptStarted, .attemptFinished, .attemptAbandoned, .withdrawn, .superseded:
                break
            default:
                continue
            }
            events.append(event)
        }
        var keptUntil: Date?
        if current.status.isTerminal {
            keptUntil = current.status == .discarded ? current.changedAt : current.changedAt.addingTimeInterval(keepSeconds)
        }
        return AttachmentProof(
            manifest: upload.manifest, operationID: state.id, operation: current,
            fileURL: files.url(of: upload.manifest.sha256), file: files.inspect(upload.manifest, hashing: hashing),
            fileKeptUntil: keptUntil, grants: grants, segments: segments, completion: completion, refusals: refusals,
            events: events, damaged: timeline.damaged, upload: upload)
    }
}
