import Foundation
import Outbox
import OutboxAudit

/// Scenario 14.3: a journal that pulled a catalogue of 100,000 products, with 50 edits pending,
/// finds its cursor forgotten by the server and fetches the base again whole over loopback:
/// staged page by page beside the base the member sees, swapped in by one commit, the old
/// generation swept; beside it, 14.1's initial pull of a catalogue of the same size.
extension Scenario {
    static let pullResnapshot = Scenario(
        id: "14.3",
        name: "pull-resnapshot",
        title: "Pull: a resnapshot of 100,001 records with 50 pending writes over loopback, in pages of 500",
        metrics: [
            .time("resnapshot", "the pull that fetches the base again: staging, swap, sweep", .seconds),
            .size("anon", "RssAnon growth, peak", .mebibytes),
        ],
        contenders: Contenders(ours: "resnapshot", sqlite: "-", floor: "initial pull", versusSQLite: "-", versusFloor: "vs initial pull"),
        limit: { result in
            "the server answers the journal's cursor 409 (`expired`: its feed was forgotten past it), and the same `pull()` stages "
                + "the snapshot's pages one commit each in the generation the member does not see, swaps it in with one commit, "
                + "and sweeps the old one 1,000 rows a commit; the 50 edits stay pending, shown over the new base (checked after). "
                + "Beside it (the floor's column), 14.1's initial pull of as many records over loopback into an empty journal, "
                + "\(TextReport.format(result.floor("resnapshot"))) s: the resnapshot writes each record once to stage it and "
                + "deletes it once from the old generation. Each runs in a fresh child process"
        },
        targets: [],
        run: { context in
            let fixture = try await context.fixtures.pullResnapshot(records: context.sizes.pullRecords, context: context)
            let measured = try Probe.measure(.pullResnapshot, path: fixture.feed.directory, as: PullProbe.Measurement.self)
            let initial: PullProbe.Measurement? = Scenario.oursOnly ? nil : try {
                let feed = try context.fixtures.pullFeed(records: context.sizes.pullRecords, context: context)
                return try Probe.measure(.pullEngineHTTP, path: feed.directory, as: PullProbe.Measurement.self)
            }()
            return [
                "resnapshot": Trio(ours: measured.seconds, floor: initial?.seconds),
                "anon": Trio(ours: measured.anonymousPeakKiB / 1024, floor: initial.map { $0.anonymousPeakKiB / 1024 }),
            ]
        }
    )
}

/// Scenario 14.7: 14.3 at a million records, the member at work throughout: the journal of
/// ``PullResnapshot`` (a catalogue of 1,000,000 products pulled, 50 edits pending) fetches its
/// base again whole in a fresh child while a reader reads a record every 100 ms and a writer
/// saves an edit every 250 ms (``ResnapshotProbe``).
extension Scenario {
    static let pullResnapshotMillion = Scenario(
        id: "14.7",
        name: "pull-resnapshot-million",
        title: "Pull: a resnapshot of 1,000,001 records with 50 pending writes over loopback, the member reading and saving throughout",
        metrics: [
            .time("resnapshot", "the pull that fetches the base again: staging, swap, sweep", .seconds),
            .size("anon", "RssAnon growth, peak", .mebibytes),
            .time("read-p50", "a record's read during it, median"),
            .time("read-p99", "the same, p99"),
            .time("read-max", "the same, the slowest"),
            .time("save-p50", "an edit's save during it, median", .milliseconds),
            .time("save-p99", "the same, p99", .milliseconds),
            .time("save-max", "the same, the slowest", .milliseconds),
            .count("reads", "reads during it", higherIsBetter: true),
            .count("saves", "saves during it, each still pending after", higherIsBetter: true),
        ],
        contenders: Contenders(ours: "resnapshot", sqlite: "-", floor: "-", versusSQLite: "-", versusFloor: "-"),
        limit: { _ in
            "14.3's resnapshot at ten times its size: the server answers the journal's cursor 409 and the same `pull()` stages "
                + "the snapshot's pages one commit each in the generation the member does not see, swaps it in with one commit, "
                + "and sweeps the old one. Meanwhile a reader reads a record every 100 ms (a synced one and one with a pending "
                + "edit in turn: each read must find its base and the member's value, the synced record's base the old "
                + "generation's, then the new one's, once) and a writer saves an edit of another product every 250 ms "
                + "(durable, as the member's saves are). After it, the 50 edits and every edit saved meanwhile are still "
                + "pending, each shown over the new base (checked). No contender: the floor of a resnapshot is 14.3's "
                + "initial pull of as many records, 14.5's million-record sync at this size"
        },
        targets: [],
        run: { context in
            let fixture = try await context.fixtures.pullResnapshot(records: context.sizes.resnapshotMillion, context: context)
            let measured = try Probe.measure(.pullResnapshotLive, path: fixture.feed.directory, as: ResnapshotProbe.Measurement.self)
            return [
                "resnapshot": Trio(ours: measured.seconds),
                "anon": Trio(ours: measured.anonymousPeakKiB / 1024),
                "read-p50": Trio(ours: measured.readP50),
                "read-p99": Trio(ours: measured.readP99),
                "read-max": Trio(ours: measured.readMax),
                "save-p50": Trio(ours: measured.saveP50),
                "save-p99": Trio(ours: measured.saveP99),
                "save-max": Trio(ours: measured.saveMax),
                "reads": Trio(ours: Double(measured.reads)),
                "saves": Trio(ours: Double(measured.saves)),
            ]
        }
    )
}
