import Foundation
import Outbox
import OutboxAudit
import OutboxTesting

/// Scenarios 15.1 to 15.3: attachments. A file uploaded through the engine (grant, 8 MiB
/// segments to signed URLs, completion, the write) beside `curl -T` of the same file to the same
/// OpenStack Swift store; the engine's anonymous memory while it uploads a 256 MiB file; and an
/// enqueue keeping a 10 MiB file beside the floor of copying it and fsyncing the copy.
extension Scenario {
    static let attachmentUpload = Scenario(
        id: "15.1",
        name: "attachments-upload",
        title: "Attachments: a 64 MiB file uploaded through the engine (grant, 8 MiB segments, completion, write) beside curl -T of it",
        metrics: [
            .time("time", "upload time", .milliseconds),
            .rate("rate", "throughput, MB/s"),
            .time("segments", "of which segment PUTs", .milliseconds),
            .time("completion", "of which the completion", .milliseconds),
            .time("grant", "of which grant and write", .milliseconds),
            .time("read", "segments read into memory, apart", .milliseconds),
            .time("read-back", "the object read back (curl GET), apart", .milliseconds),
            .time("sha", "SHA-256 of the file, apart", .milliseconds),
            .time("curl-own", "curl's own time_total", .milliseconds),
        ],
        contenders: Contenders(ours: "engine", sqlite: "curl -T", floor: "-", versusSQLite: "vs curl", versusFloor: "-"),
        limit: { result in
            let total = result.ours("time") ?? 0
            func share(_ key: String) -> String {
                guard let value = result.ours(key), total > 0 else { return "-" }
                return "\(TextReport.format(value)) ms (\(TextReport.format(100 * value / total))%)"
            }
            return "both over loopback to the same one-replica Swift store, which writes and MD5s every byte; curl sends the "
                + "file as one PUT to one TempURL. The engine asks a grant, PUTs each 8 MiB segment through "
                + "URLSessionTransport.upload (the segment read whole into memory first, SegmentUpload.bytes(): "
                + "\(TextReport.format(result.ours("read"))) ms for the file measured apart, then handed to URLSession as Data), then "
                + "the completion, where the test server (in process) HEADs each segment, writes the Static Large Object manifest and "
                + "reads the whole object back to hash it (measured apart: the same bytes read back by curl GET "
                + "\(TextReport.format(result.ours("read-back"))) ms, their SHA-256 \(TextReport.format(result.ours("sha"))) ms). Segment PUTs \(share("segments")), completion \(share("completion")), "
                + "grant and write \(share("grant")). curl's process, started per repeat, is timed whole; its own time_total "
                + "\(TextReport.format(result.sqlite("curl-own"))) ms"
        },
        targets: [
            Target(text: "the engine's throughput at least 0.9x curl -T's") { result in
                result["rate"]?.versusSQLite.map { (TextReport.ratioText($0.median), $0.median >= 0.9) }
            },
        ],
        run: { context in
            let store = try context.fixtures.swiftStore(context: context)
            let server = try AttachmentUploads.server(store)
            defer { server.stop() }
            let bytes = context.quick ? 8 << 20 : 64 << 20
            let directory = try context.freshDirectory("attachments-upload")
            defer { context.remove(directory) }
            let file = directory.appendingPathComponent("photo.bin")
            let number = Int.random(in: 0..<Int(Int32.max))
            try AttachmentUploads.writeFile(file, bytes: bytes, seed: UInt64(number))
            let journal = directory.appendingPathComponent("journal")
            try FileManager.default.createDirectory(at: journal, withIntermediateDirectories: true)
            let engine = try await AttachmentUploads.upload(file: file, journal: journal, server: server.baseURL, number: number)
            let curl = try AttachmentUploads.curl(file: file, store: store)
            let read = try AttachmentUploads.segmentReadTime(file)
            let readBack = try AttachmentUploads.curlRead(object: curl.object, store: store)
            let sha = try AttachmentUploads.hashTime(file)
            let megabytes = Double(bytes) / 1e6
            return [
                "time": Trio(ours: engine.seconds * 1000, sqlite: curl.seconds * 1000),
                "rate": Trio(ours: megabytes / engine.seconds, sqlite: megabytes / curl.seconds),
                "segments": Trio(ours: engine.segmentsSeconds * 1000),
                "completion": Trio(ours: engine.completionSeconds * 1000),
                "grant": Trio(ours: (engine.grantSeconds + engine.writeSeconds) * 1000),
                "read": Trio(ours: read / 1e6),
                "read-back": Trio(ours: readBack * 1000),
                "sha": Trio(ours: sha / 1e6),
                "curl-own": Trio(sqlite: curl.curlSeconds * 1000),
            ]
        }
    )

    static let attachmentUploadMemory = Scenario(
        id: "15.2",
        name: "attachments-upload-memory",
        title: "Attachments: anonymous memory (RssAnon) growth while the engine uploads a 256 MiB file, in a process of its own",
        metrics: [
            .size("anon", "RssAnon growth, peak", .mebibytes),
            .size("anon-end", "RssAnon growth, at the end", .mebibytes),
            .time("time", "upload time", .seconds),
            .count("segments", "segments PUT", higherIsBetter: false),
        ],
        contenders: Contenders(ours: "engine", sqlite: "-", floor: "-", versusSQLite: "-", versusFloor: "-"),
        limit: { result in
            "the engine's child process alone (the test server and the store in other processes), RssAnon read every 5 ms from "
                + "/proc/self/status, against its value after the enqueue, before the drain. URLSessionTransport.upload reads each "
                + "8 MiB segment whole into a Data (SegmentUpload.bytes()) and hands it to URLSession.upload(for:from:), which on "
                + "Linux (swift-corelibs-foundation over libcurl) keeps it until the PUT's answer: at least one segment's 8 MiB is "
                + "the floor of that design, and whatever copies the body on its way to libcurl adds to it; the malloc arenas of "
                + "the threads that touched those buffers may keep them after they are freed (the growth at the end)"
        },
        targets: [.oursBelow(16, "MiB", "anon", "RssAnon growth while uploading 256 MiB under 16 MiB")],
        warmUp: false,
        run: { context in
            let store = try context.fixtures.swiftStore(context: context)
            let server = try AttachmentUploads.server(store)
            defer { server.stop() }
            let bytes = context.quick ? 16 << 20 : 256 << 20
            let directory = try context.freshDirectory("attachments-memory")
            defer { context.remove(directory) }
            let file = directory.appendingPathComponent("photo.bin")
            let number = Int.random(in: 0..<Int(Int32.max))
            try AttachmentUploads.writeFile(file, bytes: bytes, seed: UInt64(number))
            let setup = AttachmentProbe.Setup(server: server.baseURL.absoluteString, file: file.path, number: number)
            try JSONEncoder().encode(setup).write(to: directory.appendingPathComponent("probe.json"))
            let measured = try Probe.measure(.attachmentUpload, path: directory, as: AttachmentUploads.EngineUpload.self)
            return [
                "anon": Trio(ours: (measured.anonymousPeakKiB ?? 0) / 1024),
                "anon-end": Trio(ours: (measured.anonymousEndKiB ?? 0) / 1024),
                "time": Trio(ours: measured.seconds),
                "segments": Trio(ours: Double(measured.segments)),
            ]
        }
    )

    static let attachmentEnqueue = Scenario(
        id: "15.3",
        name: "attachments-enqueue",
        title: "Attachments: an enqueue keeping a 10 MiB file beside copying the file and fsyncing the copy and its directory",
        metrics: [
            .time("enqueue", "enqueue with its file, median", .milliseconds),
            .time("sha", "SHA-256 of the file, apart", .milliseconds),
            .time("plain", "an enqueue without a file, median", .milliseconds),
        ],
        contenders: Contenders(ours: "enqueue", sqlite: "-", floor: "copy + fsync", versusSQLite: "-", versusFloor: "vs floor"),
        limit: { result in
            "the floor reads the file a megabyte at a time, writes a copy, fsyncs it and its directory. The engine does the same "
                + "(AttachmentFiles.keep) and also hashes every byte with SHA-256 as it copies (\(TextReport.format(result.ours("sha"))) ms "
                + "for the file, measured apart on the same bytes), renames the copy to its hash, fsyncs the directory, then "
                + "commits the write durably (an enqueue without a file: \(TextReport.format(result.ours("plain"))) ms)"
        },
        targets: [
            Target(text: "an enqueue with a 10 MiB file at most 1.2x copying and fsyncing it") { result in
                result["enqueue"]?.versusFloor.map { (TextReport.ratioText($0.median), $0.median <= 1.2) }
            },
        ],
        run: { context in
            let bytes = context.quick ? 1 << 20 : 10 << 20
            let iterations = context.quick ? 1 : 5
            let directory = try context.freshDirectory("attachments-enqueue")
            defer { context.remove(directory) }
            let journal = directory.appendingPathComponent("journal")
            let copies = directory.appendingPathComponent("copies")
            try FileManager.default.createDirectory(at: journal, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: copies, withIntermediateDirectories: true)
            // A file of its own per enqueue: the same bytes twice would be kept once.
            var files: [URL] = []
            for index in 0..<iterations {
                let file = directory.appendingPathComponent("photo-\(index).bin")
                try AttachmentUploads.writeFile(file, bytes: bytes, seed: UInt64(Int.random(in: 1..<Int(Int32.max))))
                files.append(file)
            }
            let (outbox, _) = try AttachmentUploads.openSignedOut(journal, transport: InMemoryServer())
            defer { outbox.close() }
            var ours: [Double] = []
            var floors: [Double] = []
            var plain: [Double] = []
            for (index, file) in files.enumerated() {
                // Alternated, so that the disk's moods fall on both alike.
                floors.append(try AttachmentUploads.copyFloor(file, into: copies))
                let attachment = Attachment(file: file, contentType: AttachmentUploads.contentType, name: "delivery-note.bin")
                let request = AttachmentUploads.request(attachment, number: index)
                ours.append(try await Stopwatch.time { _ = try await outbox.enqueue(request, attaching: [attachment]) })
                plain.append(try await Stopwatch.time { _ = try await outbox.enqueue(Workload.request(index)) })
            }
            let sha = try AttachmentUploads.hashTime(files[0])
            func median(_ values: [Double]) -> Double { Statistics(values).median / 1e6 }
            return [
                "enqueue": Trio(ours: median(ours), floor: median(floors)),
                "sha": Trio(ours: sha / 1e6),
                "plain": Trio(ours: median(plain)),
            ]
        }
    )
}
