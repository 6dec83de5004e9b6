import Foundation
import OutboxTestServer
import Testing

@Suite("Scripted faults", .timeLimit(.minutes(10)))
struct TestServerFaultTests {
    let body = #"{"id":"p-1","name":"Café"}"#

    @Test func dropAfterCommitAppliesTheWriteAndClosesWithoutAResponse() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.dropAfterCommit)])
        let received = try await exchangeUntilClosed(server.port, request(key: "op-1", body: body))
        #expect(received.isEmpty, "no byte of a response")
        #expect(try server.appliedCounts() == ["op-1": 1])

        let retry = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(retry.status == 201)
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(try server.appliedCounts() == ["op-1": 1])
    }

    @Test(arguments: [
        (Fault(.serverError), 500, "internal_error"),
        (Fault(.unavailable), 503, "unavailable"),
        (Fault(.forbidden), 403, "forbidden"),
    ])
    func errorFaultsAnswerTheirStatusAndApplyNothing(fault: Fault, status: Int, code: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([fault])
        let failed = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(failed.status == status)
        #expect(failed.code == code)
        #expect(try server.appliedCounts().isEmpty)
        #expect(server.pendingFaults.isEmpty, "consumed")

        let retry = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(retry.status == 201)
        #expect(retry.header("Idempotent-Replayed") == nil, "the failed attempt left no claim")
    }

    @Test func unavailableCarriesRetryAfterWhenGiven() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.unavailable, retryAfterSeconds: 12)])
        let response = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "12")
    }

    @Test func rateLimitedAnswers429WithRetryAfterSeconds() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.rateLimited, retryAfterSeconds: 7), Fault(.rateLimited)])
        let first = try await exchange(server.port, request(key: "op-1", body: body))
        let second = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(first.status == 429)
        #expect(first.code == "rate_limited")
        #expect(first.header("Retry-After") == "7")
        #expect(second.header("Retry-After") == "1", "one second by default")
        #expect(try server.appliedCounts().isEmpty)
    }

    @Test func unauthorizedAnswers401WithAChallenge() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.unauthorized)])
        let response = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(response.status == 401)
        #expect(response.code == "unauthorized")
        #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(try server.appliedCounts().isEmpty)
    }

    @Test func validationFailedAnswers422WithItsMessage() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.validationFailed, message: "price must be positive")])
        let response = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(response.status == 422)
        #expect(response.code == "validation_failed")
        #expect(response.json?["message"] as? String == "price must be positive")
        #expect(try server.appliedCounts().isEmpty)
    }

    @Test func pendingApprovalAnswers202AndItsReplayIsTheSameEnvelope() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.pendingApproval)])
        let first = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(first.status == 202)
        #expect(first.json?["status"] as? String == "pending_approval")
        #expect(first.json?["request_id"] as? String == "apr-1")
        let replay = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(replay.status == 202)
        #expect(replay.body == first.body)
        #expect(replay.header("Idempotent-Replayed") == "true")
        #expect(try server.approvals().map(\.requestID) == ["apr-1"])
        #expect(try server.records().isEmpty, "parked, not created")
        #expect(try server.appliedCounts() == ["op-1": 1])
    }

    @Test func aCaptivePortalAnswersHTMLWith200() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.captivePortal)])
        let response = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(String(decoding: response.body, as: UTF8.self).contains("<html>"))
        #expect(try server.appliedCounts().isEmpty)
    }

    @Test func aSlowRequestIsInProgressForASecondCopyThenCompletesOnce() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.slow, key: "op-1")])
        let slow = Task { try await exchange(server.port, request(key: "op-1", body: body)) }
        await server.waitUntilHeld(key: "op-1")
        #expect(server.heldKeys == ["op-1"])

        let copy = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(copy.status == 409)
        #expect(copy.code == "idempotency_in_progress")

        // Answering the copy released the slow request.
        let first = try await slow.value
        #expect(first.status == 201)
        let later = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(later.header("Idempotent-Replayed") == "true")
        #expect(later.body == first.body)
        #expect(try server.appliedCounts() == ["op-1": 1])
    }

    @Test func aSlowRequestIsReleasedByTheControlEndpoint() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.slow)])
        let slow = Task { try await exchange(server.port, request(key: "op-1", body: body)) }
        await server.waitUntilHeld(key: "op-1")
        let held = try await exchange(server.port, request("GET", "/_control/held"))
        #expect(held.json?["held"] as? [String] == ["op-1"])
        #expect(try server.appliedCounts().isEmpty, "claimed, not yet written")

        let released = try await exchange(server.port, request("POST", "/_control/release", body: #"{"key":"op-1"}"#))
        #expect(released.json?["released"] as? Int == 1)
        #expect(try await slow.value.status == 201)
        #expect(try server.appliedCounts() == ["op-1": 1])
    }

    @Test func aRequestHeldInsideItsTransactionCommitsOnlyWhenReleased() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([Fault(.holdInTransaction, key: "op-1")])
        let held = Task { try await exchange(server.port, request(key: "op-1", body: body)) }
        // Held first, with no clock: the control endpoint's own wait is bounded (5 min), and a
        // request that reaches the server late on a loaded machine must not fail the test.
        await server.waitUntilHeld(key: "op-1")
        let awaited = try await exchange(server.port, request("POST", "/_control/await-held", body: #"{"key":"op-1"}"#))
        #expect(awaited.json?["held"] as? Bool == true)
        #expect(server.heldKeys == ["op-1"])
        #expect(try server.appliedCounts().isEmpty, "written inside the transaction, not committed")
        #expect(try server.records().isEmpty)

        let released = try await exchange(server.port, request("POST", "/_control/release", body: #"{"key":"op-1"}"#))
        #expect(released.json?["released"] as? Int == 1)
        #expect(try await held.value.status == 201)
        #expect(try server.appliedCounts() == ["op-1": 1])
        let unnamed = try await exchange(server.port, request("POST", "/_control/await-held"))
        #expect(unnamed.status == 400 && unnamed.code == "invalid_body", "await-held needs a key")
    }

    @Test func faultsMatchTheirKeyAndEndpointAndAreConsumedInOrder() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.addFaults([
            Fault(.serverError, key: "op-2"),
            Fault(.forbidden, endpoint: "/employees"),
            Fault(.unavailable, endpoint: "/products"),
            Fault(.rateLimited, endpoint: "/products"),
        ])
        let product1 = try await exchange(server.port, request(key: "op-1", body: body))
        let product2 = try await exchange(server.port, request(key: "op-1", body: body))
        let employee = try await exchange(server.port, request("POST", "/employees", key: "op-3", body: #"{"id":"e-1"}"#))
        let keyed = try await exchange(server.port, request(key: "op-2", body: #"{"id":"p-2"}"#))
        #expect([product1.status, product2.status, employee.status, keyed.status] as [Int] == [503, 429, 403, 500])
        #expect(server.pendingFaults.isEmpty)
    }

    @Test func faultsAreScriptedListedAndResetOverHTTP() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let queued = try await exchange(server.port, request(
            "POST", "/_control/faults",
            body: #"[{"fault":"rate_limited","retry_after":3,"endpoint":"/products"},{"fault":"server_error","key":"op-9"}]"#))
        #expect(queued.status == 200)
        #expect(queued.json?["queued"] as? Int == 2)
        #expect(server.pendingFaults == [
            Fault(.rateLimited, endpoint: "/products", retryAfterSeconds: 3), Fault(.serverError, key: "op-9"),
        ])
        let listed = try await exchange(server.port, request("GET", "/_control/faults"))
        #expect((listed.json?["faults"] as? [[String: Any]])?.first?["fault"] as? String == "rate_limited")

        let wrapped = try await exchange(server.port, request("POST", "/_control/faults", body: #"{"faults":[{"fault":"slow"}]}"#))
        #expect(wrapped.json?["queued"] as? Int == 3)

        let limited = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(limited.status == 429)
        #expect(limited.header("Retry-After") == "3")
        // The keyed fault comes before `slow` in the queue, so this request is not held.
        let keyed = try await exchange(server.port, request(key: "op-9", body: #"{"id":"p-9"}"#))
        #expect(keyed.status == 500)

        let reset = try await exchange(server.port, request("POST", "/_control/reset"))
        #expect(reset.status == 200)
        #expect(server.pendingFaults.isEmpty, "the slow fault is gone")
        let fresh = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(fresh.status == 201)
        _ = try await exchange(server.port, request("POST", "/_control/reset"))
        #expect(try server.appliedCounts().isEmpty)
        #expect(try server.records().isEmpty)
        let again = try await exchange(server.port, request(key: "op-1", body: body))
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == nil, "reset forgot the claims too")
    }

    @Test func anUnknownFaultIsRefusedWith400NamingTheKinds() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let refused = try await exchange(server.port, request("POST", "/_control/faults", body: #"[{"fault":"meteor"}]"#))
        #expect(refused.status == 400)
        #expect(refused.code == "invalid_faults")
        #expect((refused.json?["message"] as? String)?.hasPrefix("unknown fault kind") == true)
        #expect((refused.json?["message"] as? String)?.contains("drop_after_commit") == true)
        let wrapped = try await exchange(server.port, request("POST", "/_control/faults", body: #"{"faults":[{"fault":"meteor"}]}"#))
        #expect((wrapped.json?["message"] as? String)?.hasPrefix("unknown fault kind") == true)
        let garbage = try await exchange(server.port, request("POST", "/_control/faults", body: "not json"))
        #expect(garbage.status == 400)
        #expect(server.pendingFaults.isEmpty)
    }

    @Test func aChangeRecordPatchNoStoreCouldHoldIsRefusedWhenQueued() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let refused = try await exchange(server.port, request("POST", "/_control/faults",
            body: #"[{"fault":"server_error"},{"fault":"change_record","patch":{"name":"a\u0000b"}}]"#))
        #expect(refused.status == 400)
        #expect(refused.code == "invalid_faults")
        #expect((refused.json?["message"] as? String)?.hasPrefix(#"fault 1: its "patch": name holds U+0000"#) == true, "\(refused.json ?? [:])")
        #expect(server.pendingFaults.isEmpty, "none of the list is queued")
    }
}
