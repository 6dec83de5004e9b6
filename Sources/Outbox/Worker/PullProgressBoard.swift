import Foundation
import OutboxCore
import OutboxStorage
import Synchronization

/// How far each feed's pull has come, in memory only: the pages, changes and bytes applied since
/// the pull began. A page is one commit already; the board adds nothing to the journal.
/// Observations watch it as they watch a table: ``progress(of:)`` records the feed's key in
/// ``database``, and each page landed hands the observations a region naming it.
final class PullProgressBoard: Sendable {
    /// The database handle reads and notices name: no LMDB database has it (the upload
    /// progress has the one above).
    static let database = UInt32.max - 1

    private let pulls = Mutex<[ExactString: Outbox.FeedState.PullProgress]>([:])
    private let notice = Mutex<(@Sendable (LMDBRegion) -> Void)?>(nil)

    /// Sets what hears each page (the engine's observations).
    func onPage(_ body: @escaping @Sendable (LMDBRegion) -> Void) {
        notice.withLock { $0 = body }
    }

    /// A pull of `business` began at `moment`: its counts start again from zero.
    func began(_ business: String, at moment: Date) {
        pulls.withLock { $0[ExactString(business)] = Outbox.FeedState.PullProgress(startedAt: moment) }
        tell(business)
    }

    /// A page of `changes` changes in `bytes` bytes of the server's answer landed.
    func applied(_ business: String, changes: Int, bytes: Int) {
        pulls.withLock {
            $0[ExactString(business)]?.pagesApplied += 1
            $0[ExactString(business)]?.changesApplied += changes
            $0[ExactString(business)]?.bytesApplied += bytes
        }
        tell(business)
    }

    /// The pull of `business` ended (reached the end, gave way, or failed); its counts stay to be read.
    func ended(_ business: String) {
        pulls.withLock { $0[ExactString(business)]?.isRunning = false }
        tell(business)
    }

    /// The pull of `business` under way or last run since the journal opened; `nil` for none.
    func progress(of business: String) -> Outbox.FeedState.PullProgress? {
        LMDBRegionRecorder.current?.recordRead(Self.key(business), in: Self.database)
        return pulls.withLock { $0[ExactString(business)] }
    }

    private static func key(_ business: String) -> [UInt8] { Array(business.utf8) }

    private func tell(_ business: String) {
        var region = LMDBRegion()
        region.insert(Self.key(business), in: Self.database)
        notice.withLock { $0 }?(region)
    }
}
