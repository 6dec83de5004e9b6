import Foundation
import Outbox
import Synchronization

/// A server that does nothing but answer: each request gets the success answer prepared for its
/// `Idempotency-Key` before the drain, so that a lifecycle measures the outbox, not the server.
///
/// The answers are built once, in ``expect(_:)``, as the in-memory server builds a create's (201,
/// `Content-Type: application/json`, `{"revision":"<n>"}`, numbered in the order the keys are
/// given); a request then costs one lock, one lookup of its key and one count. The count is the
/// check: a key answered twice, or one never given, is a failure that ``verify(operations:)``
/// reports. Both contenders of a lifecycle send through one of these, and scenario 3 times it
/// alone (``cost(operations:)``), to show how little of an operation it is.
final class CannedTransport: OutboxTransport {
    private struct Table {
        var index: [String: Int] = [:]
        var answers: [TransportResponse] = []
        var seen: [UInt8] = []
        var unexpected = 0
        var repeated = 0
    }

    private let table = Mutex(Table())

    init() {}

    /// Prepares the answers for `keys`, in their order; before any request is sent.
    func expect(_ keys: [String]) {
        let json = ["Content-Type": "application/json"]
        var index: [String: Int] = [:]
        index.reserveCapacity(keys.count)
        for (number, key) in keys.enumerated() { index[key] = number }
        let answers = (0..<keys.count).map { number in
            TransportResponse(statusCode: 201, headers: json, body: Data(#"{"revision":"\#(number + 1)"}"#.utf8))
        }
        table.withLock { table in
            table = Table(index: index, answers: answers, seen: [UInt8](repeating: 0, count: keys.count))
        }
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let key = request.headers[OutboxHeader.idempotencyKey] ?? ""
        return table.withLock { table in
            guard let number = table.index[key] else {
                table.unexpected += 1
                return Self.refusal
            }
            if table.seen[number] == 0 {
                table.seen[number] = 1
            } else {
                table.repeated += 1
            }
            return table.answers[number]
        }
    }

    /// What a request with a key never expected is answered: a refusal the engine does not retry.
    private static let refusal = TransportResponse(statusCode: 400, headers: ["Content-Type": "application/json"],
                                                   body: Data(#"{"error":{"code":"unexpected_key"}}"#.utf8))

    /// Throws unless every expected key was answered exactly once and nothing else came.
    func verify(operations: Int, contender: String) throws {
        let (answered, repeated, unexpected) = table.withLock { table in
            (table.seen.reduce(0) { $0 + Int($1) }, table.repeated, table.unexpected)
        }
        guard answered == operations, repeated == 0, unexpected == 0 else {
            throw BenchmarkFailure(description: "\(contender): \(answered) of \(operations) keys answered, "
                                   + "\(repeated) answered again, \(unexpected) never expected")
        }
    }

    /// The requests a drain of `operations` writes sends, as the engine builds them: the
    /// workload's writes under fresh keys, with the engine's four headers.
    static func requests(_ operations: Int) -> [TransportRequest] {
        (0..<operations).map { number in
            let write = Workload.request(number)
            return TransportRequest(method: write.method, endpoint: write.endpoint, headers: [
                OutboxHeader.idempotencyKey: OperationID().idempotencyKey,
                OutboxHeader.contentType: "application/json",
                OutboxHeader.payloadVersion: String(write.payloadVersion),
                OutboxHeader.businessID: write.businessID,
            ], body: write.payload)
        }
    }

    /// This transport's own cost: `requests` sent one after another from one task to a fresh
    /// canned transport expecting them, after one pass to warm it (a second transport). Answers
    /// the wall and CPU nanoseconds per request; throws if any was not answered exactly once.
    static func cost(of requests: [TransportRequest]) async throws -> (wall: Double, cpu: Double) {
        let keys = requests.map { $0.headers[OutboxHeader.idempotencyKey] ?? "" }
        let warm = CannedTransport()
        warm.expect(keys)
        for request in requests { _ = try await warm.send(request) }
        let transport = CannedTransport()
        transport.expect(keys)
        var statuses = 0
        let cpuStart = CPUClock.now()
        let wall = try await Stopwatch.time {
            for request in requests { statuses &+= try await transport.send(request).statusCode }
        }
        let cpu = Double(CPUClock.now() - cpuStart)
        try transport.verify(operations: requests.count, contender: "canned transport")
        guard statuses == 201 * requests.count else { throw BenchmarkFailure(description: "canned transport: a request refused") }
        return (wall / Double(requests.count), cpu / Double(requests.count))
    }
}

/// The process's CPU time, every thread's, user and system: what the work cost the machine,
/// where the wall clock also counts waits for the disk and for the other processes sharing it.
enum CPUClock {
    /// Nanoseconds of CPU the process has used so far.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Runs `body` and answers the process's CPU nanoseconds over it.
    static func measure(_ body: () async throws -> Void) async rethrows -> Double {
        let start = now()
        try await body()
        return Double(now() - start)
    }

    static func measure(_ body: () throws -> Void) rethrows -> Double {
        let start = now()
        try body()
        return Double(now() - start)
    }
}
