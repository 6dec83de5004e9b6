import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxCrypto
import OutboxTesting
import PostgresClaimStore
import Synchronization
import TestHarness
import Testing

/// A delivery note photographed with no signal, end to end with nothing mocked: the engine in a
/// child process (`outbox-test-child attach-worker`) with `URLSessionTransport`, the loopback
/// `outbox-test-server` on PostgreSQL claims, the tests' OpenStack Swift store behind it. The
/// photo is kept while offline; the signal returns and the child is killed by its own hand once
/// the store holds its third segment, before the engine records it; the engine is opened again
/// here, on a manual clock, and asks a new grant, which the server signs already expired
/// (`next_grant_expired`): the store refuses it with its own 401 and the engine asks another;
/// it sends only the segments the journal does not hold, completes, and sends the write:
/// applied once, and the object the store holds is the file, by its SHA-256.
@Suite("Attachments end to end", .timeLimit(.minutes(10)))
struct AttachmentEndToEndTests {
    /// The child's journal, its photo and the reopened engine's transport, torn down together.
    final class Phone: Sendable {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-photo-e2e-\(UUID().uuidString)")
        var journal: URL { directory.appendingPathComponent("journal") }
        var photo: URL { directory.appendingPathComponent("delivery-note.jpg") }

        init(photo bytes: Data) throws {
            try FileManager.default.createDirectory(at: journal, withIntermediateDirectories: true)
            try bytes.write(to: photo)
        }

        deinit {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// The reopened engine's network: the loopback server and the store, counting each segment
    /// `PUT` by its segment object's number and the store's answer.
    final class CountingTransport: OutboxTransport {
        /// A segment sent: its number, and the store's status (`nil`: no response).
        struct Put: Equatable, CustomStringConvertible {
            var number: Int
            var status: Int?

            var description: String { "\(number):\(status.map(String.init) ?? "none")" }
        }

        let inner: URLSessionTransport
        private let sent = Mutex<[Put]>([])

        init(_ inner: URLSessionTransport) {
            self.inner = inner
        }

        var puts: [Put] { sent.withLock { $0 } }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            try await inner.send(request)
        }

        func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
            let number = Int(segment.url.lastPathComponent) ?? -1
            do {
                let response = try await inner.upload(segment)
                sent.withLock { $0.append(Put(number: number, status: response.statusCode)) }
                return response
            } catch {
                sent.withLock { $0.append(Put(number: number, status: nil)) }
                throw error
            }
        }
    }

    /// A child process handed between threads, one at a time.
    final class Held: @unchecked Sendable {
        let child: ChildProcess

        init(_ child: ChildProcess) {
            self.child = child
        }
    }

    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await PullPostgresEndToEndTests.onThread(work)
    }

    /// The landed segments' numbers in `history`, one entry per `segmentLanded`.
    static func landed(_ history: [JournalEvent]) -> [Int] {
        history.compactMap { if case .segmentLanded(let landed) = $0.body { landed.segment.number } else { nil } }
    }

    /// The backoff the engines here retry with: 10 ms doubling, at most 50 ms.
    static let retryPolicy = OperationTypePolicy.RetryPolicy(initialDelaySeconds: 0.01, multiplier: 2, maxDelaySeconds: 0.05)

    /// Drains `outbox`, then moves `clock` past the longest backoff, until `done` says so (at
    /// most `passes` passes); answers whether it did. A hang guard counted in passes, never in
    /// time: nothing waits on the wall clock.
    static func drain(_ outbox: Outbox, _ clock: ManualClock, passes: Int = 200, until done: () throws -> Bool) async throws -> Bool {
        for _ in 0..<passes {
            await outbox.drain()
            await outbox.settle()
            if try done() { return true }
            clock.advance(by: retryPolicy.maxDelaySeconds)
        }
        return try done()
    }

    @Test func aPhotoTakenOfflineSurvivesAKillMidUploadAndAnExpiredGrantAndIsAppliedOnce() async throws {
        let server = try await Self.onThread { try UploadServer(segmentBytes: 256 << 10) }
        let bytes = seededBytes((3 << 20) + 12_345, seed: 2024)
        let digest = SHA256Digest(of: bytes)
        let segments = Int((Int64(bytes.count) + server.segmentBytes - 1) / server.segmentBytes)
        #expect(segments == 13)
        let phone = try Phone(photo: bytes)

        // Offline: the photo is kept and the write saved; nothing reaches the server.
        let held = try await Self.onThread {
            Held(try ChildProcess("outbox-test-child", ["attach-worker", phone.journal.path, server.baseURL.absoluteString, phone.photo.path, "put:3"]))
        }
        let offline = try await Self.onThread { () -> [String] in
            var lines: [String] = []
            repeat { lines.append(try held.child.readLine()) } while !(lines.last ?? "").hasPrefix("offline ")
            return lines
        }
        let enqueued = try #require(offline.first { $0.hasPrefix("enqueued ") }).split(separator: " ")
        let operation = try #require(OperationID(String(enqueued[1])))
        let attachment = try #require(AttachmentID(String(enqueued[2])))
        #expect(offline.contains("step offline /uploads"), "the grant was asked for with no signal: \(offline)")
        #expect(offline.last?.hasPrefix("offline queued") == true, "\(offline)")
        #expect(try await server.applied().isEmpty)
        #expect(try server.claims().isEmpty, "nothing reached the server")

        // The signal returns; the child kills itself once the store answered its third segment,
        // before the engine records it.
        held.child.send("online")
        let online = try await Self.onThread { () -> [String] in
            let lines = held.child.readToEnd().map(\.text)
            _ = held.child.wait()
            return lines
        }
        #expect(online.last == "stop put 3", "\(online.suffix(5))")
        #expect(online.contains("step answer /uploads 200"), "\(online)")

        // What the journal holds after the kill: a grant, the segments recorded, no completion.
        let reader = try JournalReader(directory: phone.journal)
        let killed = try reader.journalEvents(of: operation)
        reader.close()
        let landedBefore = Self.landed(killed)
        let grantsBefore = killed.filter { $0.kind == .attachmentGranted }.count
        #expect(!landedBefore.isEmpty && landedBefore.count < 3, "at least one segment recorded, the third not: \(landedBefore)")
        #expect(grantsBefore >= 1)
        #expect(!killed.contains { $0.kind == .attachmentCompleted || $0.kind == .attemptStarted })
        #expect(try await server.applied().isEmpty, "the write was not sent")

        // The grant the child held, asked again under its key: the claim answers its URLs, which
        // find the landed segment.
        let grantBody = UploadServer.grantBody(id: attachment, bytes: bytes, name: "delivery-note.jpg")
        let replay = try await server.server("POST", "/uploads", key: attachment.requestKey("grant-\(grantsBefore)-0"), grantBody)
        #expect(replay.status == 200 && replay.header("Idempotent-Replayed") == "true", "\(replay.status) \(replay.text)")
        let urls = AttachmentServerTests.urls(replay)
        #expect(urls.count == segments)
        let first = try #require(landedBefore.first)
        #expect(try await server.request("HEAD", urls[first - 1]).status == 200, "a live URL finds the landed segment")

        // The next grant the server makes is signed already expired.
        let settings = try await server.setUploads(#"{"next_grant_expired":true}"#)
        #expect(settings["next_grant_expired"] as? Bool == true)

        // The engine again, here, on a manual clock: a new grant, which the store refuses, another,
        // only the segments the journal lacks, the completion, then the write.
        let clock = ManualClock(now: Date())
        let transport = CountingTransport(URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: EndToEndTests.patience))
        let outbox = try Outbox(
            directory: phone.journal, transport: transport,
            configuration: OutboxConfiguration(
                account: "photo-member", retryPolicy: Self.retryPolicy, clock: clock,
                operationPolicies: ["product.create": .idempotent]))
        defer { outbox.close() }
        outbox.wake(.appLaunch)
        #expect(try await Self.drain(outbox, clock) { try outbox.operation(operation)?.status == .synced })

        let history = try outbox.journalEvents(of: operation)
        let landed = Self.landed(history)
        #expect(landed.sorted() == Array(1...segments), "each segment recorded once: \(landed)")
        #expect(history.filter { $0.kind == .attachmentGranted }.count == grantsBefore + 2, "two new grants after the kill")
        // The grant signed expired, asked again under its key: the store refuses its URLs, at once.
        let expired = try await server.server("POST", "/uploads", key: attachment.requestKey("grant-\(grantsBefore + 1)-0"), grantBody)
        #expect(expired.status == 200 && expired.header("Idempotent-Replayed") == "true", "\(expired.status) \(expired.text)")
        let expiredURL = try #require(AttachmentServerTests.urls(expired).first)
        #expect(try await server.request("HEAD", expiredURL).status == 401, "the store judges the grant expired")
        let completions = history.compactMap { if case .attachmentCompleted(let completed) = $0.body { completed } else { nil } }
        #expect(completions.count == 1)
        #expect(completions.first?.object == "\(server.container)/\(attachment)")
        #expect(completions.first?.sha256 == digest)
        // The segments the journal held were never sent again. The first it lacked (the one the
        // kill left unrecorded) met the store's 401 under the expired grant; then it was sent once
        // more under the next, as every later one.
        let expectedPuts = (1...segments).filter { !landedBefore.contains($0) }
        let puts = transport.puts
        #expect(puts.first == CountingTransport.Put(number: expectedPuts[0], status: 401), "\(puts)")
        #expect(puts.dropFirst().allSatisfy { $0.status == 201 }, "\(puts)")
        #expect(puts.dropFirst().map(\.number).sorted() == expectedPuts, "\(puts)")
        #expect(Set(puts.map(\.number)).isDisjoint(with: landedBefore))
        // The write happened once, after its file was completed.
        let kinds = history.map(\.kind)
        let completedAt = try #require(kinds.firstIndex(of: .attachmentCompleted))
        #expect(kinds.firstIndex(of: .attemptStarted).map { $0 > completedAt } == true)

        // On the server: the write applied once, the object completed once, all claimed in
        // PostgreSQL; the record names the attachment.
        let applied = try await server.applied()
        let completeKey = attachment.requestKey("complete-0")
        #expect(applied[completeKey] == 1)
        #expect(applied.count == 2 && applied.values.allSatisfy { $0 == 1 }, "\(applied)")
        let writeKey = try #require(applied.keys.first { $0 != completeKey })
        let claims = try server.claims()
        #expect(claims.contains("product.create \(writeKey) completed 201"), "\(claims)")
        #expect(claims.contains("upload.complete \(completeKey) completed 200"), "\(claims)")
        #expect((1...grantsBefore + 2).allSatisfy { claims.contains("upload.grant \(attachment.requestKey("grant-\($0)-0")) completed 200") },
                "\(claims)")
        let records = try await server.server("GET", "/_control/records").json["records"] as? [[String: Any]] ?? []
        let record = try #require(records.first { $0["id"] as? String == "gauze-10" })
        #expect(record["business_id"] as? String == "photo-pharmacy")
        #expect(record["idempotency_key"] as? String == writeKey)
        #expect((record["body"] as? String)?.contains(attachment.description) == true)

        // The object the store holds, read back with the server's token, is the file.
        let object = try await server.storeRequest("GET", attachment.description)
        #expect(object.status == 200)
        #expect(object.body.count == bytes.count)
        #expect(SHA256Digest(of: object.body) == digest)
    }

    /// A network that loses the answer to the first completion: the request reaches the server
    /// (which goes on with it), the engine sees no response. The statuses of the completions
    /// answered to the engine are kept.
    final class LosingTransport: OutboxTransport {
        let inner: URLSessionTransport
        private let lost = Mutex<Task<Void, Never>?>(nil)
        private let answered = Mutex<[Int]>([])

        init(_ inner: URLSessionTransport) {
            self.inner = inner
        }

        /// Whether the first completion was sent, its answer lost.
        var lostRequestSent: Bool { lost.withLock { $0 != nil } }

        /// The statuses the engine was answered to its completions, in order.
        var completionStatuses: [Int] { answered.withLock { $0 } }

        /// The lost request, once its answer came back to nobody.
        func lostRequestAnswered() async {
            await lost.withLock { $0 }?.value
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            guard request.endpoint.hasSuffix("/complete") else { return try await inner.send(request) }
            let first = lost.withLock { task -> Bool in
                guard task == nil else { return false }
                let inner = inner
                task = Task { _ = try? await inner.send(request) }
                return true
            }
            if first { throw URLError(.networkConnectionLost) }
            let response = try await inner.send(request)
            answered.withLock { $0.append(response.statusCode) }
            return response
        }

        func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
            try await inner.upload(segment)
        }
    }

    /// A completion whose answer was lost is asked again under its key while the server still
    /// works on the first copy: the claim answers 409 `idempotency_in_progress` with
    /// `Retry-After`, which the upload takes as transient, as a write's outcome does: it waits and
    /// asks again, and the write syncs.
    @Test func aCompletionAnsweredInProgressIsAskedAgainNotRefused() async throws {
        let server = try await Self.onThread { try UploadServer(segmentBytes: 256 << 10) }
        let photo = Attachment(bytes: seededBytes(300 << 10, seed: 7), contentType: "image/jpeg", name: "note.jpg")
        // The first completion is held, claimed, until a copy of it has been answered.
        let fault = try await server.server("POST", "/_control/faults", #"[{"fault":"slow","endpoint":"/uploads/\#(photo.id)/complete"}]"#)
        #expect(fault.status == 200)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-photo-409-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        let transport = LosingTransport(URLSessionTransport(baseURL: server.baseURL, timeoutSeconds: EndToEndTests.patience))
        let outbox = try Outbox(
            directory: directory, transport: transport,
            configuration: OutboxConfiguration(
                account: "photo-member", retryPolicy: Self.retryPolicy, clock: clock,
                operationPolicies: ["product.create": .idempotent]))
        defer { outbox.close() }
        let request = OutboxRequest(
            businessID: "photo-pharmacy", operationType: "product.create", endpoint: "/products",
            payload: Data(#"{"id":"gauze-11","name":"Gauze","delivery_note":"\#(photo.id)"}"#.utf8),
            category: "Products", entityLabel: "Gauze", summary: "New product with its delivery note")
        let id = try await outbox.enqueue(request, attaching: [photo])
        // The first completion is sent and its answer lost; it is at the server, claimed and held.
        #expect(try await Self.drain(outbox, clock) { transport.lostRequestSent })
        let held = try await server.server("POST", "/_control/await-held", #"{"key":"\#(photo.id.requestKey("complete-0"))"}"#)
        #expect(held.json["held"] as? Bool == true, "\(held.text)")
        // Asked again while the first is held: in progress. That answer lets the first go on,
        // and the server finishes it, answering nobody.
        #expect(try await Self.drain(outbox, clock) { transport.completionStatuses.contains(409) }, "\(transport.completionStatuses)")
        await transport.lostRequestAnswered()
        // Asked again once more: the claim's answer, and the write goes.
        #expect(try await Self.drain(outbox, clock) {
            guard let status = try outbox.operation(id)?.status else { return false }
            return status == .synced || status == .failed
        })
        let history = try outbox.journalEvents(of: id)
        let status = try outbox.operation(id)?.status
        #expect(status == .synced)
        #expect(!history.contains { $0.kind == .attachmentRefused }, "\(history.map(\.kind))")
    }
}
