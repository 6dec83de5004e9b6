public import Foundation

/// One write, as the app hands it to the outbox and as it will be sent, byte for byte.
///
/// ```swift
/// let request = OutboxRequest(
///     businessID: "pharmacy-7",
///     operationType: "product.create",
///     endpoint: "/products",
///     payload: Data(#"{"id":"6F1C...","name":"Antiseptic 500 ml"}"#.utf8),
///     category: "Products",
///     entityLabel: "Antiseptic 500 ml",
///     summary: "New product"
/// )
/// ```
///
/// Credentials never belong here: the transport adds authorization when it sends.
public struct OutboxRequest: Sendable, Equatable {
    /// The business (tenant) the write belongs to; part of the server's idempotency scope.
    public var businessID: String
    /// What the write does, e.g. `"product.create"`; its queueing policy is looked up by it.
    public var operationType: String
    /// `POST`, `PUT`, `PATCH` or `DELETE`.
    public var method: String
    /// The path the request is sent to, e.g. `"/products"`.
    public var endpoint: String
    /// The body, exactly as it will be sent: JSON.
    public var payload: Data
    /// The ordering lane: writes to one entity are sent one after the other, in the order they
    /// were queued. `nil` gives the write a lane of its own.
    public var entityID: String?
    /// The Sync tab card the write appears under, e.g. `"Products"`.
    public var category: String
    /// What the member calls the record, e.g. `"Antiseptic 500 ml"`.
    public var entityLabel: String
    /// One line saying what the write does, e.g. `"New product"`.
    public var summary: String
    /// The schema version of ``payload``, sent with it so a server can accept an older shape.
    public var payloadVersion: Int
    /// The app's stable id for this one intent, made when the member opens the form, before
    /// confirming: enqueueing or saving it again (a double tap, a retry after a crash) is the same
    /// operation, and writes nothing new. `nil`: the engine makes one. It becomes the operation's
    /// id and its idempotency key. After a save was rejected (withdrawn) or a row was superseded,
    /// the app makes a new one: that id is spent.
    public var operationID: OperationID?
    /// The server revision the edit started from, sent as `If-Match: "<revision>"`: a change made
    /// elsewhere meanwhile is answered 412 and the row becomes `conflicted` instead of silently
    /// overwriting it. `nil` for writes that do not edit an existing record (creates).
    public var baseRevision: String?
    /// A record the write changes whose server revision, as the engine knows it when the write is
    /// sent, is sent as `If-Match` (and recorded with the attempt): an edit behind another edit of
    /// the same record is then sent against the revision the earlier one's success returned.
    /// Instead of ``baseRevision``; `nil`: none.
    public var revisionFrom: RecordKey?
    /// Operations this write needs applied first (a stock movement naming a product created
    /// offline): it is sent only once each of them is synced.
    public var dependsOn: [OperationID]

    public init(
        businessID: String,
        operationType: String,
        method: String = "POST",
        endpoint: String,
        payload: Data,
        entityID: String? = nil,
        category: String,
        entityLabel: String,
        summary: String,
        payloadVersion: Int = 1,
        operationID: OperationID? = nil,
        baseRevision: String? = nil,
        revisionFrom: RecordKey? = nil,
        dependsOn: [OperationID] = []
    ) {
        self.businessID = businessID
        self.operationType = operationType
        self.method = method
        self.endpoint = endpoint
        self.payload = payload
        self.entityID = entityID
        self.category = category
        self.entityLabel = entityLabel
        self.summary = summary
        self.payloadVersion = payloadVersion
        self.operationID = operationID
        self.baseRevision = baseRevision
        self.revisionFrom = revisionFrom
        self.dependsOn = dependsOn
    }
}
