import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage
import Synchronization

/// The attachments' queue, beside the writes': each file of a queued write uploaded through the
/// server's grant, a segment at a time, each landed segment journaled, then completed by the
/// server, whose answered size and SHA-256 must be the file's. A pass runs it beside its sends,
/// so a large photo never holds up another record's write.
///
/// What it knows lives in the journal (grants' shapes, landed segments, completions), but for
/// the grants' signed URLs, kept in memory only: after a restart the next grant is asked for,
/// and the segments the journal says landed are never sent again. A grant's age is measured by
/// the device's uptime against the lifetime the server stated, never by the wall clock; one
/// expired (by that measure, or the store's 401/403) is asked for again, never a failure.
final class AttachmentUploader: Sendable {
    let store: JournalStore
    let room: JournalRoom
    let transport: any OutboxTransport
    let configuration: OutboxConfiguration
    let files: AttachmentFiles
    let log: EngineLog
    private let memory = Mutex(Memory())
    /// Whether a run is under way: one at a time, so no segment is ever sent by two at once.
    private let running = Atomic<Bool>(false)

    /// A grant in hand: its URLs, and until when (device uptime) they may be used.
    struct ActiveGrant {
        var urls: [Int: URL]
        var segmentSize: Int64
        var usableUntil: Uptime?
    }

    /// A file whose upload met no answer or a transient one: not tried again before `due`.
    struct Backoff {
        var failures: Int
        var due: Date
    }

    struct Memory {
        var grants: [AttachmentID: ActiveGrant] = [:]
        var backoff: [AttachmentID: Backoff] = [:]
    }

    /// What a run came to.
    struct Outcome: Sendable {
        /// Files completed: their writes may be sendable now.
        var completed = 0
        /// When a file that met a transient failure is due again.
        var next: Date?
    }

    /// The share of a grant's stated lifetime the engine uses before asking again: a segment
    /// started near the end would meet an expired URL.
    static let lifetimeShare = 0.8
    /// Grants asked for in a row for one file in one run before it waits like a failure: a store
    /// that refuses every fresh URL is not hammered.
    static let regrantsPerRun = 3

    init(store: JournalStore, room: JournalRoom, transport: any OutboxTransport, configuration: OutboxConfiguration,
         files: AttachmentFiles, log: EngineLog) {
        self.store = store
        self.room = room
        self.transport = transport
        self.configuration = configuration
        self.files = files
        self.log = log
    }

    private var clock: any OutboxClock { configuration.clock }
    private var progress: UploadProgress { store.schema.uploadProgress }

    /// Uploads every queued write's files not completed yet, one file at a time in journal
    /// order, until each is completed, refused or waits; stops when `shouldStop` says so (the
    /// worker stopped, the drain's time ran out) or the network is gone.
    func run(shouldStop: @Sendable () -> Bool) async -> Outcome {
        var outcome = Outcome()
        // Another run (a pass, or an app's drain beside it) has the files: it goes on with them.
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return outcome }
        defer { running.store(false, ordering: .releasing) }
        let pending: [(OperationID, AttachmentUpload)]
        do {
            pending = try pendingUploads()
        } catch {
            log.problem(.journalRead, "could not read the attachments to upload; they wait for the next pass", error: error)
            return outcome
        }
        for (operation, upload) in pending {
            if shouldStop() { break }
            let now = clock.now()
            if let backoff = memory.withLock({ $0.backoff[upload.id] }), backoff.due > now { continue }
            switch await uploadFile(upload, of: operation, shouldStop: shouldStop) {
            case .completed:
                outcome.completed += 1
                memory.withLock { _ = $0.backoff.removeValue(forKey: upload.id) }
            case .ended:
                memory.withLock { _ = $0.backoff.removeValue(forKey: upload.id) }
            case .stopped:
                // Stopped, or the journal closed: no further file is started.
                return outcome
            case .later(let offline):
                let due = memory.withLock { memory -> Date in
                    let failures = (memory.backoff[upload.id]?.failures ?? 0) + 1
                    let due = configuration.retryPolicy.nextAttempt(
                        afterAttempt: AttemptNumber(rawValue: failures), of: operation, now: clock.now())
                    memory.backoff[upload.id] = Backoff(failures: failures, due: due)
                    return due
                }
                outcome.next = min(outcome.next ?? due, due)
                // No network: the other files would meet the same.
                if offline { return outcome }
            }
        }
        return outcome
    }

    /// The queued writes' files not completed yet, in journal order: nothing while the engine
    /// is held (paused by a 401, nobody or another account signed in, another installation).
    private func pendingUploads() throws -> [(OperationID, AttachmentUpload)] {
        let schema = store.schema
        return try store.read { txn in
            var pending: [(OperationID, AttachmentUpload)] = []
            try txn.scan(schema.attachments) { entry in
                guard let state = try schema.state(try entry.value(), in: txn), state.status == .queued else { return .next }
                for upload in state.attachments where !upload.isCompleted { pending.append((state.id, upload)) }
                return .next
            }
            // A journal whose writes carry no file (most passes of most apps) reads no more.
            guard !pending.isEmpty else { return [] }
            let engine = try schema.engineStateAsJudged(in: txn)
            guard Eligibility.engineHold(Eligibility.Engine(engine)) == nil else { return [] }
            return pending
        }
    }

    /// How one file's turn ended.
    enum FileOutcome: Equatable {
        case completed
        /// Refused (journaled), or its write left the queue meanwhile.
        case ended
        /// A transient failure; `offline`: no response at all.
        case later(offline: Bool)
        case stopped
    }

    /// One file: a grant when none usable is in hand, each segment not landed, the completion.
    private func uploadFile(_ start: AttachmentUpload, of operation: OperationID, shouldStop: @Sendable () -> Bool) async -> FileOutcome {
        var upload = start
        let manifest = upload.manifest
        // The file is checked before anything is asked of the server: a missing or cut file
        // holds the write with the reason, never a crash.
        if let problem = fileProblem(manifest) {
            return await refuse(operation, manifest, status: nil, code: ErrorCode.attachmentDamaged, message: "\(manifest.name): \(problem)")
        }
        var regrants = 0
        while true {
            if shouldStop() { return .stopped }
            guard let grant = usableGrant(for: manifest.id) else {
                guard regrants < Self.regrantsPerRun else { return .later(offline: false) }
                regrants += 1
                switch await askGrant(&upload, of: operation) {
                case .completed: continue
                case let other: return other
                }
            }
            let count = AttachmentUpload.segmentCount(size: manifest.size, segmentSize: grant.segmentSize)
            let landed = Set(upload.landed.map(\.number))
            guard let number = (1...count).first(where: { !landed.contains($0) }) else {
                return await complete(upload, of: operation)
            }
            let offset = Int64(number - 1) * grant.segmentSize
            let length = min(grant.segmentSize, manifest.size - offset)
            let segment: SegmentUpload
            switch segmentUpload(manifest, number: number, offset: offset, length: length, url: grant.urls[number]!) {
            case .success(let ready): segment = ready
            case .failure(let problem):
                return await refuse(operation, manifest, status: nil, code: ErrorCode.attachmentDamaged, message: "\(manifest.name): \(problem)")
            }
            let response: TransportResponse
            do {
                response = try await transport.upload(segment)
            } catch {
                progress.ended(manifest.id)
                log.log(.info, "a segment met no response", [EngineLog.Key.operation: .string(operation.description)])
                return .later(offline: true)
            }
            // Journaled below, or failed: either way no longer in flight once the event is in.
            defer { progress.ended(manifest.id) }
            switch UploadProtocol.meaning(of: response, fromStore: true) {
            case .success:
                // A store that takes a segment without naming it cannot be completed from: held,
                // said so, rather than sent again and again.
                guard let etag = UploadProtocol.etag(of: response) else {
                    return await refuse(operation, manifest, status: response.statusCode, code: ErrorCode.attachmentRefused,
                                        message: "the store took segment \(number) of \(manifest.name) without an ETag to complete it from")
                }
                let piece = LandedSegment(number: number, size: length, etag: etag)
                if let ended = await journal(operation, .segmentLanded(SegmentLanded(attachment: manifest.id, segment: piece))) { return ended }
                upload.landed.append(piece)
            case .grantExpired:
                memory.withLock { _ = $0.grants.removeValue(forKey: manifest.id) }
            case .later:
                return .later(offline: false)
            case .refused:
                return await refuse(operation, manifest, status: response.statusCode, code: ErrorCode.attachmentRefused,
                                    message: Self.message(of: response))
            }
        }
    }

    /// The segment `number` of `manifest`'s file as the transport takes it: a span of the file,
    /// or, for a file sealed at rest, its bytes opened in memory. Its progress is told to
    /// ``UploadProgress``.
    private func segmentUpload(_ manifest: AttachmentManifest, number: Int, offset: Int64, length: Int64,
                               url: URL) -> Result<SegmentUpload, AttachmentFileProblem> {
        let progress = self.progress
        let id = manifest.id
        let report: @Sendable (Int64) -> Void = { sent in progress.sent(sent, of: number, length: length, attachment: id) }
        guard let (file, sealed) = files.location(of: manifest.sha256) else { return .failure(.missing) }
        guard sealed else {
            return .success(SegmentUpload(url: url, body: .file(file, offset: offset), offset: offset, length: length, progress: report))
        }
        do {
            let bytes = try files.read(manifest.sha256, offset: offset, length: Int(length))
            return .success(SegmentUpload(url: url, body: .bytes(bytes), offset: offset, length: length, progress: report))
        } catch {
            return .failure(error)
        }
    }

    /// Asks the server for a grant (number `grants + 1`, keyed by ``AttachmentUpload/nextGrantPurpose``:
    /// a request whose answer was lost is answered the same, one after an expiry is a new
    /// grant) and journals its shape.
    /// - Returns: `.completed` when a grant is in hand; otherwise how the turn ends.
    private func askGrant(_ upload: inout AttachmentUpload, of operation: OperationID) async -> FileOutcome {
        let manifest = upload.manifest
        let number = upload.grants + 1
        let request = TransportRequest(
            method: "POST", endpoint: configuration.attachments.uploadsEndpoint,
            headers: [OutboxHeader.idempotencyKey: manifest.id.requestKey(upload.nextGrantPurpose), "Content-Type": "application/json"],
            body: UploadProtocol.body(UploadProtocol.GrantRequest(manifest))
        )
        // The grant's age counts from the request: the server's lifetime started no earlier.
        let askedAt = clock.uptime()
        let response: TransportResponse
        switch await askServer(request, operation, manifest) {
        case .success(let answer): response = answer
        case .failure(let ended): return ended.outcome
        }
        guard let grant = try? JSONDecoder().decode(UploadProtocol.Grant.self, from: response.body) else {
            log.log(.warning, "a grant answer could not be read; asked again later", [EngineLog.Key.operation: .string(operation.description)])
            return .later(offline: false)
        }
        let urls: [Int: URL]
        switch UploadProtocol.checked(grant, for: manifest) {
        case .success(let checked): urls = checked
        case .failure(let problem):
            // The server's answer, not the network: asking again gets the same under the same key.
            return await refuse(operation, manifest, status: response.statusCode, code: ErrorCode.attachmentRefused,
                                message: "the server's grant does not cover \(manifest.name): \(problem)")
        }
        let granted = AttachmentGranted(attachment: manifest.id, segmentSize: grant.segment_size, segmentCount: urls.count,
                                        lifetimeSeconds: grant.expires_in)
        if let ended = await journal(operation, .attachmentGranted(granted)) { return ended }
        if upload.segmentSize != grant.segment_size { upload.landed = [] }
        upload.segmentSize = grant.segment_size
        upload.grants = number
        let usableUntil = askedAt.map { Uptime(seconds: $0.seconds + grant.expires_in * Self.lifetimeShare, bootID: $0.bootID) }
        memory.withLock { $0.grants[manifest.id] = ActiveGrant(urls: urls, segmentSize: grant.segment_size, usableUntil: usableUntil) }
        return .completed
    }

    /// The grant in hand for a file, while its lifetime lasts by the device's uptime (a grant
    /// whose age cannot be measured, a new boot or no uptime, is not used).
    private func usableGrant(for id: AttachmentID) -> ActiveGrant? {
        let now = clock.uptime()
        return memory.withLock { memory -> ActiveGrant? in
            guard let grant = memory.grants[id] else { return nil }
            guard let until = grant.usableUntil, let now, now.bootID == until.bootID, now.seconds < until.seconds else {
                memory.grants[id] = nil
                return nil
            }
            return grant
        }
    }

    /// Asks the server to complete the object from the landed segments; journals the completion
    /// when its size and SHA-256 are the file's.
    private func complete(_ upload: AttachmentUpload, of operation: OperationID) async -> FileOutcome {
        let manifest = upload.manifest
        let request = TransportRequest(
            method: "POST", endpoint: "\(configuration.attachments.uploadsEndpoint)/\(manifest.id)/complete",
            headers: [OutboxHeader.idempotencyKey: manifest.id.requestKey(upload.completionPurpose), "Content-Type": "application/json"],
            body: UploadProtocol.body(UploadProtocol.CompleteRequest(upload.landed))
        )
        let response: TransportResponse
        switch await askServer(request, operation, manifest) {
        case .success(let answer): response = answer
        case .failure(let ended): return ended.outcome
        }
        guard let completed = try? JSONDecoder().decode(UploadProtocol.Completed.self, from: response.body),
            let digest = SHA256Digest(hex: completed.sha256)
        else { return .later(offline: false) }
        guard completed.size == manifest.size, digest == manifest.sha256 else {
            // The local file is checked whole before the server is blamed: bytes damaged on the
            // device (of the right size) upload as they are and complete as another object.
            if let problem = files.check(manifest) {
                return await refuse(operation, manifest, status: nil, code: ErrorCode.attachmentDamaged, message: "\(manifest.name): \(problem)")
            }
            return await refuse(operation, manifest, status: response.statusCode, code: ErrorCode.attachmentMismatch,
                                message: "the server completed \(completed.size) bytes with SHA-256 \(completed.sha256); the file is \(manifest.size) bytes, \(manifest.sha256.hex)")
        }
        let event = AttachmentCompleted(attachment: manifest.id, object: completed.object, size: completed.size, sha256: digest)
        if let ended = await journal(operation, .attachmentCompleted(event)) { return ended }
        memory.withLock { _ = $0.grants.removeValue(forKey: manifest.id) }
        return .completed
    }

    /// A turn that ended at a server's answer.
    struct Ended: Error {
        var outcome: FileOutcome
    }

    /// Sends a grant or completion request to the server: its successful answer, or how the
    /// file's turn ends (no response, a transient status, a refusal journaled).
    private func askServer(_ request: TransportRequest, _ operation: OperationID,
                           _ manifest: AttachmentManifest) async -> Result<TransportResponse, Ended> {
        let response: TransportResponse
        do {
            response = try await transport.send(request)
        } catch {
            return .failure(Ended(outcome: .later(offline: true)))
        }
        switch UploadProtocol.meaning(of: response, fromStore: false) {
        case .success: return .success(response)
        case .later, .grantExpired: return .failure(Ended(outcome: .later(offline: false)))
        case .refused:
            return .failure(Ended(outcome: await refuse(operation, manifest, status: response.statusCode, code: ErrorCode.attachmentRefused,
                                                        message: Self.message(of: response))))
        }
    }

    /// Holds the write with the attachment's refusal.
    private func refuse(_ operation: OperationID, _ manifest: AttachmentManifest, status: Int?, code: String, message: String) async -> FileOutcome {
        let refused = AttachmentRefused(attachment: manifest.id, statusCode: status, errorCode: code, message: message)
        let ended = await journal(operation, .attachmentRefused(refused))
        memory.withLock { _ = $0.grants.removeValue(forKey: manifest.id) }
        return ended ?? .ended
    }

    /// Appends one event of the upload: `nil` once it is in; else how the file's turn ends,
    /// logged: `.stopped` when the journal closed (no further file is started: what it sends
    /// could not be recorded), `.ended` otherwise (the write left the queue meanwhile:
    /// discarded, say).
    private func journal(_ operation: OperationID, _ body: JournalEventBody) async -> FileOutcome? {
        do {
            _ = try await room.append([JournalStore.Draft(operationID: operation, body: body)])
            return nil
        } catch OutboxError.closed {
            return .stopped
        } catch {
            log.log(.info, "an upload's event was not recorded: \(error)", [EngineLog.Key.operation: .string(operation.description)])
            return .ended
        }
    }

    /// What is wrong with a file before its upload: missing, or not its manifest's size (a hash
    /// mismatch a cheaper check cannot see is the completion's to find).
    private func fileProblem(_ manifest: AttachmentManifest) -> AttachmentFileProblem? {
        // Looked up twice: a plain file being sealed (a key just set) goes between the two looks.
        let found = [0, 1].lazy.compactMap { _ -> (URL, Bool, [FileAttributeKey: Any])? in
            guard let (file, sealed) = self.files.location(of: manifest.sha256),
                let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
            else { return nil }
            return (file, sealed, attributes)
        }.first
        guard let (_, sealed, attributes) = found else { return .missing }
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? -1
        let expected = AttachmentFiles.storedSize(of: manifest, sealed: sealed)
        return size == expected ? nil : .damaged("it holds \(size) bytes on the disk where its manifest's take \(expected)")
    }

    /// The refusal's message from its JSON body, else its status.
    static func message(of response: TransportResponse) -> String {
        if let refusal = try? JSONDecoder().decode(UploadProtocol.Refusal.self, from: response.body), let message = refusal.message, !message.isEmpty {
            return message
        }
        return ""
    }
}
