import Foundation
import Outbox
import OutboxAudit

/// Scenario 8: what the full lifecycle leaves on disk, per operation.
extension Scenario {
    static let diskBytes = Scenario(
        id: "8",
        name: "bytes-per-operation",
        title: "Bytes on disk per operation after the full lifecycle (8 lanes)",
        metrics: [
            .size("files", "every file of the store, per operation"),
            .size("compacted", "main file after a checkpoint (SQLite), per operation"),
            .size("records", "event records alone, per operation"),
        ],
        limit: { result in
            "the request itself (payload and fields, \(TextReport.format(result.floor("records"))) B) must be kept until it "
                + "is sent; ours also keeps every attempt and outcome as an event, its projections, and LMDB's free pages"
        },
        warmUp: false,
        fixedRepeats: 1,
        run: { context in
            let directory = try context.freshDirectory("bytes")
            defer { context.remove(directory) }
            let operations = context.sizes.lifecycleOperations / 8 * 8
            let ourDirectory = directory.appendingPathComponent("ours")
            let (_, outbox, requests) = try await ourLifecycle(ourDirectory, operations: operations, lanes: 8, durability: .full)
            let metrics = try outbox.metrics()
            outbox.close()
            let ourFiles = directoryBytes(ourDirectory)
            try keepStore(ourDirectory)

            let sqliteDirectory = directory.appendingPathComponent("sqlite")
            let (_, sqlite) = try await sqliteLifecycle(sqliteDirectory, operations: operations, lanes: 8, durability: .full)
            let sqliteFiles = directoryBytes(sqliteDirectory)
            try sqlite.checkpoint()
            let sqliteCompacted = sqlite.fileBytes.database

            let perOperation = { (bytes: Int) in Double(bytes) / Double(operations) }
            let requestBytes = requests.reduce(0) { $0 + Workload.requestBytes($1) }
            return [
                "files": Trio(ours: perOperation(ourFiles), sqlite: perOperation(sqliteFiles), floor: perOperation(requestBytes)),
                "compacted": Trio(ours: perOperation(FileSize.of(ourDirectory.appendingPathComponent("data.mdb"))),
                                  sqlite: perOperation(sqliteCompacted), floor: perOperation(requestBytes)),
                "records": Trio(ours: perOperation(metrics.journalEventBytes), floor: perOperation(requestBytes)),
            ]
        }
    )

    /// For looking inside the store: `OUTBOX_BENCH_KEEP_STORE=<path>` copies the journal the
    /// lifecycle leaves to `<path>` (closed), and the journal as the enqueues left it, before the
    /// drain, to `<path>-enqueued` (open but idle: every commit done), for `mdb_stat` or any other
    /// reader of LMDB files. Neither path may exist. Meant for `--filter bytes-per`: scenario 7 runs
    /// the same lifecycle and would find the paths taken.
    static func keepStore(_ directory: URL, suffix: String = "") throws {
        guard let path = ProcessInfo.processInfo.environment["OUTBOX_BENCH_KEEP_STORE"], !path.isEmpty else { return }
        try FileManager.default.copyItem(at: directory, to: URL(fileURLWithPath: path + suffix, isDirectory: true))
    }

    /// The sizes of every file directly in `directory`.
    static func directoryBytes(_ directory: URL) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.reduce(0) { $0 + FileSize.of(directory.appendingPathComponent($1)) }
    }
}
