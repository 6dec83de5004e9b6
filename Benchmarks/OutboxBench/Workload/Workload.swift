import Foundation
import Outbox
import OutboxAudit
import OutboxTesting

/// The writes every contender is given: a pharmacy's new products and people, as a phone makes them.
enum Workload {
    static let account = "member-42"
    static let businessID = "pharmacy-7"
    static let categories = ["Products", "Employees", "Customers", "Suppliers", "Orders"]

    /// The `number`th write: a ~177-byte JSON create with its own id (so its own lane), in one of
    /// five Sync tab categories.
    static func request(_ number: Int) -> OutboxRequest {
        let category = categories[number % categories.count]
        let payload = """
            {"id":"\(stableID(number))","name":"Antiseptic 500 ml #\(number)","sku":"SKU-\(100_000 + number)",\
            "price":"12.50","stock":40,"supplier":"Medipharm Ltd","notes":"Keep below 25 C"}
            """
        return OutboxRequest(
            businessID: businessID,
            operationType: "product.create",
            endpoint: "/products",
            payload: Data(payload.utf8),
            category: category,
            entityLabel: "Antiseptic 500 ml #\(number)",
            summary: "New product"
        )
    }

    /// What the app handed over: the payload and the fields, the least any outbox must keep.
    static func requestBytes(_ request: OutboxRequest) -> Int {
        request.payload.count + request.businessID.utf8.count + request.operationType.utf8.count
            + request.method.utf8.count + request.endpoint.utf8.count + (request.entityID?.utf8.count ?? 0)
            + request.category.utf8.count + request.entityLabel.utf8.count + request.summary.utf8.count
    }

    /// The engine's configuration for a benchmark: the app's defaults but for the tier, the lanes
    /// and room for a million events.
    static func configuration(durability: OutboxConfiguration.Durability, lanes: Int = 1) -> OutboxConfiguration {
        OutboxConfiguration(
            account: account,
            maxConcurrentLanes: lanes,
            operationPolicies: [
                "product.create": .idempotent,
                "product.update": .idempotent,
                // The record stream's edits: a product edited again before it is sent replaces
                // its unsent edit, so its view stays one overlay deep however many commits change it.
                "stock.update": .idempotent.coalescing(),
            ],
            durability: durability,
            maxJournalBytes: 8 << 30
        )
    }

    static func openOutbox(
        _ directory: URL,
        durability: OutboxConfiguration.Durability = .full,
        lanes: Int = 1,
        transport: any OutboxTransport = InMemoryServer()
    ) throws -> Outbox {
        try Outbox(directory: directory, transport: transport, configuration: configuration(durability: durability, lanes: lanes))
    }

    /// How many databases the wide floor commits into: what an enqueue wrote to before projection
    /// layout 5 (`events` and six projections). Layout 5 writes two, `events` and `state`, five
    /// rows in `state`; the floor keeps seven databases because its pages per commit (19.6,
    /// measured with strace) stay close to an enqueue's (16.4), where one row in each of two
    /// databases would understate them (see `Docs/benchmarks.md`, "Pages per commit").
    static let engineDatabases = 7

    /// The size in bytes of an `enqueued` record as the engine writes it.
    static var enqueuedRecordBytes: Int {
        let request = request(1)
        let event = JournalEvent(
            seq: 1, operationID: OperationID(), recordedAt: Date(),
            body: .enqueued(Enqueued(request: request, requestHash: SHA256Digest(of: request.payload), account: account))
        )
        return RecordCodec.encode(event).count
    }

    /// The `number`th write's id: a UUID-shaped string, ordered by `number` (in bytes too).
    static func stableID(_ number: Int) -> String {
        let hex = String(number, radix: 16)
        return "7d0c3a52-0000-4000-8000-" + String(repeating: "0", count: max(0, 12 - hex.count)) + hex
    }
}

extension FixedWidthInteger {
    /// The integer's bytes, most significant first.
    var bigEndianByteArray: [UInt8] {
        withUnsafeBytes(of: bigEndian) { Array($0) }
    }
}

/// Sizes of files, for scenario 8.
enum FileSize {
    /// The file's length in bytes; 0 when it does not exist.
    static func of(_ url: URL) -> Int {
        var status = stat()
        return stat(url.path, &status) == 0 ? Int(status.st_size) : 0
    }
}
