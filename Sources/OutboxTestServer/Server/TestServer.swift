public import Foundation
public import IdempotencyClaims
public import OutboxWire

/// A loopback HTTP/1.1 server with idempotent create endpoints and scriptable faults: the other
/// side of the outbox's tests.
///
/// ```swift
/// let server = try TestServer()                 // 127.0.0.1, a port the system picks
/// defer { server.stop() }
/// server.addFaults([Fault(.dropAfterCommit, endpoint: "/products")])
/// // ... point the client at server.baseURL, send, retry ...
/// #expect(try server.appliedCounts() == ["op-1": 1])
/// ```
///
/// Endpoints: `POST /products`, `POST /employees` and `POST /stock-movements` (creates through
/// ``IdempotencyClaims``), `PUT` and `PATCH /products/{id}` and `/employees/{id}` (updates,
/// checked against `If-Match`), `DELETE` there (the record kept as a tombstone, checked against
/// `If-Match` too), `POST /sync/batch` (several of those at once, each on its own),
/// `POST /uploads` and `POST /uploads/{id}/complete` (an attachment's grant and completion, on
/// the OpenStack Swift store ``Configuration/uploads`` names), and the control API under
/// `/_control/` (see `Docs/test-server-control.md`). It listens on 127.0.0.1 only.
/// Each connection is served by a thread of its own, up to ``Configuration/maxConnections``.
public final class TestServer: Sendable {
    /// How the server is set up. The defaults suit a test; shorten the timeouts for tests of them.
    public struct Configuration: Sendable {
        /// Where the server keeps claims and records.
        public enum Storage: Sendable {
            /// In memory: gone when the server stops.
            case memory
            /// An LMDB environment in this directory: a server started again on it replays what
            /// it answered before.
            case lmdb(directory: URL)
            /// A storage another module of this package opens: PostgreSQL's, as
            /// `.postgres(_:poolSize:)` from `OutboxTestServerPostgres`. This module names no
            /// database client, so a server in memory or in LMDB links no libpq.
            case external(ExternalStorage)
        }

        /// The port on 127.0.0.1; 0 lets the system pick a free one (see ``TestServer/port``).
        public var port: UInt16
        public var storage: Storage
        /// Retention and lease of the claims.
        public var claimPolicy: ClaimPolicy
        /// The server's clock for claims.
        public var clock: any ClaimClock
        /// The largest request body; larger ones are answered 413 without being read.
        public var maxBodyBytes: Int
        /// The most bytes of request line and headers; more is answered 431.
        public var maxHeaderBytes: Int
        /// The most header lines; more is answered 431.
        public var maxHeaderCount: Int
        /// The most connections served at once; more are answered 503 and closed.
        public var maxConnections: Int
        /// The most operations one `POST /sync/batch` may hold; more are answered 413
        /// `batch_too_large` (with `max_operations`), and the client splits the batch.
        public var maxBatchOperations: Int
        /// The longest a request may take to arrive, and a kept-alive connection may stay idle,
        /// in seconds. A connection idle this long is closed; a request cut off is answered 408.
        public var readTimeout: TimeInterval
        /// The longest one write may wait for a peer that does not read, in seconds.
        public var writeTimeout: TimeInterval
        /// The longest the `slow` and `hold_in_transaction` faults hold a request when nothing
        /// releases it, in seconds: five minutes by default, a guard against a forgotten hold and
        /// never a timing, since a test that reads the hold on a loaded machine may be stalled for
        /// seconds before it does.
        public var slowHoldLimit: TimeInterval
        /// Added before each business request is handled, in seconds: a slower server.
        public var latency: TimeInterval
        /// Told of every business request once it is handled (one with a method its path does
        /// not take too: 405), of every operation of a batch (``ServerEvent/batch`` says where it
        /// stood) and of a batch answered as a whole, and of every request to a path no endpoint
        /// serves (404), on the server's own threads.
        public var observer: (@Sendable (ServerEvent) -> Void)?
        /// What `GET /sync/changes` publishes and holds to: the most changes and bytes a page
        /// holds, and how long tombstones are kept (`Docs/wire-feed.md`).
        public var feedLimits: FeedLimits = FeedHandling.defaultLimits
        /// The object store behind `POST /uploads` and `POST /uploads/<id>/complete`; `nil` (the
        /// default): those answer 501 `uploads_unsupported`.
        public var uploads: UploadStore?

        public init(
            port: UInt16 = 0,
            storage: Storage = .memory,
            claimPolicy: ClaimPolicy = ClaimPolicy(),
            clock: any ClaimClock = SystemClaimClock(),
            maxBodyBytes: Int = 1 << 20,
            maxHeaderBytes: Int = 16 << 10,
            maxHeaderCount: Int = 100,
            maxConnections: Int = 64,
            maxBatchOperations: Int = 100,
            readTimeout: TimeInterval = 10,
            writeTimeout: TimeInterval = 10,
            slowHoldLimit: TimeInterval = 300,
            latency: TimeInterval = 0,
            observer: (@Sendable (ServerEvent) -> Void)? = nil
        ) {
            precondition(maxConnections > 0, "maxConnections must be positive")
            precondition(maxBatchOperations > 0, "maxBatchOperations must be positive")
            precondition(readTimeout > 0 && writeTimeout > 0 && slowHoldLimit > 0, "timeouts must be positive")
            precondition(latency >= 0 && latency.isFinite, "latency must be zero or more seconds")
            self.port = port
            self.storage = storage
            self.claimPolicy = claimPolicy
            self.clock = clock
            self.maxBodyBytes = maxBodyBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.maxHeaderCount = maxHeaderCount
            self.maxConnections = maxConnections
            self.maxBatchOperations = maxBatchOperations
            self.readTimeout = readTimeout
            self.writeTimeout = writeTimeout
            self.slowHoldLimit = slowHoldLimit
            self.latency = latency
            self.observer = observer
        }
    }

    public let configuration: Configuration
    private let core: ServerCore

    /// Starts the server: it is listening when this returns.
    /// - Throws: ``SocketError`` when the port cannot be bound; storage errors for an LMDB
    ///   directory that cannot be opened (or is open already in this process), or an external
    ///   storage that cannot be opened (a PostgreSQL database that cannot be reached or migrated).
    public init(_ configuration: Configuration = Configuration()) throws {
        let storage: any ServerStorage = switch configuration.storage {
        case .memory:
            MemoryServerStorage(policy: configuration.claimPolicy, clock: configuration.clock)
        case .lmdb(let directory):
            try LMDBServerStorage(directory: directory, policy: configuration.claimPolicy, clock: configuration.clock)
        case .external(let external):
            try external.opener.open(policy: configuration.claimPolicy, clock: configuration.clock)
        }
        let routes = Routes(storage: storage, faults: FaultQueue(), holds: Holds(), slowHoldLimit: configuration.slowHoldLimit,
                            latency: configuration.latency, observer: configuration.observer,
                            maxBatchOperations: configuration.maxBatchOperations, feedLimits: configuration.feedLimits,
                            claimRetentionSeconds: configuration.claimPolicy.retention,
                            uploads: configuration.uploads.map(Uploads.init))
        do {
            core = try ServerCore(configuration: configuration, routes: routes)
        } catch {
            storage.close()
            throw error
        }
        self.configuration = configuration
        core.start()
    }

    deinit {
        core.stop()
    }

    /// The port the server listens on, on 127.0.0.1.
    public var port: UInt16 { core.port }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL {
        // A literal address and a number always make a URL.
        URL(string: "http://127.0.0.1:\(port)")!
    }

    /// Stops accepting, closes every connection, releases held requests, and returns once every
    /// thread of the server has ended. Calling it again does nothing.
    public func stop() {
        core.stop()
    }

    /// Answers one request in this process, without a socket, exactly as a connection is
    /// answered: the same routes, faults, claims and storage. `nil` where a connection would be
    /// closed without an answer (`drop_after_commit`). For benchmarks and tests that measure the
    /// server's own work rather than the network's.
    public func respond(to request: HTTPRequest) -> HTTPResponse? {
        let reply = core.routes.reply(to: request)
        for key in reply.releasesKeys { core.routes.holds.releaseCopies(key: key) }
        return reply.response
    }

    // MARK: Control, from Swift

    /// Queues faults after those already queued. Each is consumed by the first business request
    /// it matches.
    public func addFaults(_ faults: [Fault]) {
        _ = core.routes.faults.append(faults)
    }

    /// The faults not yet consumed, in order.
    public var pendingFaults: [Fault] {
        core.routes.faults.pending
    }

    /// Forgets faults, records, counts and claims, and releases held requests. On PostgreSQL the
    /// records and claims are those of every server on the database.
    public func reset() throws {
        core.routes.faults.removeAll()
        core.routes.holds.release()
        try core.routes.storage.reset()
    }

    /// Releases the requests the `slow` fault holds for `key`, or all of them when `nil`.
    /// - Returns: how many were released.
    @discardableResult
    public func release(key: String? = nil) -> Int {
        core.routes.holds.release(key: key)
    }

    /// The `Idempotency-Key`s of the requests held by the `slow` fault now.
    public var heldKeys: [String] {
        core.routes.holds.heldKeys
    }

    /// Returns once a request with `key` is held by the `slow` fault: its claim is taken and it
    /// waits to finalize. Returns at once if the server has stopped.
    public func waitUntilHeld(key: String) async {
        await core.routes.holds.waitUntilHeld(key: key)
    }

    /// How many times the write was applied, per `Idempotency-Key`, keys compared byte for byte.
    public func appliedCounts() throws -> AppliedCounts {
        try core.routes.storage.appliedCounts()
    }

    /// The records created, sorted by type, business and id; a deleted one is there as its
    /// tombstone (``StoredRecord/isDeleted``).
    public func records() throws -> [StoredRecord] {
        try core.routes.storage.records()
    }

    /// Changes a record as another device would, between a client's attempts: `patch` merged
    /// into it (RFC 7396; by default nothing, so only its revision moves) as its next revision,
    /// committed at once, outside any claim. A client's update whose `If-Match` names the old
    /// revision is answered 412 from then on.
    ///
    /// ```swift
    /// let moved = try server.changeRecord(type: "product", id: "p-1", patch: Data(#"{"price":14}"#.utf8))
    /// moved.revision   // 3, when it was at 2
    /// ```
    /// - Returns: the record as changed.
    /// - Throws: ``RecordChangeError`` when there is no such record (or it was deleted) or the
    ///   patch is not a JSON object that keeps the id and leaves the revision to the server; the
    ///   storage's errors.
    @discardableResult
    public func changeRecord(type: String, id: String, businessID: String = "default", patch: Data = Data("{}".utf8)) throws -> StoredRecord {
        if let problem = BusinessHeaders.businessIDProblem(businessID) {
            throw RecordChangeError(message: "the business id \(problem)")
        }
        do {
            guard BusinessEndpoint.all.contains(where: { $0.type.hasSameBytes(as: type) }), RecordBody.idProblem(id) == nil,
                let changed = try core.routes.changeRecord(type: type, businessID: businessID, id: id, patch: patch)
            else {
                throw RecordChangeError(message: "no \(type) \(id) in business \(businessID) to change")
            }
            return changed
        } catch let invalid as RecordBody.Invalid {
            throw RecordChangeError(message: invalid.message)
        }
    }

    /// The writes parked by the `pending_approval` fault, in order.
    public func approvals() throws -> [PendingApproval] {
        try core.routes.storage.approvals()
    }

    /// How many connections are open now.
    public var openConnectionCount: Int {
        core.openConnectionCount
    }

    /// Returns once the server serves no connection: a test waits on the event, not on time.
    public func untilNoConnection() async {
        await core.untilNoConnection()
    }
}

/// Why ``TestServer/changeRecord(type:id:businessID:patch:)`` changed nothing.
public struct RecordChangeError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
