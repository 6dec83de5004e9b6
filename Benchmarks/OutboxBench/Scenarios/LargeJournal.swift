import Foundation
import Outbox
import OutboxAudit
import OutboxStorage

/// Scenarios 4, 5 and 6: a journal of a million events, opened, rebuilt and queried.
extension Scenario {
    static let openLargeJournal = Scenario(
        id: "4",
        name: "open-large-journal",
        title: "Open a journal of 1,000,000 events and read the Sync tab",
        metrics: [
            .time("open-large", "open + Sync tab, large journal", .milliseconds),
            .time("open-small", "open + Sync tab, 10,000-event journal", .milliseconds),
            .time("fresh-large", "the same, large journal, in a fresh process", .milliseconds),
            .size("memory-large", "peak memory added, fresh process", .kibibytes),
            .size("memory-small", "the same, 10,000-event journal", .kibibytes),
            .size("anonymous-large", "of the large's, heap and stacks (RssAnon)", .kibibytes),
        ] + OpenStep.allCases.flatMap { step in
            [.time("warm-\(step.rawValue)", "large, warm: \(step.label)"), .time("fresh-\(step.rawValue)", "large, fresh: \(step.label)")]
        },
        limit: { result in
            "open the LMDB environment and read one page: \(TextReport.format(result.floor("open-large"))) ms. "
                + "Ours also opens its databases, checks meta, and hands `journalOpened` to its writer's queue, which commits it durably "
                + "with any attempts to abandon, while the Sync tab is read (no open waits for that commit); nothing is proportional "
                + "to the journal's length. Page cache warm. "
                + "Each contender's open is timed with its first reads, its close apart"
        },
        targets: [
            Target(text: "open at 1,000,000 events under 20 ms") { result in
                result.ours("open-large").map { ("\(TextReport.format($0)) ms", $0 < 20) }
            },
            Target(text: "independent of the journal's length (large at most 1.5x the 10,000-event open)") { result in
                guard let large = result.ours("open-large"), let small = result.ours("open-small") else { return nil }
                return (TextReport.ratioText(large / small), large / small <= 1.5)
            },
            .withinOfSQLite(1.3, "open-large", "open + Sync tab warm within 1.3x of the SQLite outbox"),
            .withinOfSQLite(1.5, "fresh-large", "fresh process within 1.5x of the SQLite outbox"),
        ],
        run: { context in
            let large = try await context.fixtures.journal(events: context.sizes.largeJournalEvents, context: context)
            let small = try await context.fixtures.journal(events: context.sizes.smallJournalEvents, context: context)
            let iterations = context.sizes.openIterations
            /// Each contender's opens in this process, one after another: the median of each figure.
            func opens(_ built: JournalBuilder.Built) throws -> [Probe.Kind: OpenFigures] {
                var figures: [Probe.Kind: OpenFigures] = [:]
                for kind in [Probe.Kind.engine, .sqlite, .floor] {
                    let path = kind == .sqlite ? built.sqliteDirectory : built.directory
                    let measured = try (0..<iterations).map { _ in try Probe.open(kind, path) }
                    figures[kind] = OpenFigures(measured)
                }
                return figures
            }
            let warm = try opens(large)
            let warmSmall = try opens(small)
            let ours = try Probe.measure(.engine, path: large.directory)
            let sqlite = try Probe.measure(.sqlite, path: large.sqliteDirectory)
            let floor = try Probe.measure(.floor, path: large.directory)
            let (oursSmall, sqliteSmall, floorSmall) = (try Probe.measure(.engine, path: small.directory),
                                                        try Probe.measure(.sqlite, path: small.sqliteDirectory),
                                                        try Probe.measure(.floor, path: small.directory))
            var sample: Sample = [
                "open-large": Trio(ours: warm[.engine]?.milliseconds, sqlite: warm[.sqlite]?.milliseconds, floor: warm[.floor]?.milliseconds),
                "open-small": Trio(ours: warmSmall[.engine]?.milliseconds, sqlite: warmSmall[.sqlite]?.milliseconds,
                                   floor: warmSmall[.floor]?.milliseconds),
                "fresh-large": Trio(ours: ours.milliseconds, sqlite: sqlite.milliseconds, floor: floor.milliseconds),
                "memory-large": Trio(ours: ours.peakKiB, sqlite: sqlite.peakKiB, floor: floor.peakKiB),
                "memory-small": Trio(ours: oursSmall.peakKiB, sqlite: sqliteSmall.peakKiB, floor: floorSmall.peakKiB),
                "anonymous-large": Trio(ours: ours.anonymousKiB, sqlite: sqlite.anonymousKiB, floor: floor.anonymousKiB),
            ]
            for step in OpenStep.allCases {
                sample["warm-\(step.rawValue)"] = Trio(ours: warm[.engine]?.steps[step], sqlite: warm[.sqlite]?.steps[step],
                                                      floor: warm[.floor]?.steps[step])
                sample["fresh-\(step.rawValue)"] = Trio(ours: ours.steps[step], sqlite: sqlite.steps[step], floor: floor.steps[step])
            }
            return sample
        }
    )

    static let rebuildProjections = Scenario(
        id: "5",
        name: "rebuild-projections",
        title: "Rebuild every projection from 1,000,000 events",
        metrics: [
            .time("rebuild", "rebuild at open", .seconds),
            .rate("rate", "events/s"),
        ],
        limit: { result in
            "read every record once, in order, from the page cache: \(TextReport.format(result.floor("rebuild"))) s. "
                + "The rebuild also checks and decodes each record, folds it, and writes the operation's state and "
                + "index entries. The SQLite outbox has no history to rebuild from"
        },
        targets: [
            Target(text: "rebuild under 1.5 s") { result in
                result.ours("rebuild").map { ("\(TextReport.format($0)) s", $0 < 1.5) }
            },
        ],
        run: { context in
            let large = try await context.fixtures.journal(events: context.sizes.largeJournalEvents, context: context)
            try markProjectionsStale(large.directory)
            var events = 0
            let ours = try Stopwatch.time {
                let outbox = try Workload.openOutbox(large.directory)
                events = Int(try outbox.lastSeq().rawValue)
                outbox.close()
            } / 1e9
            let floor = try Stopwatch.time {
                try RawJournal.withEnvironment(large.directory) { environment, database in
                    var checksum = 0
                    try environment.read { txn in
                        try txn.scan(database) { _, value in
                            checksum &+= Int(value[value.count - 1])
                            return .next
                        }
                    }
                    precondition(checksum >= 0, "unreachable: keeps the scan from being optimized away")
                }
            } / 1e9
            return [
                "rebuild": Trio(ours: ours, floor: floor),
                "rate": Trio(ours: Double(events) / ours, floor: Double(events) / floor),
            ]
        }
    )

    static let oneHistory = Scenario(
        id: "6",
        name: "history",
        title: "One operation's history in a journal of 1,000,000 events",
        metrics: [
            .time("history", "history of one operation (5 events), median"),
            .time("history-p99", "the same, p99"),
        ],
        limit: { result in
            "one read transaction fetching the operation's 5 records by key: \(TextReport.format(result.floor("history"))) µs. "
                + "Ours also reads the operation's state, which lists them, and checks and decodes each. The SQLite outbox keeps no "
                + "history: its figure is one row by id, all it could show"
        },
        targets: [
            Target(text: "one history under 100 µs") { result in
                result.ours("history").map { ("\(TextReport.format($0)) µs", $0 < 100) }
            },
        ],
        run: { context in
            let large = try await context.fixtures.journal(events: context.sizes.largeJournalEvents, context: context)
            let iterations = context.sizes.readIterations
            let floor = try RawJournal.withEnvironment(large.directory) { environment, events in
                let keys = large.sampleSeqs.map(\.bigEndianByteArray)
                return try (0..<iterations).map { _ in
                    try Stopwatch.time {
                        let found = try environment.read { txn in try keys.allSatisfy { try txn.contains(events, key: $0) } }
                        precondition(found, "a sample event is missing")
                    }
                }
            }
            let outbox = try Workload.openOutbox(large.directory)
            let ours = try (0..<iterations).map { _ in
                try Stopwatch.time {
                    let events = try outbox.journalEvents(of: large.sample)
                    precondition(events.count == 5, "the sample has 5 events")
                }
            }
            outbox.close()
            let sqlite = try SQLiteOutbox(directory: large.sqliteDirectory, durability: .full)
            let theirs = try (0..<iterations).map { _ in
                try Stopwatch.time {
                    let row = try sqlite.row(large.sample)
                    precondition(row != nil, "the sample row is missing")
                }
            }
            let (o, s, f) = (Latencies(nanoseconds: ours), Latencies(nanoseconds: theirs), Latencies(nanoseconds: floor))
            return [
                "history": Trio(ours: o.p50, sqlite: s.p50, floor: f.p50),
                "history-p99": Trio(ours: o.p99, sqlite: s.p99, floor: f.p99),
            ]
        }
    )

    /// Writes another projection version in `meta`, as an older engine's layout would look: the
    /// next open rebuilds every projection.
    static func markProjectionsStale(_ directory: URL) throws {
        let environment = try LMDBEnvironment.open(directory: directory, options: LMDBEnvironment.Options(maxMapSizeBytes: 8 << 30))
        defer { environment.close() }
        let meta = try environment.openDatabase("meta")
        try environment.write { txn in
            try txn.put(meta, key: Array("projection-version".utf8), value: UInt32(0).bigEndianByteArray)
        }
    }
}

/// The steps of an open that scenario 4 reports, each a metric for the warm and the fresh open.
enum OpenStep: String, CaseIterable, Sendable {
    case open, preparing, mapping, databases, meta, recording, rest, reads, close

    var label: String {
        switch self {
        case .open: "the open alone, without its reads"
        case .preparing: "directory and process lock"
        case .mapping: "data file check and mdb_env_open"
        case .databases: "databases opened (mdb_dbi_open)"
        case .meta: "meta checks (format, layout, account, key)"
        case .recording: "the opening recorded, all told"
        case .rest: "the rest of the open (the engine's objects)"
        case .reads: "first reads (the Sync tab)"
        case .close: "close, apart from the open"
        }
    }
}

extension Probe.Steps {
    /// One step, in microseconds.
    subscript(step: OpenStep) -> Double? {
        switch step {
        case .open: open
        case .preparing: preparing
        case .mapping: mapping
        case .databases: databases
        case .meta: meta
        case .recording: recording
        case .rest: rest
        case .reads: reads
        case .close: close
        }
    }
}

/// One contender's opens in one repeat: the median of each figure over them.
struct OpenFigures {
    var milliseconds: Double
    var steps: [OpenStep: Double] = [:]

    init(_ opens: [(nanoseconds: Double, steps: Probe.Steps)]) {
        milliseconds = Statistics(opens.map(\.nanoseconds)).median / 1e6
        for step in OpenStep.allCases {
            let values = opens.compactMap { $0.steps[step] }
            if !values.isEmpty { steps[step] = Statistics(values).median }
        }
    }
}

extension Target {
    /// Ours at `key` at most `factor` times the SQLite outbox's (the median of the ratios).
    static func withinOfSQLite(_ factor: Double, _ key: String, _ text: String) -> Target {
        Target(text: text) { result in
            // `versusSQLite` reads theirs over ours: its inverse is ours over theirs.
            result[key]?.versusSQLite.map { (TextReport.ratioText(1 / $0.median), 1 / $0.median <= factor) }
        }
    }
}
