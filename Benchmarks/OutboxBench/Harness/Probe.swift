import Foundation
import Outbox
import OutboxAudit
import OutboxStorage
import TestHarness

/// One open measured in a fresh child process, for a clean peak-memory figure.
///
/// The parent runs this executable again with `--probe <kind> <path>`. The child resets its peak
/// resident set (`/proc/self/clear_refs`), opens the store and reads what the Sync tab needs, then
/// prints the time, each step of it (``Steps``), how far its peak resident set (`VmHWM`) rose, and
/// how much of the resident set added is anonymous memory (heap and stacks, `RssAnon`) rather than
/// mapped journal pages, as one JSON line. Closing is timed apart: a launch does not wait for it.
enum Probe {
    enum Kind: String, CaseIterable, Sendable {
        /// The engine: `Outbox` open, then `syncTab`.
        case engine
        /// The SQLite outbox: open, then its Sync tab queries.
        case sqlite
        /// Raw LMDB: open the environment, read the last event.
        case floor
        /// Scenario 14.1 (``PullProbe``): a feed's pages applied from a file of them, by the
        /// engine, by the SQLite client, by raw LMDB commits; then pulled over loopback by the
        /// engine and by the SQLite client.
        case pullEngine = "pull-engine"
        case pullSQLite = "pull-sqlite"
        case pullFloor = "pull-floor"
        case pullEngineHTTP = "pull-engine-http"
        case pullSQLiteHTTP = "pull-sqlite-http"
        /// Scenario 14.3: a pulled journal with pending edits fetches its base again whole.
        case pullResnapshot = "pull-resnapshot"
        /// Scenario 14.6 (``WorkingProbe``): pulled over loopback while the member saves and a
        /// screen reads, by the engine and by the SQLite client.
        case pullEngineWorking = "pull-engine-working"
        case pullSQLiteWorking = "pull-sqlite-working"
        /// Scenario 14.7 (``ResnapshotProbe``): the same at a million records, the member reading and saving throughout.
        case pullResnapshotLive = "pull-resnapshot-live"
        /// Scenario 15.2 (``AttachmentProbe``): a file uploaded through the engine, `RssAnon` sampled.
        case attachmentUpload = "attachment-upload"
    }

    struct Measurement: Codable, Sendable {
        /// The open and its first reads.
        var milliseconds: Double
        var peakKiB: Double
        var anonymousKiB: Double
        var steps: Steps
    }

    /// One open's steps, in microseconds; `nil` for a step a contender has not or does not name.
    struct Steps: Codable, Sendable {
        /// The open alone, without its first reads.
        var open: Double?
        /// The directory and the engine's process lock.
        var preparing: Double?
        /// The data file's check and `mdb_env_open`.
        var mapping: Double?
        /// The databases opened (`mdb_dbi_open`).
        var databases: Double?
        /// The engine's checks of `meta`: format, projection version, account, key check.
        var meta: Double?
        /// The engine's record of its opening: handed to its writer's queue.
        var recording: Double?
        /// The rest of the engine's open: its objects.
        var rest: Double?
        /// The first reads: the Sync tab, or the floor's one read.
        var reads: Double?
        /// Closing afterwards, apart from the open.
        var close: Double?

        /// The engine's steps: its open's phases, what the open took besides them, its first
        /// reads and its close, each given in nanoseconds.
        init(_ phases: OpenPhases, open: Double, reads: Double, close: Double) {
            let named = phases.preparing + phases.mapping + phases.databases + phases.meta + phases.recording
            self.open = open / 1e3
            preparing = Double(phases.preparing) / 1e3
            mapping = Double(phases.mapping) / 1e3
            databases = Double(phases.databases) / 1e3
            meta = Double(phases.meta) / 1e3
            recording = Double(phases.recording) / 1e3
            rest = max(0, open - Double(named)) / 1e3
            self.reads = reads / 1e3
            self.close = close / 1e3
        }

        /// Another contender's steps, each given in nanoseconds.
        init(open: Double, mapping: Double? = nil, databases: Double? = nil, reads: Double, close: Double) {
            self.open = open / 1e3
            self.mapping = mapping.map { $0 / 1e3 }
            self.databases = databases.map { $0 / 1e3 }
            self.reads = reads / 1e3
            self.close = close / 1e3
        }
    }

    /// The child's side: measures, prints one JSON line, answers the exit status.
    static func run(_ kind: Kind, path: String) -> Int32 {
        if kind == .attachmentUpload { return AttachmentProbe.run(directory: URL(fileURLWithPath: path)) }
        if kind == .pullResnapshotLive { return ResnapshotProbe.run(directory: URL(fileURLWithPath: path)) }
        if let pull = PullProbe.Mode(kind) { return PullProbe.run(pull, directory: URL(fileURLWithPath: path)) }
        do {
            let url = URL(fileURLWithPath: path)
            let baseline = resetPeak()
            let anonymous = Double(status("RssAnon") ?? 0)
            let (nanoseconds, steps) = try open(kind, url)
            let peak = Double(status("VmHWM") ?? 0)
            let measurement = Measurement(
                milliseconds: nanoseconds / 1e6,
                peakKiB: max(0, peak - baseline),
                anonymousKiB: max(0, Double(status("RssAnon") ?? 0) - anonymous),
                steps: steps
            )
            print(String(decoding: try JSONEncoder().encode(measurement), as: UTF8.self))
            return 0
        } catch {
            FileHandle.standardError.write(Data("probe \(kind.rawValue): \(error)\n".utf8))
            return 1
        }
    }

    /// The parent's side: runs a child and reads its measurement.
    static func measure(_ kind: Kind, path: URL) throws -> Measurement {
        try measure(kind, path: path, as: Measurement.self)
    }

    /// The parent's side for a child that prints another measurement.
    static func measure<M: Decodable>(_ kind: Kind, path: URL, as: M.Type) throws -> M {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let finished = try SpawnedProcess.run(executable, ["--probe", kind.rawValue, path.path])
        guard finished.termination == .exited(0) else {
            throw BenchmarkFailure(description: "the \(kind.rawValue) probe \(finished.termination): \(finished.errorText)")
        }
        return try JSONDecoder().decode(M.self, from: Data(finished.output))
    }

    /// Opens the store at `url` and reads what the Sync tab needs, then closes it: the open and
    /// its reads in nanoseconds, and each step.
    static func open(_ kind: Kind, _ url: URL) throws -> (nanoseconds: Double, steps: Steps) {
        switch kind {
        case .engine:
            var opened: Outbox?
            let open = try Stopwatch.time { opened = try Workload.openOutbox(url) }
            guard let outbox = opened else { throw BenchmarkFailure(description: "the engine did not open") }
            let reads = try Stopwatch.time { _ = try outbox.syncTab(isOnline: false) }
            let close = Stopwatch.time { outbox.close() }
            return (open + reads, Steps(outbox.openPhases, open: open, reads: reads, close: close))
        case .sqlite:
            var opened: SQLiteOutbox?
            let open = try Stopwatch.time { opened = try SQLiteOutbox(directory: url, durability: .full) }
            let reads = try Stopwatch.time { _ = try opened?.syncTab() }
            // Its connections close when it goes.
            let close = Stopwatch.time { opened = nil }
            return (open + reads, Steps(open: open, reads: reads, close: close))
        case .pullEngine, .pullSQLite, .pullFloor, .pullEngineHTTP, .pullSQLiteHTTP, .pullResnapshot, .pullEngineWorking, .pullSQLiteWorking,
             .pullResnapshotLive:
            preconditionFailure("a pull probe is run by PullProbe or ResnapshotProbe")
        case .attachmentUpload:
            preconditionFailure("an attachment probe is run by AttachmentProbe")
        case .floor:
            var opened: LMDBEnvironment?
            let mapping = try Stopwatch.time { opened = try RawJournal.open(url) }
            guard let environment = opened else { throw BenchmarkFailure(description: "the environment did not open") }
            var database: LMDBDatabase?
            let databases = try Stopwatch.time { database = try environment.openDatabase("events") }
            guard let events = database else { throw BenchmarkFailure(description: "no events database") }
            let reads = try Stopwatch.time { _ = try environment.read { txn in try txn.last(events) } }
            let close = Stopwatch.time { environment.close() }
            return (mapping + databases + reads, Steps(open: mapping + databases, mapping: mapping, databases: databases, reads: reads, close: close))
        }
    }

    /// Resets the peak resident set to the current one; answers it in KiB.
    static func resetPeak() -> Double {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        return Double(status("VmHWM") ?? status("VmRSS") ?? 0)
    }

    /// A `kB` field of `/proc/self/status`.
    static func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") }
        return line?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }
}

/// A journal opened with the LMDB layer alone, for floors and for marking projections stale.
enum RawJournal {
    static func withEnvironment<R>(_ directory: URL, _ body: (LMDBEnvironment, LMDBDatabase) throws -> R) throws -> R {
        let environment = try open(directory)
        defer { environment.close() }
        return try body(environment, try environment.openDatabase("events"))
    }

    /// The journal's environment, as the engine maps it.
    static func open(_ directory: URL) throws -> LMDBEnvironment {
        try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(maxMapSizeBytes: 8 << 30))
    }
}
