import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Outbox
import OutboxAudit
import OutboxTesting
import OutboxTestServer
import PostgresClaimStore
import ThrowawayPostgres
import Testing

/// Several `outbox-test-server --postgres` processes on one database: one server to the client,
/// whichever process a request reaches, whatever process dies.
@Suite("Several outbox-test-server processes on one PostgreSQL", .timeLimit(.minutes(10)))
struct PostgresServersTests {
    let body = #"{"id":"p-1","name":"Gauze"}"#

    @Test func theEngineBehindThreeServersAppliesEveryWriteOnceThroughLostResponsesAndRacedCopies() async throws {
        let schema = try TestPostgres.freshSchema("engine")
        defer { schema.drop() }
        let servers = try await onThread { try ServerProcess.onPostgres(3, schema: schema) }
        // The first two writes each server handles commit, then lose their response.
        for server in servers {
            let queued = try await exchange(server.port, request("POST", "/_control/faults",
                body: #"[{"fault":"drop_after_commit"},{"fault":"drop_after_commit"}]"#))
            #expect(queued.status == 200)
        }
        // Every request goes to two servers at once: copies of one key race on different processes.
        // A client timeout is a hang guard (two minutes), never a timing a loaded machine trips.
        let transport = SpreadingTransport(servers.map { URLSessionTransport(baseURL: $0.baseURL, timeoutSeconds: 120) }, copies: 2)
        let clock = ManualClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-pg-engine-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, transport: transport, configuration: OutboxConfiguration(
            account: "folake", clock: clock, operationPolicies: ["product.create": .idempotent]))
        defer { outbox.close() }

        var ids: [OperationID] = []
        for number in 1...12 {
            ids.append(try await outbox.enqueue(OutboxRequest(
                businessID: "folakes-pharmacy", operationType: "product.create", endpoint: "/products",
                payload: Data(#"{"id":"product-\#(number)","name":"Antiseptic \#(number) ml"}"#.utf8),
                category: "Products", entityLabel: "Antiseptic \(number) ml", summary: "New product")))
        }
        for _ in 0..<30 {
            await outbox.drain()
            guard try outbox.metrics().queueDepth[.queued, default: 0] > 0, let next = outbox.nextWake else { break }
            clock.set(to: max(clock.now(), next))
        }

        for id in ids {
            #expect(try outbox.operation(id)?.status == .synced, "\(id)")
        }
        #expect(transport.sentCounts.allSatisfy { $0 > 0 }, "every server was reached: \(transport.sentCounts)")
        // Each server reads the one database: the same counts, every key once.
        var seen: [AppliedCounts] = []
        for server in servers {
            let applied = try await exchange(server.port, request("GET", "/_control/applied"))
            seen.append(try #require(applied.appliedCounts))
        }
        #expect(seen[0] == Dictionary(uniqueKeysWithValues: ids.map { ($0.idempotencyKey, 1) }))
        #expect(seen.allSatisfy { $0 == seen[0] })
        let records = try schema.execute("SELECT count(*), max(revision) FROM test_server_records")
        #expect(try records[0].int64(0) == 12)
        #expect(try records[0].int32(1) == 1, "no record was created twice")
    }

    @Test func copiesOfEachKeyRacedOnThreeServersApplyOnce() async throws {
        let schema = try TestPostgres.freshSchema("race")
        defer { schema.drop() }
        let servers = try await onThread { try ServerProcess.onPostgres(3, schema: schema, ["--latency-ms", "2"]) }
        let ports = servers.map(\.port)
        let keys = (1...8).map { "op-\($0)" }
        let responses = try await withThrowingTaskGroup(of: (String, RawResponse).self) { group in
            for key in keys {
                let text = request(key: key, body: #"{"id":"\#(key)"}"#)
                for copy in 0..<6 {
                    let port = ports[copy % ports.count]
                    group.addTask { (key, try await exchange(port, text)) }
                }
            }
            return try await group.reduce(into: [String: [RawResponse]]()) { $0[$1.0, default: []].append($1.1) }
        }
        for key in keys {
            let answers = try #require(responses[key])
            let firsts = answers.filter { $0.status == 201 && $0.header("Idempotent-Replayed") == nil }
            #expect(firsts.count == 1, "\(key): \(answers.map(\.status))")
            for answer in answers where answer.status != 201 {
                #expect(answer.status == 409 && answer.code == "idempotency_in_progress")
            }
            #expect(Set(answers.filter { $0.status == 201 }.map(\.body)).count == 1, "every 201 carries the one stored body")
        }
        let applied = try await exchange(ports[1], request("GET", "/_control/applied"))
        #expect(applied.appliedCounts == AppliedCounts(keys.map { (key: $0, count: 1) }))
    }

    @Test func copiesOfAWriteHeldInItsTransactionAreAnsweredOnEveryServerWhileUnrelatedWritesCommit() async throws {
        let schema = try TestPostgres.freshSchema("held")
        defer { schema.drop() }
        // Pools of 4: five copies at once on one server are more than its connections.
        let servers = try await onThread { try ServerProcess.onPostgres(3, schema: schema) }
        let (a, b, c) = (servers[0].port, servers[1].port, servers[2].port)
        _ = try await exchange(a, request("POST", "/_control/faults", body: #"[{"fault":"hold_in_transaction","key":"op-held"}]"#))
        let text = request(key: "op-held", body: body)
        let first = Task { try await exchange(a, text) }
        let awaited = try await exchange(a, request("POST", "/_control/await-held", body: #"{"key":"op-held"}"#))
        #expect(awaited.json?["held"] as? Bool == true)

        // All at once: five copies on B, five on C, two on A itself, a copy with another body,
        // and an unrelated create on each of B and C.
        enum Sent: Hashable { case copy, otherBody, unrelated(String) }
        var sends: [(Sent, UInt16, String)] = []
        for port in [b, b, b, b, b, c, c, c, c, c, a, a] { sends.append((.copy, port, text)) }
        sends.append((.otherBody, c, request(key: "op-held", body: #"{"id":"p-1","name":"Lint"}"#)))
        sends.append((.unrelated("op-b"), b, request(key: "op-b", body: #"{"id":"p-b","name":"Tape"}"#)))
        sends.append((.unrelated("op-c"), c, request(key: "op-c", body: #"{"id":"p-c","name":"Swab"}"#)))
        let answers = try await withThrowingTaskGroup(of: (Sent, RawResponse).self) { group in
            for (sent, port, text) in sends { group.addTask { (sent, try await exchange(port, text)) } }
            return try await group.reduce(into: [(Sent, RawResponse)]()) { $0.append($1) }
        }
        // The hold is let go only now: every answer above came while the write was held.
        let held = try await exchange(a, request("GET", "/_control/held"))
        #expect(held.json?["held"] as? [String] == ["op-held"], "the write was still held when the others were answered")
        #expect(try claimStatus(schema, "op-held") == "in_progress", "nothing of the held write committed")
        for (sent, answer) in answers {
            switch sent {
            case .copy:
                #expect(answer.status == 409 && answer.code == "idempotency_in_progress", "a copy: \(answer.status) \(answer.code ?? "")")
                #expect(answer.header("Retry-After") == "1")
            case .otherBody:
                #expect(answer.status == 409 && answer.code == "idempotency_conflict")
            case .unrelated(let key):
                #expect(answer.status == 201 && answer.header("Idempotent-Replayed") == nil, "\(key): \(answer.status)")
            }
        }

        let released = try await exchange(a, request("POST", "/_control/release", body: #"{"key":"op-held"}"#))
        #expect(released.json?["released"] as? Int == 1)
        let committed = try await first.value
        #expect(committed.status == 201 && committed.header("Idempotent-Replayed") == nil)
        let later = try await exchange(b, text)
        #expect(later.status == 201 && later.header("Idempotent-Replayed") == "true")
        #expect(later.body == committed.body)
        let applied = try await exchange(c, request("GET", "/_control/applied"))
        #expect(applied.appliedCounts == ["op-held": 1, "op-b": 1, "op-c": 1])
    }

    @Test func aServerKilledMidTransactionLeavesNothingHalfAppliedAndARetryAppliesOnce() async throws {
        let schema = try TestPostgres.freshSchema("kill")
        defer { schema.drop() }
        let servers = try await onThread { try ServerProcess.onPostgres(2, schema: schema) }
        let (doomed, survivor) = (servers[0], servers[1])
        _ = try await exchange(doomed.port, request("POST", "/_control/faults", body: #"[{"fault":"hold_in_transaction","key":"op-1"}]"#))
        let port = doomed.port
        let text = request(key: "op-1", body: body)
        let pending = Task { try await exchangeUntilClosed(port, text) }
        let held = try await exchange(doomed.port, request("POST", "/_control/await-held", body: #"{"key":"op-1"}"#))
        #expect(held.json?["held"] as? Bool == true)
        // Inside the held transaction the record and the completed claim are written, uncommitted.
        #expect(try claimStatus(schema, "op-1") == "in_progress")

        doomed.kill()
        #expect(try await pending.value.isEmpty, "the killed server never answered")
        #expect(try schema.execute("SELECT count(*) FROM test_server_records")[0].int64(0) == 0, "no record")
        #expect(try schema.execute("SELECT count(*) FROM test_server_applied")[0].int64(0) == 0, "nothing counted")
        #expect(try claimStatus(schema, "op-1") == "in_progress", "the claim was never completed")
        #expect(try schema.execute("SELECT count(*) FROM idempotency_keys WHERE response_body IS NOT NULL")[0].int64(0) == 0)

        // A retry while the dead server's lease runs is told to wait; it applies nothing.
        let early = try await exchange(survivor.port, text)
        #expect(early.status == 409 && early.code == "idempotency_in_progress")
        // Once the lease has run out (aged here rather than waited for), the retry takes it over.
        try schema.execute("UPDATE idempotency_keys SET lease_expires_at = now() - interval '1 second' WHERE key = 'op-1'")
        let retry = try await exchange(survivor.port, text)
        #expect(retry.status == 201)
        #expect(retry.header("Idempotent-Replayed") == nil)
        let replay = try await exchange(survivor.port, text)
        #expect(replay.header("Idempotent-Replayed") == "true")
        #expect(replay.body == retry.body)
        let applied = try await exchange(survivor.port, request("GET", "/_control/applied"))
        #expect(applied.appliedCounts == ["op-1": 1])
        #expect(try claimStatus(schema, "op-1") == "completed")
    }

    private func claimStatus(_ schema: TestSchema, _ key: String) throws -> String? {
        try schema.execute("SELECT status FROM idempotency_keys WHERE key = $1", [.text(key)]).first.map { try $0.text(0) }
    }
}
