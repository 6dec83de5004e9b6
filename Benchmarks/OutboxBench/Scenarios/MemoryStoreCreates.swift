import Foundation
import OutboxTestServer

/// Scenario 12: one create on the test server's in-memory store, on an empty store and on one
/// already holding 10,000 records (and their claims), beside the LMDB store. Requests are
/// answered in-process (`TestServer.respond(to:)`), so the figure is the server's own work: the
/// claim taken, the record written, the claim completed. A create that copies or scans what the
/// store holds grows with it; one that does a bounded amount of work stays flat.
extension Scenario {
    static let memoryStoreCreates = Scenario(
        id: "12",
        name: "memory-store-creates",
        title: "A create on the test server's in-memory store, empty and at 10,000 records, beside the LMDB store",
        metrics: [
            .time("p50-empty", "median create, empty store"),
            .time("p50-full", "median create, 10,000 records"),
            .count("growth", "median at 10,000 / median empty (x)", higherIsBetter: false),
        ],
        contenders: Contenders(ours: "memory store", sqlite: "LMDB store", floor: "-", versusSQLite: "vs LMDB", versusFloor: "-"),
        limit: { result in
            "a create takes its claim (one transaction), then writes the record and completes the claim (another): a bounded "
                + "amount of work whatever the store holds. Memory: \(TextReport.format(result.ours("p50-empty"))) µs empty, "
                + "\(TextReport.format(result.ours("p50-full"))) µs at 10,000 records; LMDB (no flush per commit): "
                + "\(TextReport.format(result.sqlite("p50-empty"))) µs and \(TextReport.format(result.sqlite("p50-full"))) µs"
        },
        targets: [Target(text: "memory store: median create at 10,000 records within 1.5x of the median on an empty store") { result in
            result.ours("growth").map { (TextReport.ratioText($0), $0 <= 1.5) }
        }],
        run: { context in
            let filled = context.quick ? 500 : 10_000
            let timed = context.quick ? 50 : 500
            let memory = try MemoryStoreCreatesBench.measure(try TestServer(), filled: filled, timed: timed)
            let directory = try context.freshDirectory("memory-store-creates-lmdb")
            defer { context.remove(directory) }
            let lmdb = try MemoryStoreCreatesBench.measure(try TestServer(.init(storage: .lmdb(directory: directory))), filled: filled, timed: timed)
            return [
                "p50-empty": Trio(ours: memory.empty, sqlite: lmdb.empty),
                "p50-full": Trio(ours: memory.full, sqlite: lmdb.full),
                "growth": Trio(ours: memory.full / memory.empty, sqlite: lmdb.full / lmdb.empty),
            ]
        }
    )
}

enum MemoryStoreCreatesBench {
    enum Failure: Error, CustomStringConvertible {
        case notCreated(Int?)

        var description: String {
            switch self {
            case .notCreated(let status): "scenario 12: a create was answered \(status.map(String.init) ?? "nothing"), not 201"
            }
        }
    }

    /// The median microseconds of `timed` creates on the empty server, then of `timed` more once
    /// `filled` records are there (filled through batches of 100).
    static func measure(_ server: TestServer, filled: Int, timed: Int) throws -> (empty: Double, full: Double) {
        defer { server.stop() }
        var next = 0
        func create() throws -> Double {
            let key = "create-\(next)"
            next += 1
            let request = HTTPRequest(
                method: "POST", path: "/products", headers: [("Idempotency-Key", key), ("Content-Type", "application/json")],
                body: Data(#"{"id":"\#(key)","name":"Antiseptic 500 ml","price":4.5}"#.utf8))
            var status: Int?
            let nanoseconds = Stopwatch.time { status = server.respond(to: request)?.status }
            guard status == 201 else { throw Failure.notCreated(status) }
            return nanoseconds / 1000
        }
        let empty = Statistics(try (0..<timed).map { _ in try create() }).median
        while next < filled {
            let count = min(100, filled - next)
            let operations = (0..<count).map { offset -> String in
                let key = "fill-\(next + offset)"
                let payload = Data(#"{"id":"\#(key)","name":"Gauze"}"#.utf8).base64EncodedString()
                return #"{"operation_id":"\#(key)","idempotency_key":"\#(key)","business_id":"default","operation_type":"product.create","method":"POST","endpoint":"/products","payload_version":1,"payload":"\#(payload)"}"#
            }
            let batch = HTTPRequest(method: "POST", path: "/sync/batch", body: Data((#"{"operations":["# + operations.joined(separator: ",") + "]}").utf8))
            guard server.respond(to: batch)?.status == 200 else { throw Failure.notCreated(nil) }
            next += count
        }
        let full = Statistics(try (0..<timed).map { _ in try create() }).median
        return (empty, full)
    }
}
