import Foundation
import OutboxCore
import OutboxCrypto
import Testing

/// The member's view of a record, row by row of `Docs/records.md`'s status-change table: a pure
/// function of the base and the writes' states.
@Suite("The member's view of a record")
struct RecordViewTests {
    static let key = RecordKey(business: "pharmacy-7", type: "product", id: "p-1")
    static let baseValue = Data(#"{"price":14}"#.utf8)
    static let mine = Data(#"{"price":13.5}"#.utf8)
    static let later = Data(#"{"price":12}"#.utf8)

    /// A write of the record in `status`, at lane seq `seq`.
    static func write(_ seq: UInt64, _ status: OutboxStatus, value: Data? = mine, configure: (inout OperationState) -> Void = { _ in }) -> RecordView.Write {
        let request = OutboxRequest(businessID: "pharmacy-7", operationType: "product.update", method: "PUT", endpoint: "/products/p-1",
                                    payload: Data("{}".utf8), category: "Products", entityLabel: "P", summary: "Price")
        let change = RecordWrite(key: key, value: value, schemaVersion: 1)
        let enqueued = Enqueued(request: request, requestHash: SHA256Digest(of: request.payload), account: "a", changes: [change])
        var state = OperationState(id: OperationID(), seq: JournalSequence(rawValue: seq), recordedAt: Date(timeIntervalSince1970: 0), enqueued: enqueued)
        state.status = status
        state.latestSeq = JournalSequence(rawValue: seq + 1)
        if RecordRule.isRolledBackStatus(status) { state.rolledBackSeq = JournalSequence(rawValue: seq + 1) }
        configure(&state)
        return RecordView.Write(state: state, change: change)
    }

    static func base(seq: UInt64 = 1) -> LocalRecord.ServerBase {
        LocalRecord.ServerBase(value: baseValue, revision: 2, learntAt: Date(timeIntervalSince1970: 0), seq: JournalSequence(rawValue: seq))
    }

    static func view(_ writes: [RecordView.Write], base: LocalRecord.ServerBase? = base()) -> LocalRecord {
        RecordView.view(key, stored: RecordView.Stored(base: base, value: base?.value, schemaVersion: 1), isLocalOnly: false,
                        writes: writes, schemaVersion: 1, upgrade: nil)
    }

    /// (name, writes, the member's view, pending count, confirmed count, rolled back?, held count, conflict?)
    static let table: [(String, [RecordView.Write], Data?, Int, Int, Bool, Int, Bool)] = [
        ("no writes: the base", [], baseValue, 0, 0, false, 0, false),
        ("queued", [write(10, .queued)], mine, 1, 0, false, 0, false),
        ("syncing", [write(10, .syncing)], mine, 1, 0, false, 0, false),
        ("waiting for approval", [write(10, .pendingApproval)], mine, 1, 0, false, 0, false),
        ("conflicted: the member's value, the server's beside it", [write(10, .conflicted)], mine, 1, 0, false, 0, true),
        ("synced, awaiting the server's value, no newer base", [write(10, .synced)], mine, 0, 1, false, 0, false),
        ("failed: rolled back to the base", [write(10, .failed)], baseValue, 0, 0, true, 0, false),
        ("blocked: rolled back", [write(10, .blocked)], baseValue, 0, 0, true, 0, false),
        ("discarded: rolled back", [write(10, .discarded)], baseValue, 0, 0, true, 0, false),
        ("rolled back, acknowledged", [write(10, .failed) { $0.rollbackAcknowledged = true }], baseValue, 0, 0, false, 0, false),
        ("rolled back, then a later change: the notice is replaced", [write(10, .failed), write(20, .queued, value: later)], later, 1, 0, false, 0, false),
        ("rolled back, a later change held on it", [write(10, .blocked), write(20, .conflicted, value: later) { $0.heldOn = OperationID() }], baseValue, 0, 0, true, 1, false),
        ("two pending, applied in order", [write(10, .queued), write(20, .queued, value: later)], later, 2, 0, false, 0, false),
        ("a pending delete", [write(10, .queued, value: nil)], nil, 1, 0, false, 0, false),
    ]

    @Test(arguments: table.indices)
    func eachRowOfTheStatusChangeTable(_ index: Int) {
        let (name, writes, value, pending, confirmed, rolledBack, held, conflict) = Self.table[index]
        let record = Self.view(writes)
        #expect(record.value == value, "\(name)")
        #expect(record.sync.pending.count == pending, "\(name)")
        #expect(record.sync.confirmed.count == confirmed, "\(name)")
        #expect((record.sync.rolledBack != nil) == rolledBack, "\(name)")
        #expect(record.sync.held.count == held, "\(name)")
        #expect((record.sync.conflict != nil) == conflict, "\(name)")
        #expect(record.server == Self.base(), "\(name): the base is as stored")
        #expect(record.sync.isSynced == (pending == 0 && confirmed == 0 && !rolledBack && held == 0 && !conflict), "\(name)")
    }

    @Test func aSyncedWritesChangeGivesWayToABaseLearntAfterIt() {
        let synced = Self.write(10, .synced)
        #expect(Self.view([synced], base: Self.base(seq: 5)).value == Self.mine, "the base is older: the member's value, confirmed")
        let newer = Self.view([synced], base: Self.base(seq: 50))
        #expect(newer.value == Self.baseValue && newer.sync.isSynced, "the server's value arrived")
        #expect(Self.view([synced], base: nil).sync.confirmed.count == 1, "no base yet")
    }

    @Test func aConflictsServerValueIsTheBaseWhenItHoldsTheConflictsRevision() {
        let conflicted = Self.write(10, .conflicted) { $0.serverRevision = "2"; $0.serverCurrent = Data(#"{"old":1}"#.utf8) }
        #expect(Self.view([conflicted]).sync.conflict?.serverValue == Self.baseValue)
        let ahead = Self.write(10, .conflicted) { $0.serverRevision = "9"; $0.serverCurrent = Data(#"{"kept":1}"#.utf8) }
        #expect(Self.view([ahead]).sync.conflict?.serverValue == Data(#"{"kept":1}"#.utf8), "the base is older: what the conflict kept")
    }
}
