/// Why a PostgreSQL call failed. Messages carry the server's words and the SQLSTATE, never the
/// statement's parameters (they may hold request bodies).
public struct PostgresError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where the failure came from.
    public enum Kind: Hashable, Sendable {
        /// The connection could not be made, or broke: the server's transaction (if any) is gone.
        case connection
        /// The server refused a statement; ``PostgresError/sqlState`` says why.
        case server
        /// No pooled connection came free within the pool's checkout timeout.
        case poolExhausted
        /// A value came back in a shape this library does not read (a type or a length).
        case decoding
        /// The settings or the schema cannot be used as they are: the message says what to fix.
        case configuration
        /// A transaction was used after its closure ended.
        case transactionEnded
    }

    public var kind: Kind
    /// The five-character SQLSTATE of a ``Kind/server`` error, e.g. `23505`.
    public var sqlState: String?
    public var message: String

    public init(_ kind: Kind, sqlState: String? = nil, message: String) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
    }

    public var description: String {
        let state = sqlState.map { " [\($0)]" } ?? ""
        return "PostgreSQL \(kind)\(state): \(message)"
    }

    /// Whether the server aborted the transaction so that running it again may succeed: a
    /// serialization failure or a deadlock. Nothing of it committed.
    public var isTransient: Bool {
        kind == .server && (sqlState == SQLState.serializationFailure || sqlState == SQLState.deadlockDetected)
    }

    /// The SQLSTATEs this library acts on.
    public enum SQLState {
        public static let uniqueViolation = "23505"
        public static let serializationFailure = "40001"
        public static let deadlockDetected = "40P01"
        public static let lockNotAvailable = "55P03"
        public static let adminShutdown = "57P01"
    }
}
