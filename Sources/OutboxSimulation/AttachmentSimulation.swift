import Foundation
import Outbox
import OutboxCrypto
import OutboxTesting
import TestHarness

/// Writes with files under a seeded storm: the signal coming and going, the engine ended in the
/// middle of an upload and opened again (its grants' URLs lost with it), every grant expiring,
/// the store answering 503, a completion's answer lost after the server completed it, the clock
/// jumping. After every step no file a pending write refers to is missing or damaged; at the end,
/// once the network heals, every write synced, and:
///
/// - no write was sent before each of its files was completed;
/// - every completed object's SHA-256 is its file's, and the object is the file;
/// - no segment was stored twice (each `PUT` that landed is journaled before another is sent);
/// - every write was applied once.
public struct AttachmentSimulation: Sendable {
    public var seed: UInt64
    /// Steps of the storm before the network heals.
    public var steps: Int

    public init(seed: UInt64, steps: Int = 40) {
        self.seed = seed
        self.steps = steps
    }

    /// What a run did, for the report and the test's own checks.
    public struct Report: Sendable, Equatable {
        public var writes = 0
        public var files = 0
        public var restarts = 0
        public var expiries = 0
        public var segmentsStored = 0
        public var grants = 0

        public init() {}
    }

    /// A broken promise, naming the seed.
    public struct Broken: Error, CustomStringConvertible {
        public var description: String
    }

    /// The segment size grants set: small, so files take several.
    static let segmentBytes: Int64 = 700

    public func run() async throws -> Report {
        var random = SeededRandom(seed: seed)
        let directory = TemporaryDirectory("attachment-sim")
        defer { try? FileManager.default.removeItem(at: directory.url) }
        let clock = ManualClock()
        let store = InMemoryObjectStore(now: { clock.now() })
        store.segmentSize = Self.segmentBytes
        store.lifetimeSeconds = 600
        let server = InMemoryServer(objectStore: store)
        var configuration = OutboxConfiguration(account: "sim-member", clock: clock, defaultPolicy: .idempotent)
        configuration.retryPolicy = RetryPolicy(initialDelaySeconds: 1, multiplier: 2, maxDelaySeconds: 60)
        func open() throws -> Outbox { try Outbox(directory: directory.url, transport: server, configuration: configuration) }
        var outbox = try open()
        var report = Report()
        var files: [AttachmentID: Data] = [:]
        var writes: [OperationID] = []
        func broken(_ what: String) -> Broken { Broken(description: "seed \(seed): \(what)") }

        for step in 0..<steps {
            switch random.int(in: 0..<10) {
            case 0, 1, 2:
                // A write, with files more often than not, some of them empty or one byte over a segment.
                let count = random.int(in: 0..<3)
                var photos: [Attachment] = []
                for index in 0..<count {
                    let size = [0, 1, Int(Self.segmentBytes), Int(Self.segmentBytes) + 1, random.int(in: 2..<4_000)][random.int(in: 0..<5)]
                    let bytes = Data((0..<size).map { _ in UInt8(truncatingIfNeeded: random.int(in: 0..<256)) })
                    let photo = Attachment(bytes: bytes, contentType: "image/jpeg", name: "photo-\(step)-\(index).jpg")
                    files[photo.id] = bytes
                    photos.append(photo)
                }
                let names = photos.map { "\"\($0.id)\"" }.joined(separator: ",")
                let request = OutboxRequest(
                    businessID: "sim", operationType: "delivery.create", endpoint: "/deliveries",
                    payload: Data(#"{"id":"d-\#(step)","photos":[\#(names)]}"#.utf8), category: "Deliveries",
                    entityLabel: "Delivery \(step)", summary: "New delivery")
                writes.append(try await outbox.enqueue(request, attaching: photos))
                report.writes += 1
                report.files += photos.count
            case 3:
                server.setOnline(random.int(in: 0..<2) == 1)
            case 4:
                store.expireGrants()
                report.expiries += 1
            case 5:
                store.failNextPuts(503)
            case 6:
                // The next completion's answer of a file not completed yet is lost after it landed.
                if let id = files.keys.sorted().first(where: { store.object($0) == nil }) {
                    server.inject(.applyThenDropResponse, forKey: id.requestKey("complete-0"))
                }
            case 7:
                // The app ends in the middle of an upload: what it held in memory (its grants) goes.
                await outbox.uploadSomeSegments(random.int(in: 1..<4))
                outbox.close()
                outbox = try open()
                report.restarts += 1
            case 8:
                clock.advance(by: Double(random.int(in: 0..<900)))
            default:
                await outbox.drain()
            }
            try checkFilesKept(outbox, broken)
        }

        // The network heals: every write settles.
        server.setOnline(true)
        for _ in 0..<200 {
            clock.advance(by: 120)
            await outbox.drain()
            if try writes.allSatisfy({ try outbox.operation($0)?.status == .synced }) { break }
        }
        defer { outbox.close() }
        for id in writes {
            let row = try outbox.operation(id)
            guard row?.status == .synced else { throw broken("\(id) ended \(row.map { "\($0.status)" } ?? "missing") after the network healed") }
            guard server.appliedCount(id.idempotencyKey) == 1 else { throw broken("\(id) applied \(server.appliedCount(id.idempotencyKey)) times") }
            let history = try outbox.history(id)
            guard case .enqueued(let enqueued)? = history.first?.body else { throw broken("\(id) has no enqueued event first") }
            let firstAttempt = history.firstIndex { $0.kind == .attemptStarted } ?? history.count
            for manifest in enqueued.attachments {
                let completed = history.firstIndex {
                    if case .attachmentCompleted(let done) = $0.body { done.attachment == manifest.id } else { false }
                }
                guard let completed, completed < firstAttempt else { throw broken("\(id) was sent before \(manifest.id) was completed") }
                guard let object = store.object(manifest.id), SHA256Digest(of: object) == manifest.sha256, object == files[manifest.id] else {
                    throw broken("\(manifest.id)'s object is not its file")
                }
                let count = AttachmentUploadShape.segments(size: manifest.size, segmentSize: Self.segmentBytes)
                for number in 1...count where store.puts(manifest.id, segment: number) != 1 {
                    throw broken("segment \(number) of \(manifest.id) was stored \(store.puts(manifest.id, segment: number)) times")
                }
                report.segmentsStored += count
            }
            report.grants += history.filter { $0.kind == .attachmentGranted }.count
        }
        return report
    }

    /// Every file a write not yet settled refers to is there, whole.
    private func checkFilesKept(_ outbox: Outbox, _ broken: (String) -> Broken) throws {
        for problem in try outbox.attachmentFileProblems() {
            throw broken("a pending write's file went: \(problem)")
        }
    }
}

/// The segment count of a file, as the grants cut it.
enum AttachmentUploadShape {
    static func segments(size: Int64, segmentSize: Int64) -> Int {
        size == 0 ? 1 : Int((size + segmentSize - 1) / segmentSize)
    }
}
