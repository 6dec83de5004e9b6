import Foundation
package import Outbox
package import OutboxAudit

extension EventText {
    /// One line of details, its moments printed in the zone `journal-inspect` was asked for
    /// (UTC when not given).
    package static func detail(_ event: JournalEvent, moments: MomentFormat?) -> String {
        detail(event, absolute: moments?.absolute ?? Moments.absolute)
    }
}
