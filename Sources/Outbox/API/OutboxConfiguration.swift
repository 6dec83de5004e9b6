public import Foundation
public import OutboxCore
public import OutboxCrypto

/// How an ``Outbox`` behaves. Everything but ``account`` has a default.
///
/// ```swift
/// let configuration = OutboxConfiguration(
///     account: "member-42",
///     session: mySession,
///     operationPolicies: [
///         "product.create": .idempotent,
///         "product.update": .idempotent.coalescing().onConflict(.askMember),
///         "dispatch.cancel": .onlineOnly,
///     ]
/// )
/// ```
///
/// The engine queues only what someone decided is safe: a type listed in neither
/// ``operationPolicies`` nor ``defaultPolicy`` is refused by `enqueue` and `save`, and
/// `canQueue` answers `false` for it.
public struct OutboxConfiguration: Sendable {
    /// Whose journal this is. A journal directory belongs to one account; opening it for
    /// another throws ``OutboxError/wrongAccount(journal:configured:)``.
    public var account: String
    /// When failed attempts are retried.
    public var retryPolicy: OperationTypePolicy.RetryPolicy
    /// The only source of time.
    public var clock: any OutboxClock
    /// Who is signed in, asked before every send.
    public var session: any OutboxSession
    /// How many lanes are sent at once. Writes to one entity are always sent in order.
    public var maxConcurrentLanes: Int
    /// Every operation type the app queues, with its policy: how a replay is proved, what a
    /// revision conflict does, whether it coalesces. Types are compared byte for byte. A type
    /// listed nowhere is refused at enqueue unless ``defaultPolicy`` is set.
    public var operationPolicies: [String: OperationTypePolicy] {
        get { exactOperationPolicies.byString { first, _ in first } }
        set { exactOperationPolicies = newValue.byExactBytes }
    }
    /// ``operationPolicies`` by the types' exact bytes: what the engine looks a type up in.
    package var exactOperationPolicies: [ExactString: OperationTypePolicy]
    /// The policy of every type ``operationPolicies`` does not list; `nil` (the default): such a
    /// type is refused by `enqueue` and `save` (fail-closed). Rows journaled before, of a type
    /// no longer listed, keep sending as ``OperationTypePolicy/idempotent``: an upgrade never
    /// strands them.
    public var defaultPolicy: OperationTypePolicy?
    /// How durable a commit is before `enqueue` returns.
    public var durability: OutboxConfiguration.Durability
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
    public var compaction: OutboxConfiguration.CompactionPolicy?
    /// Where the engine logs: by default nowhere. Give one whose handler forwards to the app's
    /// logging (swift-log, `os.Logger`; see `Docs/observability.md`). The engine never sets up
    /// anything global, and never logs a payload, an entity label, a summary or a credential.
    public var logger: OutboxLogger
    /// Whether a pass sends its due writes several to a request, to a server that answers the
    /// batch protocol (`Docs/wire-batches.md`); `nil` (the default): one request per
    /// write.
    public var batching: OutboxConfiguration.Batching?
    /// The member's record types the app declares: each one's schema version (and the adapter
    /// that reads values of older versions), and whether it is local-only (drafts, preferences:
    /// written with ``Outbox/writeLocal(_:)``, never sent). A type listed nowhere is a synced
    /// type of schema version 1. Types are compared byte for byte.
    public var recordTypes: [String: OutboxConfiguration.RecordTypePolicy] {
        get { exactRecordTypes.byString { first, _ in first } }
        set { exactRecordTypes = newValue.byExactBytes }
    }
    /// ``recordTypes`` by the types' exact bytes: what the engine looks a type up in.
    package var exactRecordTypes: [ExactString: OutboxConfiguration.RecordTypePolicy] = [:]
    /// How long a refused or discarded write's values stay readable (its history, the record's
    /// "rolled back" notice) before compaction may take them, measured by the device's uptime:
    /// 30 days by default.
    public var rolledBackRetentionSeconds: TimeInterval = 30 * 86_400
    /// The least time a request needs (a write's attempt, a batch, a feed's page), in seconds:
    /// a budgeted drain (``Outbox/drain(until:)``) starts none when less than this is left.
    /// Set it to the transport's timeout (``URLSessionTransport/timeoutSeconds``, 30 s by
    /// default), so a request started always ends before the system takes its time back:
    /// 30 seconds by default.
    public var attemptBudgetSeconds: TimeInterval = 30
    /// The service objective's interval: a write counts as acknowledged in time when the server
    /// took it (synced or pending approval) within this many seconds of connected age (time
    /// waited while a route to the server was seen). One of
    /// ``OutboxMetrics.AcknowledgementObjective/boundsSeconds``: 60 seconds by default.
    public var acknowledgementObjectiveSeconds: TimeInterval = OutboxMetrics.AcknowledgementObjective.defaultIntervalSeconds
    /// How long the server keeps an idempotency key's claim (its answer to a replay), in
    /// seconds: 30 days by default, as the reference server keeps them. A write whose first
    /// attempt is older than this less ``claimRetentionMarginSeconds`` is not sent again under
    /// its key, which the server may have forgotten: it is blocked (code
    /// `claim_may_be_forgotten`) for a person to check. A server that announces a shorter
    /// retention (`Outbox-Claim-Retention`) is judged by that, from its answer until the engine
    /// closes: set this no longer than the server keeps claims, since a launch judges by it until
    /// the first answer.
    public var claimRetentionSeconds: TimeInterval = 30 * 86_400
    /// The margin kept below the claim retention: 1 day by default.
    public var claimRetentionMarginSeconds: TimeInterval = 86_400
    /// How long a decision the engine made for the member (the server's version kept, a write
    /// sent again over a change made elsewhere, a write given up) stays on the Sync tab's notices:
    /// 7 days by default. The ledger keeps it for good.
    public var decisionNoticeSeconds: TimeInterval = 7 * 86_400
    /// What the Sync tab calls one and several writes of a category ("Products": "product",
    /// "products"), for sentences such as "1 product is waiting for approval"; a category listed
    /// nowhere is counted in changes ("1 change in Products is waiting for approval").
    public var categoryNouns: [String: OutboxConfiguration.CategoryNoun] = [:]
    /// The installation the app runs on: an identifier it keeps outside backups (in the keychain
    /// with a this-device-only accessibility, or a file excluded from backups), so a journal
    /// restored from a backup onto another device is told apart. Recorded at each open; the
    /// first one named is the one the journal's writes belong to. Opened on another, its
    /// pending writes wait (``OperationSnapshot.WaitingOn/otherInstallation(madeOn:)``) until the app revalidates
    /// them with ``Outbox/adoptInstallation()``. `nil` (the default): no check.
    public var installation: String?
    /// How the engine pulls the server's change feeds; `nil` (the default): it never pulls, and
    /// ``Outbox/pull()`` throws ``OutboxError/invalidConfiguration(field:problem:)``.
    public var pull: PullConfiguration?
    /// How files a write carries are kept and uploaded (``Attachment``).
    public var attachments = OutboxConfiguration.AttachmentSettings()
    /// Where operation ids come from: random UUIDs unless a deterministic simulation supplies
    /// its own.
    package var operationIDSource: (@Sendable () -> OperationID)?

    public init(
        account: String,
        retryPolicy: OperationTypePolicy.RetryPolicy = .standard,
        clock: any OutboxClock = SystemClock(),
        session: (any OutboxSession)? = nil,
        maxConcurrentLanes: Int = 1,
        operationPolicies: [String: OperationTypePolicy] = [:],
        defaultPolicy: OperationTypePolicy? = nil,
        durability: OutboxConfiguration.Durability = .full,
        maxPayloadBytes: Int = OutboxRequest.defaultMaxPayloadBytes,
        maxJournalBytes: Int = 1 << 30,
        initialJournalBytes: Int = 4 << 20,
        appVersion: String? = nil,
        encryptionKey: SealingKey? = nil,
        compaction: OutboxConfiguration.CompactionPolicy? = nil,
        logger: OutboxLogger = OutboxLogger(),
        batching: OutboxConfiguration.Batching? = nil
    ) {
        self.account = account
        self.retryPolicy = retryPolicy
        self.clock = clock
        self.session = session ?? FixedSession(account: account)
        self.maxConcurrentLanes = maxConcurrentLanes
        self.exactOperationPolicies = operationPolicies.byExactBytes
        self.defaultPolicy = defaultPolicy
        self.durability = durability
        self.maxPayloadBytes = maxPayloadBytes
        self.maxJournalBytes = maxJournalBytes
        self.initialJournalBytes = initialJournalBytes
        self.appVersion = appVersion
        self.encryptionKey = encryptionKey
        self.compaction = compaction
        self.logger = logger
        self.batching = batching
    }

    /// The policy of an operation type: its entry in ``operationPolicies``, else
    /// ``defaultPolicy``; `nil` when neither: a write of the type is refused at enqueue.
    public func policy(for operationType: String) -> OperationTypePolicy? {
        exactOperationPolicies[ExactString(operationType)] ?? defaultPolicy
    }

    /// The policy a journaled row of `operationType` is sent under: a type listed nowhere (a row
    /// queued before its type was dropped, or before unlisted types were refused) keeps sending
    /// as ``OperationTypePolicy/idempotent``, as it was queued.
    func sendingPolicy(for operationType: String) -> OperationTypePolicy {
        policy(for: operationType) ?? .idempotent
    }

    /// What the app declared of a record type; a type listed nowhere is synced, version 1.
    public func recordPolicy(for type: String) -> OutboxConfiguration.RecordTypePolicy {
        exactRecordTypes[ExactString(type)] ?? OutboxConfiguration.RecordTypePolicy()
    }

    /// The conflict rule a journaled row of an operation type is sent under.
    public func conflictRule(for operationType: String) -> OperationTypePolicy.ConflictRule {
        sendingPolicy(for: operationType).conflictRule
    }
}

extension OutboxConfiguration {
    /// How a pass sends its due writes in batches: each batch one request to `endpoint`, holding at
    /// most `maxOperations` writes and `maxBytes` of payload. Each write in it is still claimed and
    /// applied on its own by the server, recorded with its own attempt and outcome, and sent in its
    /// lane's order (one write per lane per batch); a write that depends on another is never in the
    /// batch of a dependency not yet synced.
    public struct Batching: Sendable, Equatable {
        /// The batch endpoint's path, resolved by the transport against its base URL.
        public var endpoint: String
        /// The most writes in one batch.
        public var maxOperations: Int
        /// The most payload bytes in one batch (a write larger than this goes alone).
        public var maxBytes: Int

        /// The most writes a batch may be configured to hold.
        public static let maximumOperations = 1_000

        public init(endpoint: String = "/sync/batch", maxOperations: Int = 50, maxBytes: Int = 1 << 20) {
            self.endpoint = endpoint
            self.maxOperations = maxOperations
            self.maxBytes = maxBytes
        }
    }
}

extension OutboxConfiguration {
    /// How durable a commit is when `enqueue` returns.
    public enum Durability: String, Sendable, Codable {
        /// Flushed to disk on every commit: survives power loss. The default.
        case full
        /// Written to the operating system, not flushed: survives the app being killed, not the
        /// device losing power. Commits are much cheaper.
        case processCrash
    }
}

extension OutboxConfiguration {
    /// What the app declares of one type of the member's records.
    ///
    /// ```swift
    /// recordTypes: [
    ///     "product": OutboxConfiguration.RecordTypePolicy(schemaVersion: 2, upgrade: { value, version in try ProductV1.upgraded(value) }),
    ///     "draft": .localOnly,
    /// ]
    /// ```
    public struct RecordTypePolicy: Sendable {
        /// The version of the type's values this app writes and reads (1 or more). Each stored value
        /// keeps the version it was written with.
        public var schemaVersion: Int
        /// Local-only: written by ``Outbox/writeLocal(_:)``, durable, never sent; a write that sends
        /// changes of it is refused.
        public var isLocalOnly: Bool
        /// Reads a stored value of an older version as this version's: applied whenever a record of
        /// an older version is read (its stored bytes do not change). `nil`: values of an older
        /// version are read as they are.
        public var upgrade: (@Sendable (_ value: Data, _ fromVersion: Int) throws -> Data)?

        public init(schemaVersion: Int = 1, isLocalOnly: Bool = false, upgrade: (@Sendable (_ value: Data, _ fromVersion: Int) throws -> Data)? = nil) {
            self.schemaVersion = schemaVersion
            self.isLocalOnly = isLocalOnly
            self.upgrade = upgrade
        }

        /// A local-only type of version 1.
        public static let localOnly = OutboxConfiguration.RecordTypePolicy(isLocalOnly: true)
    }
}

extension OutboxConfiguration {
    /// How the member's language names one and several writes of a category.
    public struct CategoryNoun: Sendable, Equatable {
        /// "product".
        public var one: String
        /// "products".
        public var other: String

        public init(one: String, other: String) {
            self.one = one
            self.other = other
        }

        /// "1 product", "3 products".
        public func counted(_ count: Int) -> String { count == 1 ? "1 \(one)" : "\(count) \(other)" }

        /// What a category without a noun of its own is counted in.
        public static let change = OutboxConfiguration.CategoryNoun(one: "change", other: "changes")
    }
}
