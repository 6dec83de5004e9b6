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
