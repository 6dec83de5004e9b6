public import Outbox
public import Foundation
public import OutboxCore

/// Which events to read: a seq range, kinds, operation types, one operation, a time range; a
/// page at a time.
///
/// ```swift
/// var query = EventQuery(kinds: [.attemptFinished], operationTypes: ["product.create"], limit: 200)
/// repeat {
///     let page = try reader.events(matching: query)
///     export(page.events)
///     query.after = page.nextAfter
/// } while query.after != nil
/// ```
///
/// Every filter left `nil` matches everything. Moments are the device clock's, for display: a
/// time range selects by them but the order is always the journal's (`seq`).
public struct EventQuery: Sendable, Equatable {
    /// Which end of the range a page starts from.
    public enum Order: String, Sendable, Codable {
        /// Ascending seq, from ``EventQuery/seqFrom`` on.
        case oldestFirst
        /// Descending seq, from ``EventQuery/seqThrough`` (or the last event) back: the journal's tail.
        case newestFirst
    }

    /// The first seq of the range, included. The range's bounds are named like the moments'
    /// (``recordedFrom``), not like a cursor: they stay put while ``after`` pages through them.
    public var seqFrom: JournalSequence?
    /// The last seq of the range, included ("through", as `--to` is: unlike ``recordedBefore``).
    public var seqThrough: JournalSequence?
    /// Only events after this seq in the query's order (older than it when newest first): the
    /// previous page's ``EventPage/nextAfter``.
    public var after: JournalSequence?
    /// Only events of these kinds.
    public var kinds: Set<JournalEventKind>?
    /// Only events of operations of these types, matched without regard to case (engine events
    /// have none, so they are left out).
    public var operationTypes: Set<String>?
    /// Only the events of this operation.
    public var operationID: OperationID?
    /// Only events recorded at or after this moment.
    public var recordedFrom: Date?
    /// Only events recorded before this moment.
    public var recordedBefore: Date?
    public var order: Order
    /// The most events a page holds (1 or more).
    public var limit: Int

    public init(
        seqFrom: JournalSequence? = nil,
        seqThrough: JournalSequence? = nil,
        after: JournalSequence? = nil,
        kinds: Set<JournalEventKind>? = nil,
        operationTypes: Set<String>? = nil,
        operationID: OperationID? = nil,
        recordedFrom: Date? = nil,
        recordedBefore: Date? = nil,
        order: Order = .oldestFirst,
        limit: Int = 1000
    ) {
        self.seqFrom = seqFrom
        self.seqThrough = seqThrough
        self.after = after
        self.kinds = kinds
        self.operationTypes = operationTypes
        self.operationID = operationID
        self.recordedFrom = recordedFrom
        self.recordedBefore = recordedBefore
        self.order = order
        self.limit = limit
    }

    /// Whether `event` passes every filter but the seq range.
    /// - Parameter operationType: the type of the event's operation, when known.
    func accepts(_ event: JournalEvent, operationType: String?) -> Bool {
        if let kinds, !kinds.contains(event.kind) { return false }
        if let operationID, event.operationID != operationID { return false }
        if let operationTypes {
            guard let operationType,
                operationTypes.contains(where: { $0.caseInsensitiveCompare(operationType) == .orderedSame })
            else { return false }
        }
        if let recordedFrom, event.recordedAt < recordedFrom { return false }
        if let recordedBefore, event.recordedAt >= recordedBefore { return false }
        return true
    }

    /// Whether a damaged record in the range may be one this query asked for: only its claimed
    /// operation can be judged.
    func mayInclude(_ damaged: Outbox.DamagedRecord) -> Bool {
        guard let operationID else { return true }
        return damaged.claimedOperationID == nil || damaged.claimedOperationID == operationID
    }
}

/// One page of events.
public struct EventPage: Sendable, Equatable {
    /// The events that passed the filters, in the query's order.
    package var events: [JournalEvent]
    /// The same events as the engine shows them (``HistoryEntry``), in the same order.
    public var entries: [HistoryEntry] { events.map { HistoryEntry($0) } }
    /// Records in the range that could not be read: the page carries on past each one.
    public var damaged: [Outbox.DamagedRecord]
    /// The seq to ask `after:` for the next page (the last one this page looked at); `nil` when
    /// the range holds no more. Filters are applied as the page is read, so a next page may
    /// come back empty.
    public var nextAfter: JournalSequence?
    /// The last seq the page looked at, matching or not: a follower of a live journal asks
    /// `after:` it, and reads what was committed since.
    public var lastExamined: JournalSequence?
    /// The first record the scan met and left for the next page, when it cut this one: the
    /// `--from` (or `--to`) journal-inspect prints, across a compaction's gap too.
    package var nextStart: JournalSequence?

    package init(events: [JournalEvent] = [], damaged: [Outbox.DamagedRecord] = [], nextAfter: JournalSequence? = nil,
                lastExamined: JournalSequence? = nil) {
        self.events = events
        self.damaged = damaged
        self.nextAfter = nextAfter
        self.lastExamined = lastExamined
    }
}


/// Which operations to list, newest first, a page at a time.
///
/// ```swift
/// var query = OperationQuery(statuses: [.queued, .blocked], limit: 20)
/// repeat {
///     let page = try reader.operations(matching: query)
///     show(page.operations)
///     query.after = page.nextAfter
/// } while query.after != nil
/// ```
public struct OperationQuery: Sendable, Equatable {
    /// Only operations with one of these statuses.
    public var statuses: Set<OutboxStatus>?
    /// Only operations of these Sync tab categories, matched without regard to case.
    public var categories: Set<String>?
    /// Only operations of these types, matched without regard to case.
    public var operationTypes: Set<String>?
    /// Only operations enqueued at or after this moment.
    public var createdFrom: Date?
    /// Only operations enqueued before this moment.
    public var createdBefore: Date?
    /// Only operations after the one enqueued at this seq in the list's order, so older ones:
    /// the previous page's ``OperationPage/nextAfter``.
    public var after: JournalSequence?
    /// The most operations a page holds (1 or more).
    public var limit: Int

    public init(
        statuses: Set<OutboxStatus>? = nil,
        categories: Set<String>? = nil,
        operationTypes: Set<String>? = nil,
        createdFrom: Date? = nil,
        createdBefore: Date? = nil,
        after: JournalSequence? = nil,
        limit: Int = 100
    ) {
        self.statuses = statuses
        self.categories = categories
        self.operationTypes = operationTypes
        self.createdFrom = createdFrom
        self.createdBefore = createdBefore
        self.after = after
        self.limit = limit
    }

    /// Whether `state` passes every filter (the cursor is the read's).
    func accepts(_ state: OperationState) -> Bool {
        if let statuses, !statuses.contains(state.status) { return false }
        if let categories, !categories.contains(where: { $0.caseInsensitiveCompare(state.category) == .orderedSame }) {
            return false
        }
        if let operationTypes,
            !operationTypes.contains(where: { $0.caseInsensitiveCompare(state.operationType) == .orderedSame })
        {
            return false
        }
        if let createdFrom, state.createdAt < createdFrom { return false }
        if let createdBefore, state.createdAt >= createdBefore { return false }
        return true
    }
}

/// One page of an ``OperationQuery``: each operation as ``Outbox/operation(_:)`` answers it.
public struct OperationPage: Sendable, Equatable {
    /// The operations, newest enqueued first.
    public var operations: [OperationSnapshot]
    /// The `firstSeq` to ask `after:` for the next (older) page; `nil` when this page is the last.
    public var nextAfter: JournalSequence?

    public init(operations: [OperationSnapshot], nextAfter: JournalSequence?) {
        self.operations = operations
        self.nextAfter = nextAfter
    }
}

/// One page of an ``OperationQuery`` as folded states, without reading a request: what the
/// package's tools list (a list reads no event, so a damaged one does not fail it).
package struct OperationStatePage: Sendable, Equatable {
    package var states: [OperationState]
    package var nextAfter: JournalSequence?

    package init(states: [OperationState], nextAfter: JournalSequence?) {
        self.states = states
        self.nextAfter = nextAfter
    }
}
