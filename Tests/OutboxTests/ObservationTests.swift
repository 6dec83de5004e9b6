import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxStorage
import OutboxTesting
import OutboxWire
import Synchronization
import Testing

/// One observation (`Outbox.observe`) for every screen: a commit reaches the observations whose
/// result it changes, known from what it wrote and what each read read, whatever kind of event
/// it carries; a read of another business or type is not even read again.
@Suite("Observations, event kind by event kind", .timeLimit(.minutes(5)))
struct ObservationTests {
    static let business = "pharmacy-7"
    static let p1 = RecordKey(business: business, type: "product", id: "p1")
    static let e1 = RecordKey(business: business, type: "employee", id: "e1")
    static let elsewhere = RecordKey(business: "pharmacy-9", type: "product", id: "p1")
    static let draft = RecordKey(business: business, type: "draft", id: "form-1")
    static func value(_ price: Double) -> Data { Data(#"{"name":"Antiseptic","price":\#(price)}"#.utf8) }
    static func at(_ major: UInt64) -> FeedPosition { FeedPosition(epoch: 1, major: major) }

    static func edit(_ number: Int, of key: RecordKey = p1) -> OutboxRequest {
        var request = productRequest(number, entityID: nil)
        request.businessID = key.business
        request.operationType = "\(key.type).update"
        request.method = "PUT"
        request.endpoint = "/\(key.type)s/\(key.id)"
        return request
    }

    static func page(from: FeedPosition, to: FeedPosition, _ changes: [FeedChange]) -> FeedPage {
        FeedPage(business: business, from: from, cursor: to, hasMore: false, count: changes.count,
                 digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
    }

    /// How far from the events' record, pharmacy-7's product p1, a read lies.
    enum Distance: Int, Comparable, Sendable {
        /// p1, its type's lists, the Sync tab, the badge.
        case near
        /// Another type of pharmacy-7.
        case otherType
        /// Another business.
        case otherBusiness

        static func < (a: Distance, b: Distance) -> Bool { a.rawValue < b.rawValue }
    }

    /// A read an app watches, by name, with its result as text (compared before and after).
    struct Read: Sendable {
        var name: String
        var distance = Distance.near
        var read: @Sendable (Outbox) throws -> String
    }

    static let reads: [Read] = [
        Read(name: "record p1") { String(reflecting: try $0.record(p1)) },
        Read(name: "products of pharmacy-7") { String(reflecting: try $0.records(RecordQuery(business: business, type: "product"))) },
        Read(name: "sync tab") { String(reflecting: try $0.syncTab(isOnline: false)) },
        Read(name: "badge") { String(try $0.badgeCount()) },
        Read(name: "the first operation") { outbox in
            let first = try outbox.ledger(LedgerQuery(limit: 1)).entries.first?.operationID
            return String(reflecting: try first.map { try outbox.operation($0) })
        },
        Read(name: "draft form-1") { String(reflecting: try $0.record(draft)) },
        Read(name: "employee e1", distance: .otherType) { String(reflecting: try $0.record(e1)) },
        Read(name: "employees of pharmacy-7", distance: .otherType) { String(reflecting: try $0.records(RecordQuery(business: business, type: "employee"))) },
        Read(name: "products of pharmacy-9", distance: .otherBusiness) { String(reflecting: try $0.records(RecordQuery(business: "pharmacy-9", type: "product"))) },
        Read(name: "product p1 of pharmacy-9", distance: .otherBusiness) { String(reflecting: try $0.record(elsewhere)) },
    ]

    /// A journal in a given state, and one thing done to it.
    struct Event: Sendable, CustomTestStringConvertible {
        var name: String
        /// The nearest reads it may reach without changing them: a commit that moves a
        /// business's feed (its cursor is what a synced write's view waits for) reaches every
        /// type of the business; a sign-out, every business.
        var reaches = Distance.near
        var transport: @Sendable () -> ScriptedTransport = { ScriptedTransport(otherwise: .fail(.offline)) }
        var prepare: @Sendable (Outbox, TestJournal) async throws -> Void = { _, _ in }
        var act: @Sendable (Outbox, TestJournal) async throws -> Void
        var testDescription: String { name }
    }

    /// Each kind of event the journal writes, from the state that lets it happen.
    static let events: [Event] = [
        Event(name: "enqueue") { outbox, _ in
            _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(13.5))])
        },
        Event(name: "accepted with its record", transport: { scripted(.json(200, #"{"record":{"price":13.5},"revision":3}"#)) },
              prepare: { outbox, _ in _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(13.5))]) },
              act: { outbox, _ in await outbox.drain() }),
        Event(name: "rejected", transport: { scripted(.json(422, #"{"code":"validation_failed","message":"Price must be positive"}"#)) },
              prepare: { outbox, _ in _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(-1))]) },
              act: { outbox, _ in await outbox.drain() }),
        Event(name: "a transient failure", transport: { scripted(.json(503, "{}")) },
              prepare: { outbox, _ in _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(13.5))]) },
              act: { outbox, _ in await outbox.drain() }),
        Event(name: "conflicted", transport: { scripted(.json(412, #"{"current":{"price":14},"revision":"4"}"#)) },
              prepare: { outbox, _ in _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(13.5))]) },
              act: { outbox, _ in await outbox.drain() }),
        Event(name: "discarded by the member",
              prepare: { outbox, _ in _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(13.5))]) },
              act: { outbox, _ in try await outbox.discard(try #require(try outbox.record(p1)?.sync.pending.first?.operation)) }),
        Event(name: "retried by the member", transport: { scripted(.json(422, #"{"code":"validation_failed"}"#)) },
              prepare: { outbox, _ in
                  _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(-1))])
                  await outbox.drain()
              },
              act: { outbox, _ in try await outbox.retry(try #require(try outbox.record(p1)?.sync.rolledBack?.operation)) }),
        Event(name: "acknowledged rollback", transport: { scripted(.json(422, #"{"code":"validation_failed"}"#)) },
              prepare: { outbox, _ in
                  _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(-1))])
                  await outbox.drain()
              },
              act: { outbox, _ in try await outbox.acknowledgeRollback(of: p1) }),
        Event(name: "a pulled page", reaches: .otherType) { outbox, _ in
            _ = try await outbox.apply(page(from: .start(of: 1), to: at(2), [FeedChange(type: "product", id: "p1", revision: 3, record: value(14))]),
                                       requested: nil, limit: 500)
        },
        Event(name: "a pulled tombstone", reaches: .otherType,
              prepare: { outbox, _ in
                  _ = try await outbox.apply(page(from: .start(of: 1), to: at(2), [FeedChange(type: "product", id: "p1", revision: 3, record: value(14))]),
                                             requested: nil, limit: 500)
              },
              act: { outbox, _ in
                  _ = try await outbox.apply(page(from: at(2), to: at(3), [FeedChange(type: "product", id: "p1", revision: 4, record: nil)]),
                                             requested: at(2), limit: 500)
              }),
        Event(name: "a resnapshot's swap", reaches: .otherType,
              transport: { scripted(ResnapshotTests.snapshot(at: FeedPosition(epoch: 2, major: 4), more: false, [FeedChange(type: "product", id: "p1", revision: 5, record: value(12))])) },
              prepare: { outbox, _ in
                  _ = try await outbox.apply(page(from: .start(of: 1), to: at(2), [FeedChange(type: "product", id: "p1", revision: 3, record: value(14))]),
                                             requested: nil, limit: 500)
              },
              act: { outbox, _ in _ = try await outbox.resnapshot(business: business, reason: "foreign_epoch") }),
        Event(name: "a dropped base", reaches: .otherType,
              prepare: { outbox, _ in
                  _ = try await outbox.apply(page(from: .start(of: 1), to: at(2), [FeedChange(type: "product", id: "p1", revision: 3, record: value(14))]),
                                             requested: nil, limit: 500)
              },
              act: { outbox, _ in try await outbox.dropRecordBase(business: business, type: "product") }),
        Event(name: "a local write") { outbox, _ in
            try await outbox.writeLocal([.put(draft, Data(#"{"name":"Gauze"}"#.utf8))])
        },
        Event(name: "compaction", transport: { scripted(.json(200, #"{"record":{"price":13.5},"revision":3}"#)) },
              prepare: { outbox, journal in
                  _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(13.5))])
                  await outbox.drain()
                  journal.clock.advance(by: 86_400 * 40)
              },
              act: { outbox, journal in _ = try await outbox.compact(before: journal.clock.now()) }),
        Event(name: "sign-out", reaches: .otherBusiness,
              prepare: { outbox, _ in
                  _ = try await outbox.enqueue(edit(1), changing: [.put(p1, value(13.5))])
                  _ = try await outbox.enqueue(edit(2, of: elsewhere), changing: [.put(elsewhere, value(2))])
              },
              act: { outbox, _ in try await outbox.signOut(discardPending: true) }),
    ]

    static func scripted(_ response: TransportResponse) -> ScriptedTransport {
        let transport = ScriptedTransport(otherwise: .fail(.offline))
        transport.script(.respond(response))
        return transport
    }

    /// Every read's region and result.
    static func readAll(_ outbox: Outbox) throws -> [(region: LMDBRegion, result: String)] {
        try reads.map { read in
            let recorder = LMDBRegionRecorder(.reads)
            let result = try LMDBRegionRecorder.$current.withValue(recorder) { try read.read(outbox) }
            return (recorder.region, result)
        }
    }

    @Test(arguments: events)
    func eachEventReachesTheReadsItChanges(_ event: Event) async throws {
        let journal = TestJournal(transport: event.transport())
        let outbox = try journal.open { $0.recordTypes = ["draft": .localOnly] }
        defer { outbox.close() }
        try await event.prepare(outbox, journal)
        await outbox.settle()
        let before = try Self.readAll(outbox)
        let written = Mutex(LMDBRegion())
        outbox.store.environment.watchWrites { region in
            written.withLock { $0.formUnion(region) }
            return true
        }
        try await event.act(outbox, journal)
        await outbox.settle()
        outbox.store.environment.watchWrites(nil)
        let wrote = written.withLock { $0 }
        let after = try Self.readAll(outbox)
        var changed = 0
        for (index, read) in Self.reads.enumerated() {
            let reached = before[index].region.isChanged(by: wrote)
            if before[index].result != after[index].result {
                changed += 1
                #expect(reached, "\(event.name) changed \(read.name) and its commit did not reach it")
            } else if read.distance > event.reaches {
                #expect(!reached, "\(event.name) reached \(read.name), which it cannot change: it would be read again for nothing")
            }
        }
        #expect(changed > 0, "\(event.name) changed none of the reads: the table tests nothing")
    }

    // MARK: The stream

    /// The list on screen follows a pull: a price changed elsewhere, a record added, one deleted.
    @Test func aListOnScreenChangesWhenAPullLands() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        var pages = outbox.observe(.records(RecordQuery(business: Self.business, type: "product"))).makeAsyncIterator()
        #expect(await pages.next()?.records.isEmpty == true)
        _ = try await outbox.apply(Self.page(from: .start(of: 1), to: Self.at(2), [FeedChange(type: "product", id: "p1", revision: 3, record: Self.value(14))]),
                                   requested: nil, limit: 500)
        #expect(await pages.next()?.records.map(\.value) == [Self.value(14)], "the counter's price reached the list")
        _ = try await outbox.apply(Self.page(from: Self.at(2), to: Self.at(3), [FeedChange(type: "product", id: "p2", revision: 1, record: Self.value(2))]),
                                   requested: Self.at(2), limit: 500)
        #expect(await pages.next()?.records.map(\.key.id) == ["p1", "p2"], "a product added elsewhere reached the list")
        _ = try await outbox.apply(Self.page(from: Self.at(3), to: Self.at(4), [FeedChange(type: "product", id: "p1", revision: 4, record: nil)]),
                                   requested: Self.at(3), limit: 500)
        #expect(await pages.next()?.records.map(\.key.id) == ["p2"], "a deletion elsewhere reached the list")
    }

    /// An enqueue never waits for an observer: with an observation's read held, writes still
    /// commit, and the observation then reads once and yields the newest.
    @Test func anEnqueueNeverWaitsForAnObserver() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        defer { outbox.close() }
        let gate = DispatchSemaphore(value: 0)
        let reads = Atomic<Int>(0)
        let held = OutboxObservation<Int> { outbox in
            // The second read waits until the test lets it go.
            if reads.add(1, ordering: .relaxed).newValue == 2 { gate.wait() }
            return try outbox.badgeCount()
        }
        var counts = outbox.observe(held).makeAsyncIterator()
        #expect(await counts.next() == 0)
        for number in 1...5 { _ = try await outbox.enqueue(productRequest(number)) }
        #expect(try outbox.badgeCount() == 5, "five writes committed while the observer's read was held")
        gate.signal()
        var seen = await counts.next()
        while seen != 5 { seen = await counts.next() }
        #expect(seen == 5 && reads.load(ordering: .relaxed) <= 4, "coalesced: far fewer reads than commits")
    }

    /// Freshness crossing its threshold yields once, at the clock's deadline; commits that change
    /// nothing the page shows yield nothing.
    @Test func freshnessTurningStaleYieldsOnceAtItsDeadline() async throws {
        let feed = ScriptedFeed(count: 1)
        let journal = TestJournal(transport: PullWorkerTests.server(feed))
        journal.clock.set(to: PullTests.t0)
        let outbox = try journal.open {
            PullTests.configured(&$0, PullConfiguration(types: ["product": PullConfiguration.PulledType(freshnessSeconds: 900)], businesses: [Self.business]))
        }
        defer { outbox.close() }
        _ = try await outbox.pull()
        var pages = outbox.observe(.records(RecordQuery(business: Self.business, type: "product"))).makeAsyncIterator()
        let fresh = try #require(await pages.next())
        #expect(fresh.freshness?.isStale == false)
        // A write of another business commits; the page is unchanged.
        _ = try await outbox.enqueue(Self.edit(1, of: Self.elsewhere), changing: [.put(Self.elsewhere, Self.value(1))])
        journal.clock.advance(by: 901)
        let stale = try #require(await pages.next())
        #expect(stale.freshness?.isStale == true, "the one yield is freshness turning stale")
        #expect(stale.records.map(\.key) == fresh.records.map(\.key) && stale.records.map(\.value) == fresh.records.map(\.value))
    }

    /// An observation ends when the outbox closes.
    @Test func anObservationEndsWhenTheOutboxCloses() async throws {
        let journal = TestJournal()
        let outbox = try journal.open()
        var counts = outbox.observe(.badgeCount).makeAsyncIterator()
        #expect(await counts.next() == 0)
        outbox.close()
        #expect(await counts.next() == nil)
        #expect(outbox.observations.observationCount == 0)
    }
}
