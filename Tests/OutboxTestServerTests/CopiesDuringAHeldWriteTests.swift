import Foundation
import TestHarness
import Testing

/// Copies of a write held inside its transaction (`hold_in_transaction`) on the embedded stores,
/// against the `outbox-test-server` binary: each store has one writer, which the held write keeps,
/// and a copy is answered from what is committed without waiting for it. (Several servers on one
/// PostgreSQL: `PostgresServersTests`.)
@Suite("Copies of a write held in its transaction", .timeLimit(.minutes(10)))
struct CopiesDuringAHeldWriteTests {
    enum Store: String, CaseIterable, CustomStringConvertible {
        case memory
        case lmdb

        var description: String { rawValue }
    }

    let body = #"{"id":"p-1","name":"Gauze"}"#

    @Test(arguments: Store.allCases)
    func copiesAreAnsweredWhileTheWriteIsHeldAndALaterCopyReplaysItsCommit(store: Store) async throws {
        let directory = TemporaryDirectory("held-write")
        defer { directory.remove() }
        let storage = store == .lmdb ? ["--data-dir", directory.url.appendingPathComponent("data").path] : []
        let server = try await onThread { try ServerProcess(["--read-timeout", "2"] + storage) }
        let port = server.port
        let queued = try await exchange(port, request("POST", "/_control/faults", body: #"[{"fault":"hold_in_transaction","key":"op-1"}]"#))
        #expect(queued.status == 200)
        let first = Task { [body] in try await exchange(port, request(key: "op-1", body: body)) }
        let awaited = try await exchange(port, request("POST", "/_control/await-held", body: #"{"key":"op-1"}"#))
        #expect(awaited.json?["held"] as? Bool == true)

        let copies = try await withThrowingTaskGroup(of: RawResponse.self) { [body] group in
            for _ in 0..<3 { group.addTask { try await exchange(port, request(key: "op-1", body: body)) } }
            return try await group.reduce(into: [RawResponse]()) { $0.append($1) }
        }
        let otherBody = try await exchange(port, request(key: "op-1", body: #"{"id":"p-2","name":"Lint"}"#))
        // The hold is let go only now: every answer above came while the write was held.
        let held = try await exchange(port, request("GET", "/_control/held"))
        #expect(held.json?["held"] as? [String] == ["op-1"], "the write was still held when the copies were answered")
        for copy in copies {
            #expect(copy.status == 409 && copy.code == "idempotency_in_progress", "\(copy.status) \(copy.code ?? "")")
            #expect(copy.header("Retry-After") == "1")
        }
        #expect(otherBody.status == 409 && otherBody.code == "idempotency_conflict")

        let released = try await exchange(port, request("POST", "/_control/release", body: #"{"key":"op-1"}"#))
        #expect(released.json?["released"] as? Int == 1)
        let answered = try await first.value
        #expect(answered.status == 201 && answered.header("Idempotent-Replayed") == nil)
        let later = try await exchange(port, request(key: "op-1", body: body))
        #expect(later.status == 201 && later.header("Idempotent-Replayed") == "true")
        #expect(later.body == answered.body)
        let applied = try await exchange(port, request("GET", "/_control/applied"))
        #expect(applied.appliedCounts == ["op-1": 1])
    }
}
