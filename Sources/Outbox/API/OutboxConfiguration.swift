import Foundation
public import OutboxCore
public import OutboxCrypto

/// How an ``Outbox`` behaves. Everything but ``account`` has a default.
///
/// ```swift
/// let configuration = OutboxConfiguration(
///     account: "member-42",
///     session: mySession,
///     operationPolicies: ["dispatch.cancel": .onlineOnly]
/// )
/// ```
public struct OutboxConfiguration: Sendable {
    /// Whose journal this is. A journal directory belongs to one account; opening it for
    /// another throws ``OutboxError/wrongAccount(journal:configured:)``.
    public var account: String
    /// When failed attempts are retried.
    public var retryPolicy: RetryPolicy
    /// The only source of time.
    public var clock: any OutboxClock
    /// Who is signed in, asked before every send.
    public var session: any OutboxSession
    /// How many lanes are sent at once. Writes to one entity are always sent in order.
    public var maxConcurrentLanes: Int
    /// The queueing policy of each operation type; unlisted types are ``OperationPolicy/idempotent``.
    public var operationPolicies: [String: OperationPolicy]
    /// How durable a commit is before `enqueue` returns.
    public var durability: Durability
    /// The largest payload accepted; larger ones are refused at enqueue.
    public var maxPayloadBytes: Int
    /// The journal's storage budget: the most live data it may hold. Past 80 % the engine
    /// compacts settled operations; when nothing more can be freed, an enqueue fails with
    /// ``OutboxError/storageFull(limitBytes:)`` before anything says "saved", while what is
    /// already queued still drains from a reserve. The file itself may take up to a quarter more,
    /// for the free pages LMDB reuses.
    public var maxJournalBytes: Int
    /// The journal's size when created (at least 64 KiB; above ``maxJournalBytes``, that); it
    /// doubles as needed, up to ``maxJournalBytes``.
    public var initialJournalBytes: Int
    /// The embedding app's version, recorded each time the journal is opened.
    public var appVersion: String?
    /// The journal's key for encryption at rest (32 bytes, from the app's keychain), or `nil` for
    /// a plaintext journal. Payloads, entity labels and summaries are sealed with it; statuses,
    /// timelines, the ledger and metrics stay readable without it. Given for a plaintext journal,
    /// the journal is sealed at open; a journal sealed with another key is refused.
    public var encryptionKey: SealingKey?
    /// When the engine compacts settled operations on its own; `nil` (the default): only when
    /// `compact(before:)` is called, or when the journal nears ``maxJournalBytes``.
    public var compaction: CompactionPolicy?
    /// Where the engine logs: by default nowhere. Give one whose handler forwards to the app's
    /// logging (swift-log, `os.Logger`; see `Docs/observability.md`). The engine never sets up
    /// anything global, and never logs a payload, an entity label, a summary or a credential.
    public var logger: OutboxLogger
    /// Where operation ids come from: random UUIDs unless a deterministic simulation supplies
    /// its own.
    package var operationIDSource: (@Sendable () -> OperationID)?

    public init(
        account: String,
        retryPolicy: RetryPolicy = .standard,
        clock: any OutboxClock = SystemClock(),
        session: (any OutboxSession)? = nil,
        maxConcurrentLanes: Int = 1,
        operationPolicies: [String: OperationPolicy] = [:],
        durability: Durability = .full,
        maxPayloadBytes: Int = OutboxRequest.defaultMaxPayloadBytes,
        maxJournalBytes: Int = 1 << 30,
        initialJournalBytes: Int = 4 << 20,
        appVersion: String? = nil,
        encryptionKey: SealingKey? = nil,
        compaction: CompactionPolicy? = nil,
        logger: OutboxLogger = OutboxLogger()
    ) {
        self.account = account
        self.retryPolicy = retryPolicy
        self.clock = clock
        self.session = session ?? FixedSession(account: account)
        self.maxConcurrentLanes = maxConcurrentLanes
        self.operationPolicies = operationPolicies
        self.durability = durability
        self.maxPayloadBytes = maxPayloadBytes
        self.maxJournalBytes = maxJournalBytes
        self.initialJournalBytes = initialJournalBytes
        self.appVersion = appVersion
        self.encryptionKey = encryptionKey
        self.compaction = compaction
        self.logger = logger
    }

    /// The policy of an operation type.
    public func policy(for operationType: String) -> OperationPolicy {
        operationPolicies[operationType] ?? .idempotent
    }
}

/// How durable a commit is when `enqueue` returns.
public enum Durability: String, Sendable, Codable {
    /// Flushed to disk on every commit: survives power loss. The default.
    case full
    /// Written to the operating system, not flushed: survives the app being killed, not the
    /// device losing power. Commits are much cheaper.
    case processCrash
}
