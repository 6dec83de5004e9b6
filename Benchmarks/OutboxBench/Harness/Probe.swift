import Foundation
import Outbox
import OutboxStorage
import TestHarness

/// One open measured in a fresh child process, for a clean peak-memory figure.
///
/// The parent runs this executable again with `--probe <kind> <path>`. The child resets its peak
/// resident set (`/proc/self/clear_refs`), opens the store and reads what the Sync tab needs, then
/// prints the time, how far its peak resident set (`VmHWM`) rose, and how much of the resident set
/// added is anonymous memory (heap and stacks, `RssAnon`) rather than mapped journal pages, as one
/// JSON line.
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
    }

    struct Measurement: Codable, Sendable {
        var milliseconds: Double
        var peakKiB: Double
        var anonymousKiB: Double
    }

    /// The child's side: measures, prints one JSON line, answers the exit status.
    static func run(_ kind: Kind, path: String) -> Int32 {
        if let pull = PullProbe.Mode(kind) { return PullProbe.run(pull, directory: URL(fileURLWithPath: path)) }
        do {
            let url = URL(fileURLWithPath: path)
            let baseline = resetPeak()
            let anonymous = Double(status("RssAnon") ?? 0)
            let nanoseconds = try Stopwatch.time { try open(kind, url) }
            let peak = Double(status("VmHWM") ?? 0)
            let measurement = Measurement(
                milliseconds: nanoseconds / 1e6,
                peakKiB: max(0, peak - baseline),
                anonymousKiB: max(0, Double(status("RssAnon") ?? 0) - anonymous)
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

    private static func open(_ kind: Kind, _ url: URL) throws {
        switch kind {
        case .engine:
            let outbox = try Workload.openOutbox(url)
            _ = try outbox.syncTab(isOnline: false)
            outbox.close()
        case .sqlite:
            let sqlite = try SQLiteOutbox(directory: url, durability: .full)
            _ = try sqlite.syncTab()
        case .pullEngine, .pullSQLite, .pullFloor, .pullEngineHTTP, .pullSQLiteHTTP, .pullResnapshot:
            preconditionFailure("a pull probe is run by PullProbe")
        case .floor:
            try RawJournal.withEnvironment(url) { environment, events in
                _ = try environment.read { txn in try txn.last(events) }
            }
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
        let environment = try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(maxMapSizeBytes: 8 << 30))
        defer { environment.close() }
        return try body(environment, try environment.openDatabase("events"))
    }
}
