import Foundation
import Outbox
@testable import OutboxDemo
import Testing

/// The words the demo's phone shows for a record's sync state: each state the engine can report,
/// and the value as the member typed it.
@Suite("outbox-demo's phone screen")
struct MemberScreenTests {
    static let key = RecordKey(business: "folakes-pharmacy", type: "product", id: "antiseptic-500")
    static let typed = Data(#"{"id":"antiseptic-500","name":"Antiseptic 500 ml","price":13.5}"#.utf8)
    static let servers = Data(#"{"id":"antiseptic-500","name":"Antiseptic 500 ml","price":12.5,"revision":1}"#.utf8)
    static let base = LocalRecord.ServerBase(value: servers, revision: 1, learntAt: Date(timeIntervalSince1970: 0), seq: 4)

    static func record(_ value: Data?, server: LocalRecord.ServerBase? = base, _ sync: (inout LocalRecord.Sync) -> Void) -> LocalRecord {
        var state = LocalRecord.Sync()
        sync(&state)
        return LocalRecord(key: key, value: value, schemaVersion: 1, server: server, isLocalOnly: false, sync: state)
    }

    @Test(arguments: [
        (OutboxStatus.queued, false, "waiting for internet"),
        (.syncing, false, "waiting for internet"),
        (.queued, true, "sending..."),
        (.syncing, true, "sending..."),
        (.pendingApproval, true, "waiting for the owner's approval"),
    ])
    func aPendingChangeSaysWhatItWaitsFor(status: OutboxStatus, online: Bool, words: String) {
        let record = Self.record(Self.typed) { $0.pending = [.init(operation: OperationID(), status: status, deletes: false)] }
        #expect(MemberScreen.state(record, online: online) == words)
    }

    @Test func theListShowsThePriceAsTypedWithItsState() {
        let record = Self.record(Self.typed) { $0.pending = [.init(operation: OperationID(), status: .queued, deletes: false)] }
        #expect(MemberScreen.line(record, online: false) == "Antiseptic 500 ml: 13.50, waiting for internet")
    }

    @Test func aSyncedRecordSaysSavedWithTheServersRevision() {
        let record = Self.record(Self.servers) { _ in }
        #expect(MemberScreen.line(record, online: true) == "Antiseptic 500 ml: 12.50, saved, revision 1")
    }

    @Test func aConflictShowsTheServersValueBesideTheMembers() {
        let edit = OperationID()
        let record = Self.record(Self.typed) {
            $0.pending = [.init(operation: edit, status: .conflicted, deletes: false)]
            $0.conflict = .init(operation: edit, serverRevision: "4", serverValue: Data(#"{"price":14,"revision":4}"#.utf8))
        }
        #expect(MemberScreen.line(record, online: true) == "Antiseptic 500 ml: 13.50, changed elsewhere: 14.00 on the server (revision 4)")
    }

    @Test func aRollbackSaysTheServersMessageOverTheServersValue() {
        let record = Self.record(Self.servers) {
            $0.rolledBack = .init(operation: OperationID(), status: .failed, code: "validation_failed", message: "Price must be positive", serverMessage: "Price must be positive")
        }
        #expect(MemberScreen.line(record, online: true) == "Antiseptic 500 ml: 12.50, rolled back: Price must be positive")
    }

    @Test func aChangeMadeAfterARollbackSaysBoth() {
        let record = Self.record(Self.typed) {
            $0.pending = [.init(operation: OperationID(), status: .queued, deletes: false)]
            $0.rolledBack = .init(operation: OperationID(), status: .blocked, code: "forbidden", message: "Only the owner may change prices.", serverMessage: "Only the owner may change prices.")
        }
        #expect(MemberScreen.state(record, online: false) == "waiting for internet; rolled back: Only the owner may change prices.")
    }

    @Test func aHeldChangeSaysItWasMadeOnARolledBackOne() {
        let record = Self.record(Self.servers) {
            $0.held = [OperationID()]
            $0.rolledBack = .init(operation: OperationID(), status: .failed, code: "validation_failed", message: "Price must be positive", serverMessage: "Price must be positive")
        }
        #expect(MemberScreen.state(record, online: true) == "held: made on a change that was rolled back; rolled back: Price must be positive")
    }

    @Test func anEmployeeShowsItsRoleAndNoValueShowsNothing() {
        #expect(MemberScreen.shown(Data(#"{"id":"chidi","name":"Chidi Okafor","role":"cashier"}"#.utf8), type: "employee") == "cashier")
        #expect(MemberScreen.shown(nil, type: "product") == "nothing")
        #expect(MemberScreen.shown(Data(#"{"price":14}"#.utf8), type: "product") == "14.00")
    }
}
