public import Foundation
import Synchronization

/// At most ``size`` connections to one database, opened when first needed and lent to one
/// borrower at a time.
///
/// A connection that broke, or that comes back inside a transaction, is closed rather than lent
/// again. A borrower waits up to ``checkoutTimeout`` for a connection to come free, then gets
/// ``PostgresError/Kind/poolExhausted``.
///
/// ```swift
/// let pool = PostgresConnectionPool(settings: .environment, size: 8)
/// let count = try pool.transaction { connection in
///     try connection.execute("SELECT count(*) FROM products").first?.int64(0)
/// }
/// ```
public final class PostgresConnectionPool: Sendable {
    public let settings: PostgresConnectionSettings
    /// The most connections open at once.
    public let size: Int
    /// The longest a borrower waits for a free connection, in seconds.
    public let checkoutTimeout: TimeInterval

    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var isClosed = false
    }

    private let state = Mutex(State())
    /// One permit per connection the pool may have lent out at once.
    private let permits: DispatchSemaphore

    /// - Parameters:
    ///   - size: the most connections open at once, at least 1.
    ///   - checkoutTimeout: how long a borrower waits for a free connection, in seconds.
    public init(settings: PostgresConnectionSettings, size: Int, checkoutTimeout: TimeInterval = 30) {
        precondition(size > 0, "a pool needs at least one connection")
        precondition(checkoutTimeout > 0, "checkoutTimeout must be positive")
        self.settings = settings
        self.size = size
        self.checkoutTimeout = checkoutTimeout
        permits = DispatchSemaphore(value: size)
    }

    deinit {
        close()
    }

    /// How many connections are open now, lent or idle.
    public var openConnectionCount: Int {
        state.withLock { $0.open }
    }

    /// Lends a connection to `body`, opening one if none is idle and the pool is not full.
    /// - Throws: ``PostgresError/Kind/poolExhausted`` after waiting ``checkoutTimeout``; connection
    ///   errors; whatever `body` throws.
    public func withConnection<R>(_ body: (PostgresConnection) throws -> R) throws -> R {
        try withPermit {
            let connection = try checkOut()
            defer { checkIn(connection) }
            return try body(connection)
        }
    }

    private func withPermit<R>(_ body: () throws -> R) throws -> R {
        guard permits.wait(timeout: .now() + checkoutTimeout) == .success else {
            throw PostgresError(.poolExhausted, message: "no connection of the \(size) in the pool came free within \(checkoutTimeout) s")
        }
        defer { permits.signal() }
        return try body()
    }

    /// Runs `body` in one transaction at READ COMMITTED: returning commits, throwing rolls back.
    ///
    /// A commit the server turns into a rollback (a statement in the transaction failed and was
    /// caught) throws. If the connection breaks, the server rolls the transaction back: nothing
    /// of it commits. If it breaks during `COMMIT` itself, the outcome is unknown to the caller;
    /// the claims' token checks keep a retry safe either way.
    public func transaction<R>(_ body: (PostgresConnection) throws -> R) throws -> R {
        try withPermit {
            let connection = try checkOutBegun()
            defer { checkIn(connection) }
            let result: R
            do {
                result = try body(connection)
            } catch {
                if !connection.isBroken { _ = try? connection.execute("ROLLBACK") }
                throw error
            }
            let commit = try connection.execute("COMMIT")
            guard commit.commandTag == "COMMIT" else {
                throw PostgresError(.server, message: "the transaction was rolled back at its commit (\(commit.commandTag)): a statement in it failed")
            }
            return result
        }
    }

    /// Closes the idle connections; lent ones close when they come back. Borrowing afterwards throws.
    public func close() {
        let idle = state.withLock { state in
            state.isClosed = true
            defer {
                state.open -= state.idle.count
                state.idle = []
            }
            return state.idle
        }
        for connection in idle { connection.close() }
    }

    /// A connection with a transaction begun. An idle connection that went stale (the server
    /// restarted, a proxy cut it) is replaced: nothing was sent in its transaction yet.
    private func checkOutBegun() throws -> PostgresConnection {
        var attempts = 0
        while true {
            let connection = try checkOut()
            do {
                try connection.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
                return connection
            } catch let error as PostgresError where error.kind == .connection && attempts < size {
                attempts += 1
                checkIn(connection)   // broken: closed, not kept
            } catch {
                checkIn(connection)
                throw error
            }
        }
    }

    private func checkOut() throws -> PostgresConnection {
        let reused: PostgresConnection? = try state.withLock { state in
            guard !state.isClosed else { throw PostgresError(.connection, message: "the connection pool was closed") }
            if let connection = state.idle.popLast() { return connection }
            state.open += 1
            return nil
        }
        if let reused { return reused }
        do {
            return try PostgresConnection(settings)
        } catch {
            state.withLock { $0.open -= 1 }
            throw error
        }
    }

    private func checkIn(_ connection: PostgresConnection) {
        let keep = connection.isIdle && state.withLock { state in
            guard !state.isClosed else { return false }
            state.idle.append(connection)
            return true
        }
        if !keep {
            connection.close()
            state.withLock { $0.open -= 1 }
        }
    }
}
