import Foundation
import TestHarness
import OutboxTestServer
import Testing

@Suite("Creates through claims, over a loopback socket")
struct TestServerClaimsTests {
    let body = #"{"id":"p-1","name":"Zoë's Café 👩🏽‍🍳","price":{"amount":"4.50","currency":"EUR"}}"#

    @Test func aCreateAnswers201NamingTheRecordWithItsRevisionAndTheRecordAsTypedPlusItsRevision() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let response = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(response.status == 201)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Location") == "/products/p-1")
        #expect(response.header("Idempotent-Replayed") == nil)
        #expect(String(decoding: response.body, as: UTF8.self)
                == #"{"type":"product","id":"p-1","revision":1,"record":"# + String(body.dropLast()) + #","revision":1}}"#)

        let records = try server.records()
        #expect(records.count == 1)
        #expect(records.first?.body == Data(body.utf8), "stored byte for byte")
        #expect(records.first?.type == "product")
        #expect(records.first?.businessID == "default")
        #expect(records.first?.idempotencyKey == "op-1")
        #expect(try server.appliedCounts() == ["op-1": 1])

        let listed = try await exchange(server.port, request("GET", "/_control/records"))
        let first = try #require((listed.json?["records"] as? [[String: Any]])?.first)
        #expect(first["body"] as? String == body, "the control API shows the body exactly as typed")
        #expect(first["revision"] as? Int == 1)
    }

    @Test func aReplayReturnsIdenticalBytesMarkedIdempotentReplayed() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let original = try await exchange(server.port, request(key: "op-1", body: body))
        let replay = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(replay.status == original.status)
        #expect(replay.body == original.body)
        #expect(replay.header("Idempotent-Replayed") == "true")
        let expected = String(decoding: original.bytes, as: UTF8.self)
            .replacingOccurrences(of: "Content-Length:", with: "Idempotent-Replayed: true\r\nContent-Length:")
        #expect(String(decoding: replay.bytes, as: UTF8.self) == expected, "the same bytes but the one header")
        #expect(try server.appliedCounts() == ["op-1": 1])
    }

    @Test func theSameKeyWithADifferentBodyIs409Conflict() async throws {
        let server = try TestServer()
        defer { server.stop() }
        _ = try await exchange(server.port, request(key: "op-1", body: body))
        let conflict = try await exchange(server.port, request(key: "op-1", body: #"{"id":"p-1","name":"other"}"#))
        #expect(conflict.status == 409)
        #expect(conflict.code == "idempotency_conflict")
        #expect(try server.appliedCounts() == ["op-1": 1])
    }

    @Test func aMissingOrBlankKeyIs400AndAppliesNothing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let missing = try await exchange(server.port, request(body: body))
        let blank = try await exchange(server.port, request(key: "  ", body: body))
        for response in [missing, blank] {
            #expect(response.status == 400)
            #expect(response.code == "idempotency_key_required")
        }
        #expect(try server.appliedCounts().isEmpty)
    }

    @Test func aBodyWithoutAnIDIs422AndLeavesNoClaim() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let invalid = try await exchange(server.port, request(key: "op-1", body: #"{"name":"no id"}"#))
        #expect(invalid.status == 422)
        #expect(invalid.code == "validation_failed")
        let fixed = try await exchange(server.port, request(key: "op-2", body: body))
        #expect(fixed.status == 201)
        #expect(try server.appliedCounts() == ["op-2": 1])
    }

    @Test func claimsAreScopedByBusinessAndEndpoint() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let first = try await exchange(server.port, request(key: "op-1", body: body, headers: ["X-Business-ID: b-1"]))
        let otherBusiness = try await exchange(server.port, request(key: "op-1", body: body, headers: ["X-Business-ID: b-2"]))
        let employee = try await exchange(server.port, request("POST", "/employees", key: "op-1", body: #"{"id":"e-1"}"#))
        #expect([first.status, otherBusiness.status, employee.status] as [Int] == [201, 201, 201])
        #expect(employee.header("Location") == "/employees/e-1")
        #expect(try server.records().map { "\($0.type)/\($0.businessID)/\($0.id)" } == [
            "employee/default/e-1", "product/b-1/p-1", "product/b-2/p-1",
        ])
        #expect(try server.appliedCounts() == ["op-1": 3], "counts are per key, summed over scopes")
    }

    @Test func theAppliedEndpointReportsEachKeysCount() async throws {
        let server = try TestServer()
        defer { server.stop() }
        _ = try await exchange(server.port, request(key: "op-1", body: body))
        _ = try await exchange(server.port, request(key: "op-1", body: body))
        _ = try await exchange(server.port, request(key: "op-2", body: #"{"id":"p-2"}"#))
        let applied = try await exchange(server.port, request("GET", "/_control/applied"))
        #expect(applied.status == 200)
        #expect(applied.appliedCounts == ["op-1": 1, "op-2": 1])
    }

    @Test func sixteenConcurrentCopiesOverSocketsApplyOnce() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.port
        let text = request(key: "op-1", body: body)
        let responses = try await withThrowingTaskGroup(of: RawResponse.self) { group in
            for _ in 0..<16 { group.addTask { try await exchange(port, text) } }
            return try await group.reduce(into: [RawResponse]()) { $0.append($1) }
        }
        #expect(try server.appliedCounts() == ["op-1": 1])
        let created = responses.filter { $0.status == 201 }
        #expect(created.filter { $0.header("Idempotent-Replayed") == nil }.count == 1)
        #expect(Set(created.map(\.body)).count == 1, "every 201 carries the one stored body")
        for response in responses where response.status != 201 {
            #expect(response.status == 409)
            #expect(response.code == "idempotency_in_progress")
        }
    }

    @Test func anLMDBBackedServerStartedAgainReplaysWhatItAnswered() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let configuration = TestServer.Configuration(storage: .lmdb(directory: directory.url))
        let before = try TestServer(configuration)
        let original = try await exchange(before.port, request(key: "op-1", body: body))
        before.stop()

        let after = try TestServer(configuration)
        defer { after.stop() }
        let replay = try await exchange(after.port, request(key: "op-1", body: body))
        #expect(original.status == 201)
        #expect(replay.header("Idempotent-Replayed") == "true")
        #expect(replay.body == original.body)
        #expect(try after.appliedCounts() == ["op-1": 1])
        #expect(try after.records().first?.body == Data(body.utf8))
    }
}
