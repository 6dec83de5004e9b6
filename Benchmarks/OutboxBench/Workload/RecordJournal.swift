import Foundation
import Outbox
import OutboxAudit
import OutboxTesting

/// A journal of the member's products as a phone holds them after a while offline, and the same
/// in a SQLite outbox with its app table. Of every ten products (by number):
///
/// | numbers | what the phone holds | pending writes |
/// |---|---|---|
/// | ending in 0, 1 | the server's base and one edit | 1 |
/// | ending in 2 | the server's base and two edits, the second behind the first | 2 |
/// | ending in 3 to 8 | the server's base only: synced | 0 |
/// | ending in 9 | a create not yet sent: no base | 1 |
///
/// The bases come from the engine's own lifecycle: each product created with its record, then
/// drained against an instant in-memory server, whose answers carry the revision.
struct RecordJournal: Sendable {
    var directory: URL
    var sqliteDirectory: URL
    var records: Int
    /// Records with a base and two pending edits.
    var layered: [Int]
    /// Records with a base only.
    var synced: [Int]
    /// Records with a base: the entries their type's scan finds in `records`.
    var bases: Int
    var pendingWrites: Int

    /// How many edits the phone holds of product `number`, and whether the server has it.
    static func edits(of number: Int) -> (based: Bool, edits: Int) {
        switch number % 10 {
        case 0, 1: (true, 1)
        case 2: (true, 2)
        case 9: (false, 0)
        default: (true, 0)
        }
    }

    static func build(in directory: URL, records: Int) async throws -> RecordJournal {
        let journal = directory.appendingPathComponent("journal")
        let numbers = Array(0..<records)
        let based = numbers.filter { edits(of: $0).based }
        try await createAndSync(journal, numbers: based)

        // Opened again and never woken: what is enqueued now stays queued.
        let outbox = try Workload.openOutbox(journal, durability: .processCrash)
        var pendingWrites = 0
        for number in numbers {
            let (isBased, count) = edits(of: number)
            let key = Workload.productKey(number)
            if !isBased {
                _ = try await outbox.enqueue(Workload.productCreate(number), changing: [.put(key, Workload.productValue(number))])
                pendingWrites += 1
            }
            for edit in stride(from: 1, through: count, by: 1) {
                _ = try await outbox.enqueue(Workload.productUpdate(number, edit: edit),
                                             changing: [.put(key, Workload.productValue(number, edit: edit))])
                pendingWrites += 1
            }
        }
        try check(outbox, records: records)
        try outbox.flush()
        outbox.close()

        let sqliteDirectory = directory.appendingPathComponent("sqlite")
        let sqlite = try SQLiteOutbox(directory: sqliteDirectory, durability: .full, appTable: true)
        var rows: [(id: OperationID, request: OutboxRequest, status: OutboxStatus)] = []
        var values: [(id: String, value: Data)] = []
        for number in numbers {
            let (isBased, count) = edits(of: number)
            rows.append((OperationID(), Workload.productCreate(number), isBased ? .synced : .queued))
            for edit in stride(from: 1, through: count, by: 1) {
                rows.append((OperationID(), Workload.productUpdate(number, edit: edit), .queued))
            }
            values.append((Workload.productKey(number).id, Workload.productValue(number, edit: count)))
        }
        try sqlite.bulkInsert(rows, records: values)

        return RecordJournal(
            directory: journal, sqliteDirectory: sqliteDirectory, records: records,
            layered: numbers.filter { edits(of: $0).edits == 2 },
            synced: numbers.filter { edits(of: $0) == (true, 0) },
            bases: based.count, pendingWrites: pendingWrites
        )
    }

    /// Creates each product with its record (`type`'s) in a fresh journal at `directory`, drains
    /// them to an instant in-memory server, checks each has its base, and closes the journal.
    static func createAndSync(_ directory: URL, numbers: [Int], type: String = Workload.productType,
                              durability: OutboxConfiguration.Durability = .processCrash) async throws {
        let server = InMemoryServer()
        let outbox = try Workload.openOutbox(directory, durability: durability, lanes: 8, transport: server)
        let producers = 16
        let each = (numbers.count + producers - 1) / producers
        _ = try await Scenario.timedProducers(producers, each) { index in
            guard index < numbers.count else { return }
            let number = numbers[index]
            var create = Workload.productCreate(number)
            create.endpoint = "/\(type)s"
            _ = try await outbox.enqueue(create, changing: [.put(Workload.productKey(number, type: type), Workload.productValue(number))])
        }
        await outbox.drain()
        let synced = try outbox.metrics().queueDepth[.synced] ?? 0
        guard synced == numbers.count, server.maxAppliedCount == 1 else {
            throw BenchmarkFailure(description: "records: \(synced) of \(numbers.count) creates synced")
        }
        for number in numbers {
            guard let record = try outbox.record(Workload.productKey(number, type: type)), record.server != nil, record.sync.isSynced else {
                throw BenchmarkFailure(description: "records: product \(number) has no server base after its create was synced")
            }
        }
        try outbox.flush()
        outbox.close()
    }

    /// Checks that each record shows what the table above says.
    private static func check(_ outbox: Outbox, records: Int) throws {
        for number in 0..<records {
            let (isBased, count) = edits(of: number)
            guard let record = try outbox.record(Workload.productKey(number)) else {
                throw BenchmarkFailure(description: "records: product \(number) is missing")
            }
            let pending = isBased ? count : 1
            guard (record.server != nil) == isBased, record.sync.pending.count == pending,
                  record.value == Workload.productValue(number, edit: count)
            else {
                throw BenchmarkFailure(description: "records: product \(number) shows \(record.sync.pending.count) pending writes, "
                    + "base \(record.server != nil); expected \(pending), \(isBased)")
            }
        }
    }
}
