import Foundation
import OutboxCore
import OutboxStorage

/// The Sync tab's words for what holds a queued row (``OperationSnapshot.WaitingOn``).
extension JournalSchema {
    /// What holds a queued row, in the member's words; the label of the row it waits on is
    /// taken from `labels` when a row before it named that one already, and kept there.
    func waitingReason(_ waiting: OperationSnapshot.WaitingOn, labels: inout [OperationID: String], in txn: borrowing LMDBTransaction) throws -> String? {
        func label(_ id: OperationID) throws -> String {
            if let known = labels[id] { return known }
            var label = "an earlier change"
            if let state = try self.state(id, in: txn), let text = presentation(of: state), !text.label.isEmpty {
                label = text.label
            }
            labels[id] = label
            return label
        }
        switch waiting {
        case .laneHead(let head, let status), .recordWrite(let head, let status):
            let why = switch status {
            case .failed?, .blocked?: ", which needs your attention"
            case .conflicted?: ", which was changed elsewhere"
            case .pendingApproval?: ", which waits for approval"
            default: ""
            }
            return "Waits for an earlier change to \(try label(head))\(why)"
        case .dependency(let dependency, let status):
            let why = switch status {
            case .failed?, .blocked?, .conflicted?: ", which needs your attention"
            case .pendingApproval?: ", which waits for approval"
            default: ""
            }
            return "Waits for \(try label(dependency)) to sync first\(why)"
        case .sessionPaused:
            return "Waits for you to sign in again"
        case .noSession:
            return "Waits for someone to sign in"
        case .otherAccount:
            return "Not sent while another account is signed in"
        case .otherInstallation:
            return "Made on another device: waits until this one is confirmed to send it"
        case .attachment(_, let landed, let size):
            return "Waits for its file to upload (\(OutboxWords.megabytes(landed, of: size)))"
        case .scheduled:
            return nil
        }
    }
}
