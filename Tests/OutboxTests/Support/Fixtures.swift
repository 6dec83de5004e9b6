import Foundation
@testable import Outbox
import OutboxAudit
import TestHarness
import OutboxTesting
import OutboxWire

/// The fixture journals under `Tests/Fixtures/`, written by this version of the engine and kept
/// forever: every later version must open them and keep every pending row.
enum Fixtures {
    static var directory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures")
    }

    /// The clock a test opens a fixture on: a day after the moment the fixtures were written at
    /// (1_800_000_000, see ``write(to:encrypted:)``), the same every run. The system clock, taken
    /// by default, made what an opening judged (a device clock behind the journal's, claims past
    /// their retention) depend on the day the tests ran.
    static func openingClock() -> ManualClock {
        ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000 + 86_400))
    }

    /// What a fixture holds, written beside it as `manifest.json`.
    struct Manifest: Codable, Equatable {
        struct Operation: Codable, Equatable {
            var id: OperationID
            var status: OutboxStatus
            var attemptCount: Int
            var method: String
            var endpoint: String
            var payloadBase64: String
            var payloadVersion: Int
        }

        var formatVersion: Int
        var projectionVersion: Int
        var engineVersion: String
        var account: String
        var encryptionKeyHex: String?
        var workerPaused: Bool
        var operations: [Operation]
        /// Format 3: the member's records the journal holds, each as its view reads.
        var records: [Record]? = nil

        struct Record: Codable, Equatable {
            /// `business/type/id`.
            var key: String
            var valueBase64: String?
            var localOnly: Bool
        }

        var key: SealingKey? {
            guard let hex = encryptionKeyHex else { return nil }
            let digits = Array(hex)
            return try? SealingKey(bytes: stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) })
        }
    }

    /// Every fixture directory: each holds `data.mdb` and `manifest.json`.
    static func all() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { FileManager.default.fileExists(atPath: $0.appendingPathComponent("manifest.json").path) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    static func manifest(of fixture: URL) throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: fixture.appendingPathComponent("manifest.json")))
    }

    /// A working copy of a fixture's journal: fixtures themselves are never opened for writing.
    static func copy(_ fixture: URL) throws -> URL {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-fixture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: fixture.appendingPathComponent("data.mdb"), to: copy.appendingPathComponent("data.mdb"))
        return copy
    }

    // MARK: Writing

    /// Writes a journal of every status through the engine, deterministically: a 401 that paused
    /// the worker, an attempt left without an outcome (as if the process died), compacted rows,
    /// and pending rows with attempts behind them.
    static func write(to directory: URL, encrypted: Bool) async throws -> Manifest {
        try? FileManager.default.removeItem(at: directory)
        let clock = ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000))
        let server = InMemoryServer()
        let ids = SeededIDs(seed: encrypted ? 2 : 1)
        let key = encrypted ? try SealingKey(bytes: (0..<32).map { UInt8($0 * 7 % 256) }) : nil
        let session = SwitchableSession(account: "member-42")
        var configuration = OutboxConfiguration(account: "member-42", clock: clock, session: session, appVersion: "fixture", encryptionKey: key)
        configuration.operationPolicies = [
            "product.create": .idempotent, "employee.create": .idempotent,
            "product.update": .idempotent, "product.reprice": .idempotent.coalescing(),
        ]
        configuration.operationIDSource = { ids.next() }
        configuration.recordTypes = ["draft": .localOnly]
        let outbox = try Outbox(directory: directory, transport: server, configuration: configuration)
        func edit(_ number: Int, price: String, revision: String, coalescing: Bool = false) -> OutboxRequest {
            OutboxRequest(
                businessID: "pharmacy-7", operationType: coalescing ? "product.reprice" : "product.update", method: "PATCH",
                endpoint: "/products/fixture-\(number)", payload: Data(#"{"price":\#(price)}"#.utf8),
                entityID: "fixture-\(number)", category: "Products", entityLabel: "Fixture \(number)", summary: "New price",
                baseRevision: revision
            )
        }
        func request(_ number: Int, entity: String? = nil) -> OutboxRequest {
            OutboxRequest(
                businessID: "pharmacy-7", operationType: number % 2 == 0 ? "product.create" : "employee.create",
                endpoint: number % 2 == 0 ? "/products" : "/employees",
                payload: Data(#"{"id":"fixture-\#(number)","name":"Fixture \#(number) é ✓","qty":\#(number)}"#.utf8),
                entityID: entity, category: number % 2 == 0 ? "Products" : "Employees",
                entityLabel: "Fixture \(number)", summary: "New record", payloadVersion: 1 + number % 3
            )
        }
        // Settled, then compacted.
        for number in 0..<3 { _ = try await outbox.enqueue(request(number)) }
        await outbox.drain()
        await outbox.settle()
        clock.advance(by: 3600)
        _ = try await outbox.compact(before: clock.now())
        // Format 4: a pulled page; a write answered with where the feed shows it, its change
        // still confirming; a base fetched again whole and swapped in; and one half staged.
        let pulledKey = RecordKey(business: "pharmacy-7", type: "product", id: "fixture-21")
        let pulledValue = Data(#"{"name":"Fixture 21","price":4}"#.utf8)
        let pulledChanges = [FeedChange(type: "product", id: "fixture-21", revision: 3, record: pulledValue),
                             FeedChange(type: "product", id: "fixture-22", revision: 2, record: nil)]
        _ = try await outbox.apply(FeedPage(business: "pharmacy-7", from: .start(of: 1), cursor: FeedPosition(epoch: 1, major: 5), hasMore: false,
                                            count: 2, digest: FeedDigest.page(pulledChanges.map(\.digestInput)), changes: pulledChanges),
                                   requested: nil, limit: 500)
        let confirmingValue = Data(#"{"name":"Fixture 21","price":5}"#.utf8)
        server.inject(.respond(TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json", "Outbox-Visible-At": "1-9-0"],
                                                 body: Data(#"{"revision":4,"record":{"name":"Fixture 21","price":5}}"#.utf8))))
        var reprice = edit(21, price: "5", revision: "3")
        reprice.method = "PUT"
        _ = try await outbox.enqueue(reprice, changing: [.put(pulledKey, confirmingValue)])
        await outbox.settle()
        func snapshot(_ business: String, _ records: [FeedChange], more: Bool) -> InMemoryServer.Fault {
            let page = SnapshotPage(business: business, position: FeedPosition(epoch: 2, major: 7), hasMore: more, count: records.count,
                                    digest: FeedDigest.page(records.map(\.digestInput)), records: records)
            return .respond(TransportResponse(statusCode: 200, headers: ["Content-Type": "application/json"], body: page.encoded()))
        }
        let swappedKey = RecordKey(business: "pharmacy-8", type: "product", id: "fixture-23")
        let swappedValue = Data(#"{"name":"Fixture 23","price":6}"#.utf8)
        server.inject(snapshot("pharmacy-8", [FeedChange(type: "product", id: "fixture-23", revision: 1, record: swappedValue)], more: false))
        _ = try await outbox.resnapshot(business: "pharmacy-8", reason: "expired")
        server.inject(snapshot("pharmacy-9", [FeedChange(type: "product", id: "fixture-24", revision: 1, record: swappedValue)], more: true),
                      .noResponse(.connectionLost))
        _ = try await outbox.resnapshot(business: "pharmacy-9", reason: "foreign_epoch")

        // Synced, failed, blocked, waiting for approval, discarded, withdrawn.
        server.inject(.apply, .respond(.error(422, code: "validation_failed", message: "Bad")),
                      .respond(.error(403, code: "forbidden", message: "No")), .holdForApproval(requestID: "apr-1"))
        for number in 3..<7 {
            _ = try await outbox.enqueue(request(number))
            await outbox.settle()
        }
        server.setOnline(false)
        let discarded = try await outbox.enqueue(request(7))
        await outbox.settle()
        try await outbox.discard(discarded)
        server.setOnline(true)
        server.inject(.respond(.error(422, code: "validation_failed", message: "Bad")))
        _ = try await outbox.save(request(8))
        await outbox.settle()
        // Format 2: an edit that met a conflict; a correction of a rejected edit; a write that
        // depends on another; a coalesced edit; an operation saved under the app's own id.
        let conflict = ContentConflict.response
        server.inject(.respond(conflict))
        _ = try await outbox.enqueue(edit(13, price: "10", revision: "r1"))
        await outbox.settle()
        server.inject(.respond(.error(422, code: "validation_failed", message: "Price must be positive")))
        let rejected = try await outbox.enqueue(edit(14, price: "-1", revision: "r1"))
        await outbox.settle()
        _ = try await outbox.revise(rejected, payload: Data(#"{"price":1}"#.utf8))
        await outbox.settle()
        server.setOnline(false)
        let product = try await outbox.enqueue(request(16))
        var dependent = request(17)
        dependent.dependsOn = [product]
        _ = try await outbox.enqueue(dependent)
        // Signed out, nothing is attempted: the second edit always finds the first unsent.
        session.signOut()
        _ = try await outbox.enqueue(edit(18, price: "3", revision: "r1", coalescing: true))
        _ = try await outbox.enqueue(edit(18, price: "4", revision: "r1", coalescing: true))
        session.signIn("member-42")
        var stable = request(19)
        stable.operationID = ids.next()
        _ = try await outbox.enqueue(stable)
        await outbox.settle()
        server.setOnline(true)
        // Format 3: a record changed by a write waiting for the network, and a local-only one.
        server.setOnline(false)
        let recordKey = RecordKey(business: "pharmacy-7", type: "product", id: "fixture-20")
        let draftKey = RecordKey(business: "pharmacy-7", type: "draft", id: "form-1")
        let recordValue = Data(#"{"name":"Fixture 20 é","price":13.5}"#.utf8)
        let draftValue = Data(#"{"name":"Half-typed"}"#.utf8)
        _ = try await outbox.enqueue(request(20), changing: [.put(recordKey, recordValue)])
        try await outbox.writeLocal([.put(draftKey, draftValue)])
        await outbox.settle()
        // Queued with attempts behind it, and queued in a lane behind it.
        _ = try await outbox.enqueue(request(9, entity: "shelf-1"))
        await outbox.settle()
        clock.advance(by: 2)
        await outbox.settle()
        _ = try await outbox.enqueue(request(10, entity: "shelf-1"))
        await outbox.settle()
        // A 401 pauses the worker with a row queued.
        server.setOnline(true)
        server.inject(.respond(.error(401, code: "token_expired", message: "Sign in again")))
        clock.advance(by: 60)
        _ = try await outbox.enqueue(request(11))
        await outbox.settle()
        // An attempt whose outcome the process never recorded.
        let interrupted = try await outbox.appendEnqueued(request(12))
        _ = try await outbox.writer.append([JournalStore.Draft(
            operationID: interrupted, body: .attemptStarted(AttemptStarted(attempt: 1, trigger: .drain)))])

        let states = try outbox.ledger(LedgerQuery(limit: .max)).entries.map { try outbox.operation($0.operationID)! }
        let paused = try outbox.engineState().isPaused
        outbox.close()
        // LMDB's lock file and the engine's process lock belong to a running journal, not to a fixture.
        for name in ["lock.mdb", "writer.lock"] { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
        return Manifest(
            formatVersion: RecordCodec.formatVersion,
            projectionVersion: Int(JournalSchema.projectionVersion),
            engineVersion: Outbox.engineVersion,
            account: "member-42",
            encryptionKeyHex: key.map { $0.withUnsafeKeyBytes { $0.map { String(format: "%02x", $0) }.joined() } },
            workerPaused: paused,
            operations: states.map {
                Manifest.Operation(
                    id: $0.id, status: $0.status, attemptCount: $0.attemptCount, method: $0.request.method,
                    endpoint: $0.request.endpoint, payloadBase64: $0.request.payload.base64EncodedString(),
                    payloadVersion: $0.request.payloadVersion
                )
            },
            records: [
                Manifest.Record(key: recordKey.description, valueBase64: recordValue.base64EncodedString(), localOnly: false),
                Manifest.Record(key: draftKey.description, valueBase64: draftValue.base64EncodedString(), localOnly: true),
                Manifest.Record(key: pulledKey.description, valueBase64: confirmingValue.base64EncodedString(), localOnly: false),
                Manifest.Record(key: swappedKey.description, valueBase64: swappedValue.base64EncodedString(), localOnly: false),
            ]
        )
    }
}

/// The answer of a server whose record changed since the edit began.
enum ContentConflict {
    static let response = TransportResponse(
        statusCode: 412, headers: ["ETag": "\"r2\"", "Content-Type": "application/json"],
        body: Data(#"{"code":"revision_conflict","message":"Changed elsewhere","current":{"price":13}}"#.utf8)
    )
}
