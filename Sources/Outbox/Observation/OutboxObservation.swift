public import Foundation
public import OutboxCore
import OutboxStorage

/// A read of the journal an app watches: a record, a page of records, the Sync tab, the badge,
/// an operation, or several at once (a value of the app's own made of them), as GRDB's
/// `ValueObservation` watches a database.
///
/// ```swift
/// for await page in outbox.observe(.records(RecordQuery(business: "pharmacy-7", type: "product"))) {
///     list.show(page.records)
/// }
/// struct Screen: Equatable { var tab: SyncTab; var price: LocalRecord? }
/// let screen = OutboxObservation { outbox in
///     Screen(tab: try outbox.syncTab(isOnline: true), price: try outbox.record(key))
/// }
/// ```
///
/// ``Outbox/observe(_:)`` yields the read's result now, then again after each commit that could
/// change it, only when it changed. What a commit could change is known from what the read read
/// and what the commit wrote: the keys and key ranges of each, in the journal's tables (a pulled
/// page, a resnapshot's swap, a compaction, a sign-out are commits like an enqueue); never from
/// a list of event kinds. The read runs on the observation's own task: a commit only drops its
/// region in the observation's mailbox, so an `enqueue` never waits for observers.
public struct OutboxObservation<Value: Sendable & Equatable>: Sendable {
    let fetch: @Sendable (Outbox) throws -> Value
    let deadline: @Sendable (Value, Date) -> Date?

    /// Watches what `fetch` reads: any reads of the outbox, in one go.
    /// - Parameter deadline: given the value and the moment it was read (the configuration's
    ///   clock), the moment it changes with no commit (a freshness threshold): the read runs
    ///   again then.
    public init(deadline: @escaping @Sendable (Value, Date) -> Date? = { _, _ in nil }, _ fetch: @escaping @Sendable (Outbox) throws -> Value) {
        self.fetch = fetch
        self.deadline = deadline
    }
}

extension OutboxObservation {
    /// One record as the member sees it (`nil`: the journal holds nothing of it). Its freshness
    /// turning stale yields once, at the moment it does.
    public static func record(_ key: RecordKey) -> OutboxObservation<LocalRecord?> where Value == LocalRecord? {
        OutboxObservation<LocalRecord?>(deadline: { record, now in record?.freshness.flatMap { $0.staleAt(readAt: now) } }) { try $0.record(key) }
    }

    /// A page of records. Its freshness turning stale yields once, at the moment it does.
    public static func records(_ query: RecordQuery) -> OutboxObservation<RecordQuery.Page> where Value == RecordQuery.Page {
        OutboxObservation<RecordQuery.Page>(deadline: { page, now in page.freshness.flatMap { $0.staleAt(readAt: now) } }) { try $0.records(query) }
    }

    /// The Sync tab.
    /// - Parameter isOnline: decides the banner.
    public static func syncTab(isOnline: Bool, rowsPerCard: Int = 50) -> OutboxObservation<SyncTab> where Value == SyncTab {
        OutboxObservation<SyncTab> { try $0.syncTab(isOnline: isOnline, rowsPerCard: rowsPerCard) }
    }


    /// One operation (`nil`: no such operation).
    public static func operation(_ id: OperationID) -> OutboxObservation<OperationSnapshot?> where Value == OperationSnapshot? {
        OutboxObservation<OperationSnapshot?> { try $0.operation(id) }
    }
}

extension OutboxObservation where Value == Int {
    /// The badge: rows that need the network or a person.
    public static var badgeCount: OutboxObservation<Int> {
        OutboxObservation<Int> { try $0.badgeCount() }
    }
}

extension Outbox {
    /// The result of `observation` now (read on the caller, before this returns), then again
    /// after each commit that could change it (see
    /// ``OutboxObservation``), only when it changed: one snapshot per yield, coalesced to the
    /// newest when the reader falls behind. The stream ends when the outbox closes, or when the
    /// reading task is cancelled. A read that fails is skipped (logged, counted in
    /// ``OutboxMetrics/problems``); the next commit that meets it reads again.
    public func observe<Value>(_ observation: OutboxObservation<Value>) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(1))
        // Subscribed before the first read: every commit after it is heard.
        let mailbox = observations.subscribe()
        let clock = configuration.clock
        /// One read, with the region it read and the moment it read at; `nil` when it failed.
        @Sendable func read(_ outbox: Outbox) -> (value: Value?, region: LMDBRegion, at: Date) {
            let recorder = LMDBRegionRecorder(.reads)
            let at = clock.now()
            do {
                let value = try LMDBRegionRecorder.$current.withValue(recorder) { try observation.fetch(outbox) }
                return (value, recorder.region, at)
            } catch {
                outbox.viewReadFailed(error)
                return (nil, recorder.region, at)
            }
        }
        // The result now, on the caller: the stream's first element is what the journal holds as
        // `observe` returns, whatever the reading task's scheduling.
        let first = isClosed ? nil : read(self)
        if let value = first?.value { continuation.yield(value) }
        let task = Task { [weak self] in
            var last = first?.value
            var current = first
            var timer: Task<Void, Never>?
            defer { timer?.cancel() }
            while let latest = current {
                timer?.cancel()
                timer = nil
                if let value = latest.value, let moment = observation.deadline(value, latest.at) {
                    timer = Task {
                        guard (try? await clock.sleep(until: moment)) != nil else { return }
                        mailbox.deliver { $0.deadlinePassed = true }
                    }
                }
                // Waits for a commit that wrote where the read read (a read that failed read
                // nothing to compare: any commit), or the deadline.
                var changed = false
                while !changed, let delivery = await mailbox.next() {
                    switch delivery {
                    case .deadline: changed = true
                    case .written(let written): changed = latest.value == nil || latest.region.isChanged(by: written)
                    }
                }
                guard changed, let outbox = self, !outbox.isClosed else { break }
                current = read(outbox)
                if let value = current?.value, value != last {
                    last = value
                    continuation.yield(value)
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in
            task.cancel()
            mailbox.finish()
        }
        if first == nil { continuation.finish() }
        return stream
    }
}

extension Outbox {
    /// A live view's read failed (an observation's, the Sync tab model's): the one thing every
    /// view does then. The view keeps what it showed; the failure is logged and counted in
    /// ``OutboxMetrics/problems`` (unless the outbox closed meanwhile: a closed journal is no
    /// problem), and the next commit that meets the view reads again.
    func viewReadFailed(_ error: any Error) {
        guard !isClosed else { return }
        log.problem(.viewUpdateFailed, "could not read a live view; it keeps what it showed until the next commit", error: error)
    }
}
