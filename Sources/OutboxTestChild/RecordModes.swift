import Foundation
import Outbox
import OutboxAudit

// `record-worker` and `record-settle`: the member's records written with their writes, for the
// crash tests that kill between the durable steps of a record write (RecordCrashTests).

/// The business every record write of these modes belongs to.
let recordBusiness = "crash-records"

/// The record types and write types these modes use, configured as an app configures them.
let recordPolicies: [String: OperationTypePolicy] = ["product.create": .idempotent, "product.update": .idempotent]
let recordTypes: [String: OutboxConfiguration.RecordTypePolicy] = ["draft": .localOnly]

func productKey(_ id: String) -> RecordKey { RecordKey(business: recordBusiness, type: "product", id: id) }
func draftKey(_ id: String) -> RecordKey { RecordKey(business: recordBusiness, type: "draft", id: id) }

/// A product's whole value as the member types it: numbered, so that every edit's value (and its
/// hash) is its own.
func productValue(_ id: String, _ number: Int) -> Data {
    Data(#"{"id":"\#(id)","name":"Product \#(id)","price":\#(number)}"#.utf8)
}

func draftValue(_ id: String, _ number: Int) -> Data {
    Data(#"{"draft":"\#(id)","n":\#(number)}"#.utf8)
}

/// The write that sends a product's change: a create while the member's view holds nothing of
/// it, else an update whose `If-Match` is the record's server revision when it is sent.
func productWrite(_ key: RecordKey, _ value: Data, creates: Bool) -> OutboxRequest {
    var request = OutboxRequest(
        businessID: key.business, operationType: creates ? "product.create" : "product.update", method: creates ? "POST" : "PUT",
        endpoint: creates ? "/products" : "/products/\(key.id)", payload: value, category: "Products",
        entityLabel: "Product \(key.id)", summary: creates ? "New product" : "New price")
    if !creates { request.revisionFrom = key }
    return request
}

func openRecordEngine(_ path: String, _ serverURL: String, durability: OutboxConfiguration.Durability, steps: Steps) throws -> Outbox {
    guard let url = URL(string: serverURL) else { fail("not a URL: \(serverURL)") }
    var configuration = OutboxConfiguration(
        account: "crash-member",
        retryPolicy: OperationTypePolicy.RetryPolicy(initialDelaySeconds: 0.01, multiplier: 2, maxDelaySeconds: 0.05),
        maxConcurrentLanes: 2,
        operationPolicies: recordPolicies,
        durability: durability,
        logger: OutboxLogger(label: "record-worker", handler: StepLogHandler(steps: steps))
    )
    configuration.recordTypes = recordTypes
    return try Outbox(
        directory: URL(fileURLWithPath: path),
        transport: SteppingTransport(inner: URLSessionTransport(baseURL: url, timeoutSeconds: 5), steps: steps),
        configuration: configuration
    )
}

/// `record-worker <journal-dir> <server-url> <tag> <first> <script> <full|processCrash> <stop>`:
/// the member at work on products `<tag>-k<n>` and drafts `<tag>-d<n>`, one action of the script
/// after another (comma-separated), while the worker sends; the i-th action's values are
/// numbered `<first> + i`. See main.swift for the actions and the lines printed.
func recordWorker(_ arguments: [String]) async {
    guard arguments.count == 8, let first = Int(arguments[4]), let durability = OutboxConfiguration.Durability(rawValue: arguments[6]) else {
        fail("usage: record-worker <journal-dir> <server-url> <tag> <first> <script> <full|processCrash> <none|step:n>")
    }
    let (path, tag) = (arguments[1], arguments[3])
    let script = arguments[5].split(separator: ",").map(String.init)
    let steps = Steps(stop: StopPoint(arguments[7]))
    do {
        say("opening")
        let outbox = try openRecordEngine(path, arguments[2], durability: durability, steps: steps)
        say("opened")
        outbox.wake(.appLaunch)
        var member = Member(outbox: outbox, tag: tag, steps: steps)
        for (index, action) in script.enumerated() {
            try await member.act(action, number: first + index)
        }
        say("written")
        await outbox.drain()
        say("drained")
        outbox.close()
        say("closed")
    } catch {
        fail("\(error)")
    }
    say("done")
}

/// The member's actions, each reported once it returned (durable).
struct Member {
    let outbox: Outbox
    let tag: String
    let steps: Steps

    /// One action: `e<k>` edits product k (a create while the view holds nothing of it); `l<k>`
    /// writes draft k; `v`/`V` revises the oldest failed, blocked or conflicted write, moving its
    /// change with the same value (`v`) or with a new value and its change (`V`); `m`/`M`
    /// resolves the oldest conflicted one as the member's, likewise; `t` resolves it as the
    /// server's; `r` retries the oldest failed or blocked; `x` discards the oldest queued, failed
    /// or blocked; `a` acknowledges a rollback; `d` drains. An action with nothing to act on prints `skipped`; one
    /// the engine refuses (the worker moved the write meanwhile) prints `refused`.
    mutating func act(_ action: String, number: Int) async throws {
        let kind = action.prefix(1)
        let index = Int(action.dropFirst()) ?? 0
        do {
            switch kind {
            case "e": try await edit(productKey("\(tag)-k\(index)"), number: number)
            case "l":
                let key = draftKey("\(tag)-d\(index)")
                let value = draftValue(key.id, number)
                try await outbox.writeLocal([.put(key, value)])
                steps.pass("local", "\(key.id) \(number) \(SHA256Digest(of: value).hex)")
            case "v", "V": try await revise(own: kind == "V", number: number, action: action)
            case "m", "M", "t": try await resolve(kind, number: number, action: action)
            case "r":
                guard let row = try oldest([.failed, .blocked]) else { return say("skipped \(action)") }
                try await outbox.retry(row.id)
                say("retried \(row.id)")
            case "x":
                guard let row = try oldest([.queued, .failed, .blocked]) else { return say("skipped \(action)") }
                try await outbox.discard(row.id)
                say("discarded \(row.id)")
            case "a":
                let keys = try outbox.records(RecordQuery(business: recordBusiness, type: "product", limit: 100)).records.map(\.key)
                    + (try products())
                guard let key = try keys.first(where: { try outbox.record($0)?.sync.rolledBack != nil }) else { return say("skipped \(action)") }
                try await outbox.acknowledgeRollback(of: key)
                steps.pass("acknowledge", key.id)
            case "d":
                await outbox.drain()
                say("drained")
            default: fail("unknown action \(action)")
            }
        } catch let error as OutboxError {
            if case .illegalTransition = error { return say("refused \(action)") }
            throw error
        }
    }

    /// Products the member's view no longer lists (rolled back, never created) but that the
    /// journal knows.
    private func products() throws -> [RecordKey] {
        try outbox.operationStates(matching: OperationQuery(limit: 500)).states.flatMap(\.records)
    }

    private func edit(_ key: RecordKey, number: Int) async throws {
        let value = productValue(key.id, number)
        let creates = try outbox.record(key)?.value == nil
        let id = try await outbox.enqueue(productWrite(key, value, creates: creates), changing: [.put(key, value)])
        say("enqueued \(id) \(key.id) \(SHA256Digest(of: value).hex)")
    }

    /// A correction with a value of its own changes the record to it; one that moves the change
    /// sends the same value again (a payload other than the change it moves would leave the base,
    /// when the answer names only a revision, holding a value the server never had).
    private func revise(own: Bool, number: Int, action: String) async throws {
        guard let row = try oldest([.failed, .blocked, .conflicted]), let key = row.records.first else { return say("skipped \(action)") }
        let value = own ? productValue(key.id, number) : try payload(of: row)
        let new = try await outbox.revise(row.id, payload: value, changing: own ? [.put(key, value)] : nil)
        say("revised \(row.id) \(new) \(key.id) \(own ? SHA256Digest(of: value).hex : "moved")")
    }

    private func resolve(_ kind: Substring, number: Int, action: String) async throws {
        guard let row = try oldest([.conflicted]), let key = row.records.first else { return say("skipped \(action)") }
        guard kind != "t" else {
            _ = try await outbox.resolveConflict(row.id, keeping: .theirs)
            return say("resolved \(row.id) theirs \(key.id)")
        }
        let value = kind == "M" ? productValue(key.id, number) : try payload(of: row)
        let new = try await outbox.resolveConflict(
            row.id, keeping: .mine(payload: value, baseRevision: row.serverRevision ?? "0"), changing: kind == "M" ? [.put(key, value)] : nil)
        say("revised \(row.id) \(new.map(\.description) ?? "-") \(key.id) \(kind == "M" ? SHA256Digest(of: value).hex : "moved")")
    }

    private func payload(of row: OperationState) throws -> Data {
        guard let snapshot = try outbox.operation(row.id) else { fail("\(row.id) is gone") }
        return snapshot.request.payload
    }

    /// The oldest write of this child's products with one of `statuses`.
    private func oldest(_ statuses: Set<OutboxStatus>) throws -> OperationState? {
        try outbox.operationStates(matching: OperationQuery(statuses: statuses, limit: 500)).states.min { $0.firstSeq < $1.firstSeq }
    }
}

/// `record-settle <journal-dir> <server-url>`: the network is sound and the member decides
/// everything left: drains, discards what failed or was blocked, keeps the server's version of
/// what conflicted, until every write has ended. Prints "settled <synced> <other>", where other
/// counts the writes not ended (0 when all is well).
func recordSettle(_ arguments: [String]) async {
    guard arguments.count == 3 else { fail("usage: record-settle <journal-dir> <server-url>") }
    do {
        let outbox = try openRecordEngine(arguments[1], arguments[2], durability: .full, steps: Steps(stop: nil, printing: false))
        let open: Set<OutboxStatus> = [.queued, .syncing, .failed, .blocked, .conflicted, .pendingApproval]
        for _ in 0..<500 {
            await outbox.drain()
            let left = try outbox.operations(matching: OperationQuery(statuses: open, limit: 500)).operations
            if left.isEmpty { break }
            for row in left {
                do {
                    switch row.status {
                    case .failed, .blocked: try await outbox.discard(row.id)
                    case .conflicted: _ = try await outbox.resolveConflict(row.id, keeping: .theirs)
                    default: break
                    }
                } catch OutboxError.illegalTransition {
                    // The worker moved it meanwhile: looked at again after the next drain.
                }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let depth = try outbox.metrics().queueDepth
        let synced = depth[.synced, default: 0]
        let left = try outbox.operations(matching: OperationQuery(statuses: open, limit: 500)).operations.count
        say("settled \(synced) \(left)")
        outbox.close()
    } catch {
        fail("\(error)")
    }
}
