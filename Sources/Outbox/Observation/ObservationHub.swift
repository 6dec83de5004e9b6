import Foundation
import OutboxStorage
import Synchronization

/// What an observation's mailbox holds between two reads: the region commits wrote since (their
/// union), and whether its deadline passed.
struct ObservationBacklog: MailboxBacklog {
    enum Delivery: Sendable {
        /// Commits wrote this region (the union of them all) since the last take.
        case written(LMDBRegion)
        /// The deadline the reader asked for passed.
        case deadline
    }

    var written: LMDBRegion?
    var deadlinePassed = false

    mutating func add(_ region: LMDBRegion) {
        if var held = written {
            held.formUnion(region)
            written = held
        } else {
            written = region
        }
    }

    mutating func take() -> Delivery? {
        if let region = written {
            written = nil
            return .written(region)
        }
        if deadlinePassed {
            deadlinePassed = false
            return .deadline
        }
        return nil
    }
}

typealias ObservationMailbox = Mailbox<ObservationBacklog>

/// Hands the region of every committed write transaction to each live observation, and keeps
/// the environment recording regions only while one lives. The committing thread only drops a
/// region in each mailbox and wakes its reader; the reader decides, on its own task, whether the
/// region meets what it read.
final class ObservationHub: Sendable {
    private let mailboxes = MailboxRegistry<ObservationBacklog>()
    private let environment: LMDBEnvironment

    init(environment: LMDBEnvironment) {
        self.environment = environment
    }

    /// A mailbox that hears every commit from this moment: a read begun after this call sees
    /// every commit it is not told of.
    func subscribe() -> ObservationMailbox {
        let (mailbox, registered) = mailboxes.open(ObservationBacklog())
        // Between two write transactions: every one after records its region. (Set again for
        // each observation: a commit that found none live may have just stopped the watch.)
        if registered { environment.watchWrites { [weak self] region in self?.committed(region) ?? false } }
        return mailbox
    }

    /// A commit wrote `region`: each live observation hears it. Answers whether any lives (when
    /// none does, commits stop recording regions).
    private func committed(_ region: LMDBRegion) -> Bool {
        let live = mailboxes.live
        for mailbox in live { mailbox.deliver { $0.add(region) } }
        return !live.isEmpty
    }

    /// State kept outside the journal changed in `region` (``UploadProgress``): each live
    /// observation hears it as it hears a commit.
    func changed(_ region: LMDBRegion) {
        _ = committed(region)
    }

    /// The number of observations a reader still holds.
    var observationCount: Int { mailboxes.live.count }

    /// Ends every observation: the outbox closed.
    func finish() {
        mailboxes.finish()
        environment.watchWrites(nil)
    }
}
