import Foundation
@testable import OutboxCore
import OutboxCrypto
import OutboxWire
import Testing

/// The pull's pure rules, row by row of their tables (`Docs/records.md`, "The pull").
@Suite("The pull's rules: a page's check, a synced change's retirement, a tombstone's conflict")
struct PullRulesTests {
    static let business = "pharmacy-7"
    static func at(_ major: UInt64, epoch: UInt64 = 3) -> FeedPosition { FeedPosition(epoch: epoch, major: major) }
    static func change(_ id: String, _ revision: UInt64, _ record: String?) -> FeedChange {
        FeedChange(type: "product", id: id, revision: revision, record: record.map { Data($0.utf8) })
    }

    /// A page as a correct server answers it, from 41.
    static func page(to cursor: FeedPosition = at(43), hasMore: Bool = false, changes: [FeedChange]? = nil) -> FeedPage {
        let changes = changes ?? [change("p1", 19, #"{"id":"p1","price":14}"#), change("p2", 4, nil)]
        return FeedPage(business: business, from: at(41), cursor: cursor, hasMore: hasMore, count: changes.count,
                        digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
    }

    static let request = PageCheck.Request(business: business, cursor: at(41), limit: 500)

    struct PageRow: Sendable, CustomTestStringConvertible {
        var name: String
        var page: FeedPage
        var verdict: PageCheck.Verdict
        var testDescription: String { name }
    }

    static let pageRows: [PageRow] = [
        PageRow(name: "a correct page", page: page(), verdict: .apply),
        PageRow(name: "a correct page with more to follow", page: page(hasMore: true), verdict: .apply),
        PageRow(name: "an empty page at the end", page: page(to: at(41), changes: []), verdict: .apply),
        PageRow(name: "an empty page that moves the cursor", page: page(to: at(50), changes: []), verdict: .apply),
        PageRow(name: "another business's feed", page: { var p = page(); p.business = "pharmacy-8"; return p }(),
                verdict: .refuse(.otherBusiness("pharmacy-8"))),
        PageRow(name: "the business in another case", page: { var p = page(); p.business = "Pharmacy-7"; return p }(),
                verdict: .refuse(.otherBusiness("Pharmacy-7"))),
        PageRow(name: "a cursor of a newer epoch", page: page(to: at(2, epoch: 4)), verdict: .resnapshot(epoch: 4)),
        PageRow(name: "a start of another epoch", page: { var p = page(); p.from = at(41, epoch: 2); return p }(), verdict: .resnapshot(epoch: 2)),
        PageRow(name: "another start", page: { var p = page(); p.from = at(40); return p }(), verdict: .refuse(.otherStart(asked: at(41).text, answered: at(40).text))),
        PageRow(name: "a cursor moved back", page: page(to: at(40)), verdict: .refuse(.movedBack(from: at(41).text, to: at(40).text))),
        PageRow(name: "changes under a cursor that stayed", page: page(to: at(41)), verdict: .refuse(.stuck(at: at(41).text, changes: 2))),
        PageRow(name: "an empty page that says more follow", page: page(to: at(41), hasMore: true, changes: []),
                verdict: .refuse(.moreAfterEmpty(at: at(41).text))),
        PageRow(name: "a count that is not the changes'", page: { var p = page(); p.count = 3; return p }(), verdict: .refuse(.countMismatch(said: 3, held: 2))),
        PageRow(name: "a digest of other changes", page: { var p = page(); p.changes[0].revision = 20; return p }(), verdict: .refuse(.digestMismatch)),
        PageRow(name: "a record's bytes changed", page: { var p = page(); p.changes[0].record = Data(#"{"id":"p1","price":15}"#.utf8); return p }(),
                verdict: .refuse(.digestMismatch)),
        PageRow(name: "a tombstone turned into a record", page: { var p = page(); p.changes[1].record = Data("{}".utf8); return p }(),
                verdict: .refuse(.digestMismatch)),
    ]

    @Test(arguments: pageRows)
    func eachPageIsCheckedBeforeAnythingOfItIsWritten(_ row: PageRow) {
        #expect(PageCheck.verdict(row.page, for: Self.request) == row.verdict)
    }

    @Test func morePagesThanTheLimitAreRefused() {
        let request = PageCheck.Request(business: Self.business, cursor: Self.at(41), limit: 1)
        #expect(PageCheck.verdict(Self.page(), for: request) == .refuse(.overLimit(changes: 2, limit: 1)))
    }

    @Test func everyRefusalSaysWhatTheServerGotWrong() {
        let refusals = Self.pageRows.compactMap { row -> PageRefusal? in
            if case .refuse(let refusal) = row.verdict { return refusal }
            return nil
        } + [.overLimit(changes: 2, limit: 1)]
        #expect(Set(refusals.map(\.code)).count == 8)
        for refusal in refusals { #expect(!refusal.description.isEmpty && !refusal.code.contains(" ")) }
    }

    // MARK: A synced change's retirement

    struct RetirementRow: Sendable, CustomTestStringConvertible {
        var name: String
        var answer: OverlayRetirement.Answer
        var base: OverlayRetirement.Base?
        var feed: FeedPosition?
        var retired: Bool
        var testDescription: String { name }
    }

    static let answered = JournalSequence(rawValue: 100)
    static func answer(visibleAt: FeedPosition?, revision: UInt64? = 7) -> OverlayRetirement.Answer {
        OverlayRetirement.Answer(seq: answered, visibleAt: visibleAt, revision: revision)
    }
    static func base(seq: UInt64, revision: UInt64 = 7) -> OverlayRetirement.Base {
        OverlayRetirement.Base(seq: JournalSequence(rawValue: seq), revision: revision)
    }

    static let retirementRows: [RetirementRow] = [
        // Not pulled: a base at or after the answer, the answer's own record included.
        RetirementRow(name: "not pulled, no base", answer: answer(visibleAt: nil), base: nil, feed: nil, retired: false),
        RetirementRow(name: "not pulled, a base older than the answer", answer: answer(visibleAt: nil), base: base(seq: 90), feed: nil, retired: false),
        RetirementRow(name: "not pulled, the answer's own record", answer: answer(visibleAt: at(50)), base: base(seq: 100), feed: nil, retired: true),
        // Pulled, a position in the feed's epoch: the feed's cursor decides, whatever the base.
        RetirementRow(name: "the feed before the position", answer: answer(visibleAt: at(50)), base: base(seq: 100), feed: at(49), retired: false),
        RetirementRow(name: "the feed at the position", answer: answer(visibleAt: at(50)), base: base(seq: 100), feed: at(50), retired: true),
        RetirementRow(name: "the feed past the position", answer: answer(visibleAt: at(50)), base: nil, feed: at(80), retired: true),
        RetirementRow(name: "the same major, a later minor", answer: answer(visibleAt: FeedPosition(epoch: 3, major: 50, minor: 2)),
                      base: nil, feed: FeedPosition(epoch: 3, major: 50, minor: 1), retired: false),
        // Another epoch.
        RetirementRow(name: "a position of an older epoch", answer: answer(visibleAt: at(90, epoch: 2)), base: nil, feed: at(1), retired: true),
        RetirementRow(name: "a position of a newer epoch, the feed not there yet", answer: answer(visibleAt: at(1, epoch: 4)), base: nil, feed: at(90), retired: false),
        RetirementRow(name: "a position of a newer epoch, the feed there", answer: answer(visibleAt: at(1, epoch: 4)), base: nil, feed: at(1, epoch: 4), retired: true),
        // Pulled, no position (a claim stored before positions): a pulled base after the answer.
        RetirementRow(name: "no position, the answer's own base", answer: answer(visibleAt: nil), base: base(seq: 100), feed: at(90), retired: false),
        RetirementRow(name: "no position, a pulled base older than the answer's revision", answer: answer(visibleAt: nil), base: base(seq: 120, revision: 6), feed: at(90), retired: false),
        RetirementRow(name: "no position, a pulled base at the answer's revision", answer: answer(visibleAt: nil), base: base(seq: 120, revision: 7), feed: at(90), retired: true),
        RetirementRow(name: "no position, a pulled base before the answer", answer: answer(visibleAt: nil), base: base(seq: 80, revision: 9), feed: at(90), retired: false),
        RetirementRow(name: "no position nor revision, any pulled base after", answer: answer(visibleAt: nil, revision: nil), base: base(seq: 120, revision: 1), feed: at(90), retired: true),
    ]

    @Test(arguments: retirementRows)
    func aSyncedChangeShowsUntilTheServersValueHasComeBackForIt(_ row: RetirementRow) {
        #expect(OverlayRetirement.isRetired(row.answer, base: row.base, feed: row.feed) == row.retired)
    }

    // MARK: A tombstone and the writes waiting

    struct TombstoneRow: Sendable, CustomTestStringConvertible {
        var name: String
        var write: TombstoneConflict.Write
        var decision: TombstoneConflict.Decision
        var testDescription: String { name }
    }

    static let tombstone = JournalSequence(rawValue: 200)
    static func write(_ status: OutboxStatus, deletes: Bool = false, seq: UInt64 = 150, held: Bool = false) -> TombstoneConflict.Write {
        TombstoneConflict.Write(status: status, deletes: deletes, firstSeq: JournalSequence(rawValue: seq), isHeld: held)
    }

    static let tombstoneRows: [TombstoneRow] = [
        TombstoneRow(name: "a queued edit", write: write(.queued), decision: .conflict),
        TombstoneRow(name: "an edit on its way", write: write(.syncing), decision: .afterItSettles),
        TombstoneRow(name: "a queued delete", write: write(.queued, deletes: true), decision: .unaffected),
        TombstoneRow(name: "an edit made after the tombstone arrived", write: write(.queued, seq: 201), decision: .unaffected),
        TombstoneRow(name: "an edit already conflicted", write: write(.conflicted), decision: .unaffected),
        TombstoneRow(name: "an edit held on a rolled-back one", write: write(.queued, held: true), decision: .unaffected),
        TombstoneRow(name: "an edit waiting for approval", write: write(.pendingApproval), decision: .unaffected),
        TombstoneRow(name: "a failed edit", write: write(.failed), decision: .unaffected),
        TombstoneRow(name: "a blocked edit", write: write(.blocked), decision: .unaffected),
        TombstoneRow(name: "a synced edit", write: write(.synced), decision: .unaffected),
        TombstoneRow(name: "a discarded edit", write: write(.discarded), decision: .unaffected),
        TombstoneRow(name: "a superseded edit", write: write(.superseded), decision: .unaffected),
        TombstoneRow(name: "a withdrawn edit", write: write(.withdrawn), decision: .unaffected),
    ]

    @Test(arguments: tombstoneRows)
    func aTombstoneAsksTheMemberAboutAnEditStillWaiting(_ row: TombstoneRow) {
        #expect(TombstoneConflict.decision(for: row.write, tombstoneSeq: Self.tombstone) == row.decision)
    }

    @Test func everyStatusHasARowInTheTombstonesTable() {
        let statuses: Set<OutboxStatus> = [.queued, .syncing, .synced, .pendingApproval, .failed, .blocked, .withdrawn, .discarded, .conflicted, .superseded]
        #expect(Set(Self.tombstoneRows.map(\.write.status)) == statuses)
    }
}
