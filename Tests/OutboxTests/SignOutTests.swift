import Foundation
@testable import Outbox
import OutboxTesting
import Testing

/// A product with a price, named for the member: "Antiseptic <n>", "price <n>.20".
private func pricedProduct(_ number: Int, id: OperationID? = nil, baseRevision: String? = nil,
                           dependsOn: [OperationID] = []) -> OutboxRequest {
    OutboxRequest(
        businessID: "pharmacy-7", operationType: "product.create", endpoint: "/products",
        payload: Data(#"{"id":"product-\#(number)","name":"Antiseptic \#(number)","price":\#(number).20}"#.utf8),
        entityID: "product-\(number)", category: "Products", entityLabel: "Antiseptic \(number)",
        summary: "price \(number).20", operationID: id, baseRevision: baseRevision, dependsOn: dependsOn
    )
}

private func recordKey(_ number: Int) -> RecordKey { RecordKey(business: "pharmacy-7", type: "product", id: "product-\(number)") }
private func recordValue(_ number: Int) -> Data { Data(#"{"name":"Antiseptic \#(number)","price":\#(number).20}"#.utf8) }

/// Leaves one row of `status` in `outbox`, answered by `server`'s scripted faults: "Antiseptic
/// <number>", changing record `number`. A `syncing` row is one whose attempt started and whose
/// outcome was never recorded, with nothing of this process sending it: what a crash mid-send
/// leaves until the attempt is abandoned.
private func leaveRow(_ status: OutboxStatus, number: Int, in outbox: Outbox, on server: InMemoryServer) async throws -> OperationID {
    let id = OperationID()
    let key = id.idempotencyKey
    switch status {
    case .queued, .syncing: server.inject(.noResponse(.offline), forKey: key)
    case .failed: server.inject(.respond(.error(422, code: "validation_failed", message: "Price must be positive")), forKey: key)
    case .blocked: server.inject(.respond(.error(403, code: "forbidden", message: "Not allowed")), forKey: key)
    case .conflicted:
        server.inject(.respond(TransportResponse(statusCode: 412, headers: ["ETag": "\"r2\"", "Content-Type": "application/json"],
                                                 body: Data(#"{"code":"revision_conflict","message":"Changed elsewhere"}"#.utf8))), forKey: key)
    case .pendingApproval: server.inject(.holdForApproval(requestID: "apr-\(number)"), forKey: key)
    default: Issue.record("no recipe for \(status)")
    }
    let request = pricedProduct(number, id: id, baseRevision: status == .conflicted ? "r1" : nil)
    _ = try await outbox.enqueue(request, changing: [.put(recordKey(number), recordValue(number))])
    await outbox.drain()
    await outbox.settle()
    if status == .syncing {
        let attempt = try #require(try outbox.operation(id)).attemptCount + 1
        _ = try await outbox.writer.append([JournalStore.Draft(operationID: id, body: .attemptStarted(AttemptStarted(attempt: AttemptNumber(rawValue: attempt), trigger: .drain)))])
    }
    #expect(try outbox.operation(id)?.status == status)
    return id
}

@Suite("Sign-out: every unsettled row discarded, the refusal naming them", .timeLimit(.minutes(10)))
struct SignOutTests {
    @Test(arguments: [OutboxStatus.queued, .syncing, .failed, .blocked, .conflicted])
    func signOutDiscardsEveryRowTheBadgeCountsAndKeepsTheApprovalRow(_ status: OutboxStatus) async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        let outbox = try journal.open(server: server)
        defer { outbox.close() }
        let approval = try await leaveRow(.pendingApproval, number: 9, in: outbox, on: server)
        let id = try await leaveRow(status, number: 1, in: outbox, on: server)
        #expect(try outbox.badgeCount() == 1)

        let named = PendingWrite(operationID: id, category: "Products", entityLabel: "Antiseptic 1", summary: "price 1.20", status: status)
        await #expect(throws: OutboxError.pendingWork(count: 1, writes: [named])) { try await outbox.signOut(discardPending: false) }
        #expect(try outbox.operation(id)?.status == status, "a refused sign-out changes nothing")

        try await outbox.signOut(discardPending: true)
        let kinds = try outbox.history(id).map(\.kind)
        #expect(kinds.suffix(status == .syncing ? 2 : 1) == (status == .syncing ? [.attemptAbandoned, .discarded] : [.discarded]))
        guard case .discarded(let discarded) = try outbox.history(id).last?.body else { Issue.record("no discard recorded"); return }
        #expect(discarded.reason == .signOut)
        #expect(try outbox.operation(id)?.status == .discarded)
        #expect(try outbox.badgeCount() == 0)
        #expect(try outbox.operation(approval)?.status == .pendingApproval, "the server holds it")
        #expect(try outbox.projectionMismatches() == [])
    }

    @Test(arguments: [(rows: 2, listed: 2), (rows: 57, listed: OutboxError.pendingWorkListLimit)])
    func theRefusalNamesTheWritesOldestFirstAndCountsThoseItDoesNotList(rows: Int, listed: Int) async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        var ids: [OperationID] = []
        for number in 1...rows { ids.append(try await outbox.enqueue(pricedProduct(number))) }
        do {
            try await outbox.signOut(discardPending: false)
            Issue.record("sign-out was not refused")
        } catch let error as OutboxError {
            guard case .pendingWork(let count, let writes) = error else { Issue.record("refused with \(error)"); return }
            #expect(count == rows)
            #expect(writes.map(\.operationID) == Array(ids.prefix(listed)))
            #expect(writes.map(\.entityLabel) == (1...listed).map { "Antiseptic \($0)" })
            if rows == 2 {
                #expect(error.description == "2 changes have not synced: Products · Antiseptic 1 (price 1.20), Products · Antiseptic 2 (price 2.20)."
                    + " Sync them first, or sign out with discardPending: true to drop them")
            } else {
                #expect(error.description.contains("Products · Antiseptic 5 (price 5.20), and \(rows - 5) more."))
            }
        }
        #expect(try outbox.badgeCount() == rows)
    }

    @Test func aRowThatNeedsAPersonSaysWhyInTheRefusal() {
        let id = OperationID()
        let words = [OutboxStatus.queued, .syncing, .failed, .blocked, .conflicted].map {
            PendingWrite(operationID: id, category: "Products", entityLabel: "Antiseptic 500 ml", summary: "price 4.20", status: $0).description
        }
        #expect(words == [
            "Products · Antiseptic 500 ml (price 4.20)", "Products · Antiseptic 500 ml (price 4.20)",
            "Products · Antiseptic 500 ml (price 4.20, refused by the server)", "Products · Antiseptic 500 ml (price 4.20, blocked)",
            "Products · Antiseptic 500 ml (price 4.20, changed elsewhere meanwhile)",
        ])
    }
}
