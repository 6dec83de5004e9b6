import Foundation
@testable import Outbox
import OutboxAudit
import OutboxTesting
import Testing

/// A stock movement, the kind of write that must not queue unless someone listed it.
private func stockMovement(_ number: Int = 1, type: String = "stock.move") -> OutboxRequest {
    OutboxRequest(
        businessID: "pharmacy-7", operationType: type, endpoint: "/stock-movements",
        payload: Data(#"{"movement":"m-\#(number)","qty":\#(number)}"#.utf8),
        category: "Stock", entityLabel: "Stock \(number)", summary: "Stock received"
    )
}

/// Whether `error` is the refusal of a type listed nowhere: it names the field, the type and the
/// configuration that would let it queue.
private func isUnlistedTypeRefusal(_ error: any Error, _ operationType: String) -> Bool {
    guard case OutboxError.invalidRequest(let field, let problem) = error else { return false }
    return field == "operationType" && problem.contains("\"\(operationType)\"")
        && problem.contains("OutboxConfiguration.operationPolicies") && problem.contains("defaultPolicy")
}

/// A configuration listing exactly `policies`, with no default policy: every other type is refused.
private func listingOnly(_ policies: [String: OperationTypePolicy]) -> (inout OutboxConfiguration) -> Void {
    { configuration in
        configuration.operationPolicies = policies
        configuration.defaultPolicy = nil
    }
}

@Suite("Per-type policies, fail-closed", .timeLimit(.minutes(10)))
struct ConfigurationPolicyTests {
    @Test func anUnlistedTypeIsRefusedByEnqueueNamingTheConfigurationToAddAndNothingIsJournaled() async throws {
        let journal = TestJournal()
        let outbox = try journal.open(listingOnly(["product.create": .idempotent]))
        defer { outbox.close() }
        let before = try outbox.lastSeq()
        await #expect { try await outbox.enqueue(stockMovement()) } throws: { isUnlistedTypeRefusal($0, "stock.move") }
        #expect(try outbox.lastSeq() == before)
        #expect(try outbox.events().map(\.kind) == [.journalOpened])
        #expect(try outbox.ledger(LedgerQuery(limit: .max)).entries.isEmpty)
        // The listed type still queues.
        _ = try await outbox.enqueue(productRequest(1))
        #expect(try outbox.ledger(LedgerQuery(limit: .max)).entries.map(\.operationType) == ["product.create"])
    }

    @Test func anUnlistedTypeIsRefusedBySaveBeforeAnythingIsWrittenOrSent() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server, listingOnly(["product.create": .idempotent]))
        defer { outbox.close() }
        let before = try outbox.lastSeq()
        await #expect { try await outbox.save(stockMovement()) } throws: { isUnlistedTypeRefusal($0, "stock.move") }
        #expect(try outbox.lastSeq() == before)
        #expect(server.requests.isEmpty)
    }

    @Test func canQueueAnswersFalseForUnlistedAndOnlineOnlyTypesAndTrueForListedOnes() throws {
        let journal = TestJournal()
        let outbox = try journal.open(listingOnly(["product.create": .idempotent, "dispatch.deliver": .terminalTransition, "dispatch.cancel": .onlineOnly]))
        defer { outbox.close() }
        #expect(outbox.canQueue("product.create"))
        #expect(outbox.canQueue("dispatch.deliver"))
        #expect(!outbox.canQueue("dispatch.cancel"))
        #expect(!outbox.canQueue("stock.move"))
    }

    @Test func aDefaultPolicyAnswersForEveryUnlistedTypeButNotForAListedOne() throws {
        let queuing = TestJournal()
        let outbox = try queuing.open {
            $0.operationPolicies = ["dispatch.cancel": .onlineOnly]
            $0.defaultPolicy = .idempotent
        }
        defer { outbox.close() }
        #expect(outbox.canQueue("stock.move"))
        #expect(!outbox.canQueue("dispatch.cancel"))

        let refusing = TestJournal()
        let online = try refusing.open {
            $0.operationPolicies = ["product.create": .idempotent]
            $0.defaultPolicy = .onlineOnly
        }
        defer { online.close() }
        #expect(!online.canQueue("stock.move"))
        #expect(online.canQueue("product.create"))
    }

    @Test func aDefaultPolicyQueuesAndSendsUnlistedTypesUnderItsOwnRule() async throws {
        let transport = ScriptedTransport(otherwise: .respond(.json(201, #"{"revision":"r1"}"#)))
        // A 412 on the first edit: the default's conflict rule decides it.
        transport.script(.respond(TransportResponse(
            statusCode: 412, headers: ["ETag": "\"r2\"", "Content-Type": "application/json"],
            body: Data(#"{"code":"revision_conflict","message":"Changed elsewhere","current":{"qty":3}}"#.utf8))))
        let journal = TestJournal(transport: transport)
        let outbox = try journal.open {
            $0.operationPolicies = [:]
            $0.defaultPolicy = .idempotent.onConflict(.serverWins)
        }
        defer { outbox.close() }
        var edit = stockMovement(1, type: "stock.adjust")
        edit.method = "PATCH"
        edit.endpoint = "/stock/1"
        edit.entityID = "stock-1"
        edit.baseRevision = "r1"
        let conflicted = try await outbox.enqueue(edit)
        await outbox.drain()
        #expect(try outbox.operation(conflicted)?.status == .discarded)
        #expect(try outbox.journalEvents(of: conflicted).map(\.kind) == [.enqueued, .attemptStarted, .attemptFinished, .discarded])
        let movement = try await outbox.enqueue(stockMovement(2))
        await outbox.drain()
        #expect(try outbox.operation(movement)?.status == .synced)
    }

    @Test func rowsOfATypeTheConfigurationNoLongerListsKeepSending() async throws {
        let journal = TestJournal()   // offline: every send fails
        let offline = try journal.open(listingOnly(["stock.move": .idempotent]))
        let id = try await offline.enqueue(stockMovement())
        await offline.drain()
        #expect(try offline.operation(id)?.status == .queued)
        offline.close()

        let server = InMemoryServer()
        let upgraded = try journal.open(server: server, listingOnly(["product.create": .idempotent]))
        defer { upgraded.close() }
        // A new write of the type is refused; the one already journaled is sent.
        #expect(!upgraded.canQueue("stock.move"))
        await #expect { try await upgraded.enqueue(stockMovement(2)) } throws: { isUnlistedTypeRefusal($0, "stock.move") }
        journal.clock.advance(by: 3600)
        await upgraded.drain()
        #expect(try upgraded.operation(id)?.status == .synced)
        #expect(server.records.count == 1)
        #expect(server.appliedCount(id.idempotencyKey) == 1)
    }

    @Test func typesAreComparedByteForByte() async throws {
        let composed = "caf\u{E9}.create"
        let decomposed = "cafe\u{301}.create"
        #expect(composed == decomposed, "Swift's String calls the two equal; the configuration must not")
        let journal = TestJournal()
        let outbox = try journal.open(listingOnly([composed: .idempotent]))
        defer { outbox.close() }
        #expect(outbox.canQueue(composed))
        #expect(!outbox.canQueue(decomposed))
        await #expect { try await outbox.enqueue(stockMovement(1, type: decomposed)) } throws: { isUnlistedTypeRefusal($0, decomposed) }
        let id = try await outbox.enqueue(stockMovement(2, type: composed))
        #expect(try outbox.operation(id)?.request.operationType.utf8.elementsEqual(composed.utf8) == true)
    }

    static let rebaseCountsOutOfRange: [(field: String, change: @Sendable (inout OutboxConfiguration) -> Void)] = [
        (#"operationPolicies["product.update"].conflictRule"#, { $0.operationPolicies["product.update"] = .idempotent.onConflict(.rebase(maxTimes: 0)) }),
        (#"operationPolicies["product.update"].conflictRule"#, { $0.operationPolicies["product.update"] = .idempotent.onConflict(.rebase(maxTimes: 101)) }),
        ("defaultPolicy.conflictRule", { $0.defaultPolicy = .idempotent.onConflict(.rebase(maxTimes: 0)) }),
        ("defaultPolicy.conflictRule", { $0.defaultPolicy = .idempotent.onConflict(.rebase(maxTimes: -2)) }),
    ]

    @Test(arguments: 0..<rebaseCountsOutOfRange.count)
    func theConfigurationCheckRefusesARebaseCountOutOfRangeNamingTheField(_ index: Int) {
        let journal = TestJournal()
        let (field, change) = Self.rebaseCountsOutOfRange[index]
        #expect {
            _ = try journal.open(change)
        } throws: { error in
            guard case OutboxError.invalidConfiguration(let refused, let problem) = error else { return false }
            return refused == field && problem.contains("1...100")
        }
        #expect(!FileManager.default.fileExists(atPath: journal.directory.path))
    }
}
