import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Outbox
import OutboxAudit
import OutboxCrypto
import OutboxTestServer
import OutboxTesting
import Synchronization
import TestHarness
import ThrowawaySwiftStore

#if canImport(Glibc)
import Glibc
#endif

/// What scenarios 15.1 to 15.3 share: the run's OpenStack Swift store, the loopback test server
/// granting and completing uploads into it, files of seeded bytes, the engine's upload timed step
/// by step, `curl -T` of the same file, and the copy-and-fsync floor of keeping a file.
enum AttachmentUploads {
    /// The segment size the test server grants (its default, `UploadStore.segmentBytes`).
    static let segmentBytes: Int64 = 8 << 20
    static let contentType = "application/octet-stream"

    /// The run's store, started on first use (``Fixtures/swiftStore(context:)``), and one
    /// container of it for this run's objects.
    struct Store: Sendable {
        var store: TemporarySwiftStore
        var container: String
        var tempURLKey: String
    }

    /// A loopback test server (in process, claims in memory) granting uploads into `store`.
    static func server(_ store: Store) throws -> TestServer {
        var configuration = TestServer.Configuration(readTimeout: 120, writeTimeout: 120)
        configuration.uploads = UploadStore(
            storageURL: store.store.storageURL, authToken: store.store.authToken, tempURLKey: store.tempURLKey,
            container: store.container, segmentBytes: segmentBytes, maxObjectBytes: 256 << 20)
        return try TestServer(configuration)
    }

    /// Writes `bytes` seeded bytes (xorshift, so the store cannot compress or deduplicate them)
    /// to `url`, a megabyte at a time, and fsyncs it: memory does not grow with the file.
    static func writeFile(_ url: URL, bytes: Int, seed: UInt64) throws {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw BenchmarkFailure(description: "cannot create \(url.path): errno \(errno)") }
        defer { _ = close(descriptor) }
        var state = seed | 1
        var chunk = [UInt64](repeating: 0, count: (1 << 20) / 8)
        var left = bytes
        while left > 0 {
            for index in chunk.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                chunk[index] = state
            }
            let count = min(left, 1 << 20)
            let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress!, count) }
            guard written == count else { throw BenchmarkFailure(description: "short write to \(url.path)") }
            left -= count
        }
        guard fsync(descriptor) == 0 else { throw BenchmarkFailure(description: "fsync of \(url.path) failed") }
    }

    /// A product whose payload names its attached file.
    static func request(_ attachment: Attachment, number: Int) -> OutboxRequest {
        OutboxRequest(
            businessID: Workload.businessID, operationType: "product.create", endpoint: "/products",
            payload: Data(#"{"id":"photo-\#(number)-\#(UUID().uuidString)","name":"Gauze 10 cm","delivery_note":"\#(attachment.id)"}"#.utf8),
            category: "Products", entityLabel: "Gauze 10 cm", summary: "New product with its delivery note")
    }

    /// An engine in `directory` whose member is signed out (nothing is sent until ``signIn``).
    static func openSignedOut(_ directory: URL, transport: any OutboxTransport) throws -> (Outbox, SwitchableSession) {
        let session = SwitchableSession(account: nil)
        var configuration = Workload.configuration(durability: .full)
        configuration.session = session
        configuration.retryPolicy = OperationTypePolicy.RetryPolicy(initialDelaySeconds: 0.01, multiplier: 2, maxDelaySeconds: 0.05)
        return (try Outbox(directory: directory, transport: transport, configuration: configuration), session)
    }

    /// One upload through the engine: its whole time and each step's.
    struct EngineUpload: Codable, Sendable {
        /// From signing in to the write synced: the grant, every segment, the completion, the write.
        var seconds: Double
        /// The time inside each kind of request, summed (one at a time: they do not overlap).
        var grantSeconds: Double
        var segmentsSeconds: Double
        var completionSeconds: Double
        var writeSeconds: Double
        var segments: Int
        /// How far `RssAnon` rose above its value before the drain, at its peak, in KiB (when sampled).
        var anonymousPeakKiB: Double?
        var anonymousEndKiB: Double?
    }

    /// Keeps `file` with a write (signed out), then signs in and drains until the write synced,
    /// timing each request the engine makes; with `sampling`, a thread samples `RssAnon` meanwhile.
    static func upload(file: URL, journal: URL, server: URL, number: Int, sampling: Bool = false) async throws -> EngineUpload {
        let transport = StepTimingTransport(URLSessionTransport(baseURL: server, timeoutSeconds: 120))
        let (outbox, session) = try openSignedOut(journal, transport: transport)
        defer { outbox.close() }
        let attachment = Attachment(file: file, contentType: contentType, name: "delivery-note.bin")
        let id = try await outbox.enqueue(request(attachment, number: number), attaching: [attachment])
        let baseline = Double(Probe.status("RssAnon") ?? 0)
        let sampler = AnonymousMemorySampler()
        if sampling { Thread { sampler.sample() }.start() }
        session.signIn(Workload.account)
        let start = Stopwatch.now()
        // A hang guard, never a timing: the retries' backoff is at most 50 ms.
        var synced = false
        for _ in 0..<12_000 {
            await outbox.drain()
            if try outbox.operationState(id)?.status == .synced { synced = true; break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let seconds = Double(Stopwatch.now() - start) / 1e9
        let peak = sampling ? sampler.stop() : 0
        let end = Double(Probe.status("RssAnon") ?? 0)
        guard synced else {
            throw BenchmarkFailure(description: "the write with its \(file.lastPathComponent) did not sync: \(String(describing: try outbox.operation(id)))")
        }
        let steps = transport.steps
        return EngineUpload(
            seconds: seconds, grantSeconds: steps.grant, segmentsSeconds: steps.segments, completionSeconds: steps.completion,
            writeSeconds: steps.write, segments: steps.segmentCount,
            anonymousPeakKiB: sampling ? max(0, max(peak, end) - baseline) : nil, anonymousEndKiB: sampling ? max(0, end - baseline) : nil)
    }

    /// `curl -T file` to a TempURL of a new object in the same container: the wall time of the
    /// process (its start included) and curl's own `time_total`.
    static func curl(file: URL, store: Store) throws -> (seconds: Double, curlSeconds: Double, object: String) {
        let object = "curl-\(UUID().uuidString.lowercased())"
        let path = store.store.objectPath(container: store.container, object: object)
        let query = SwiftTempURL.query(method: "PUT", path: path, expiresUnixSeconds: Int64(Date().timeIntervalSince1970) + 3600, key: store.tempURLKey)
        let url = store.store.objectURL(container: store.container, object: object, query: query)
        var finished: SpawnedProcess.Finished?
        let nanoseconds = try Stopwatch.time {
            finished = try SpawnedProcess.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "-T", file.path, url.absoluteString])
        }
        guard let finished, finished.termination == .exited(0) else {
            throw BenchmarkFailure(description: "curl -T failed: \(finished?.errorText ?? "")")
        }
        let words = finished.outputText.split(separator: " ")
        guard words.first == "201", words.count == 2, let total = Double(words[1]) else {
            throw BenchmarkFailure(description: "curl -T was answered: \(finished.outputText)")
        }
        return (nanoseconds / 1e9, total, object)
    }

    /// `curl` reading `object` back from the store with the account's token, to /dev/null: what
    /// a completion's read-back costs before its hash, in seconds (curl's own `time_total`).
    static func curlRead(object: String, store: Store) throws -> Double {
        let url = store.store.objectURL(container: store.container, object: object)
        let finished = try SpawnedProcess.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
                                                                "-H", "X-Auth-Token: \(store.store.authToken)", url.absoluteString])
        let words = finished.outputText.split(separator: " ")
        guard finished.termination == .exited(0), words.first == "200", words.count == 2, let total = Double(words[1]) else {
            throw BenchmarkFailure(description: "curl GET was answered: \(finished.outputText) \(finished.errorText)")
        }
        return total
    }

    /// The floor of keeping a file: read it, write a copy a megabyte at a time, fsync the copy and
    /// its directory. In nanoseconds.
    static func copyFloor(_ source: URL, into directory: URL) throws -> Double {
        try Stopwatch.time {
            let input = open(source.path, O_RDONLY)
            guard input >= 0 else { throw BenchmarkFailure(description: "cannot read \(source.path)") }
            defer { _ = close(input) }
            let copy = directory.appendingPathComponent("copy-\(UUID().uuidString)")
            let output = open(copy.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard output >= 0 else { throw BenchmarkFailure(description: "cannot create \(copy.path)") }
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress!, $0.count) }
                guard count >= 0 else { throw BenchmarkFailure(description: "read of \(source.path) failed") }
                if count == 0 { break }
                let written = buffer.withUnsafeBytes { write(output, $0.baseAddress!, count) }
                guard written == count else { throw BenchmarkFailure(description: "short write to \(copy.path)") }
            }
            guard fsync(output) == 0, close(output) == 0 else { throw BenchmarkFailure(description: "fsync of \(copy.path) failed") }
            let folder = open(directory.path, O_RDONLY | O_DIRECTORY)
            guard folder >= 0, fsync(folder) == 0 else { throw BenchmarkFailure(description: "fsync of \(directory.path) failed") }
            _ = close(folder)
        }
    }

    /// SHA-256 of `file`'s bytes read a megabyte at a time, as the engine hashes while it copies:
    /// the hash's share, in nanoseconds (the read from the page cache included).
    static func hashTime(_ file: URL) throws -> Double {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        let data = try handle.readToEnd() ?? Data()
        return Stopwatch.time {
            var hasher = SHA256Hasher()
            var offset = 0
            data.withUnsafeBytes { bytes in
                while offset < bytes.count {
                    let end = min(bytes.count, offset + (1 << 20))
                    hasher.update(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                    offset = end
                }
            }
            _ = hasher.finalize()
        }
    }

    /// Reading every segment of `file` into memory as `URLSessionTransport.upload` does
    /// (`SegmentUpload.bytes()`), in nanoseconds.
    static func segmentReadTime(_ file: URL) throws -> Double {
        let size = Int64(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0)
        let url = URL(string: "http://127.0.0.1/")!
        return try Stopwatch.time {
            var offset: Int64 = 0
            while offset < size {
                let length = min(segmentBytes, size - offset)
                _ = try SegmentUpload(url: url, body: .file(file, offset: offset), offset: offset, length: length).bytes()
                offset += length
            }
        }
    }
}

/// Passes every request on, timing each kind: the grant, the segments, the completion, the write.
final class StepTimingTransport: OutboxTransport {
    struct Steps: Sendable {
        var grant = 0.0
        var segments = 0.0
        var completion = 0.0
        var write = 0.0
        var segmentCount = 0
    }

    private let inner: URLSessionTransport
    private let timed = Mutex(Steps())

    init(_ inner: URLSessionTransport) {
        self.inner = inner
    }

    var steps: Steps { timed.withLock { $0 } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let start = Stopwatch.now()
        defer {
            let seconds = Double(Stopwatch.now() - start) / 1e9
            timed.withLock { steps in
                if request.endpoint.hasPrefix("/uploads/") { steps.completion += seconds }
                else if request.endpoint.hasPrefix("/uploads") { steps.grant += seconds }
                else { steps.write += seconds }
            }
        }
        return try await inner.send(request)
    }

    func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
        let start = Stopwatch.now()
        defer {
            let seconds = Double(Stopwatch.now() - start) / 1e9
            timed.withLock { $0.segments += seconds; $0.segmentCount += 1 }
        }
        return try await inner.upload(segment)
    }
}

/// Scenario 15.2's child (`outbox-bench --probe attachment-upload <dir>`): the engine alone in a
/// fresh process, so that its `RssAnon` holds no other contender's memory. `<dir>/probe.json`
/// names the server and the file; the child prints one ``AttachmentUploads/EngineUpload``.
enum AttachmentProbe {
    struct Setup: Codable {
        var server: String
        var file: String
        var number: Int
    }

    static func run(directory: URL) -> Int32 {
        let done = DispatchSemaphore(value: 0)
        let status = Mutex<Int32>(1)
        Task.detached {
            do {
                let setup = try JSONDecoder().decode(Setup.self, from: Data(contentsOf: directory.appendingPathComponent("probe.json")))
                let journal = directory.appendingPathComponent("journal")
                try FileManager.default.createDirectory(at: journal, withIntermediateDirectories: true)
                let measured = try await AttachmentUploads.upload(
                    file: URL(fileURLWithPath: setup.file), journal: journal, server: URL(string: setup.server)!,
                    number: setup.number, sampling: true)
                FileHandle.standardOutput.write(try JSONEncoder().encode(measured))
                status.withLock { $0 = 0 }
            } catch {
                FileHandle.standardError.write(Data("attachment-upload: \(error)\n".utf8))
            }
            done.signal()
        }
        done.wait()
        return status.withLock { $0 }
    }
}
