public import Foundation

/// What the member reads: the words for each failure class and for each record's sync state, in
/// one table. English by default (``english``); an app that speaks other languages builds its own
/// (each field is a plain string: fill it from the app's `String(localized:)`) and asks it, so no
/// app copies sentences out of the engine's demo.
///
/// What support reads is the journal: the code, the status and the server's own message, kept as
/// the answer carried it. The member reads the server's message only where it was written for
/// them: a refusal (a 4xx) whose JSON body carried a `message`. A failure the engine retries (no
/// response, a timeout, 408, 429, a 5xx, a page that is not the server's) never shows the body:
/// behind a proxy or a pooler it can carry a host, a port or a database user. No text here names
/// a Swift type or case.
public struct OutboxWords: Sendable, Equatable {
    // Failures the engine sends again by itself.

    public var offline = "No connection. This change will be sent when the internet is back."
    public var interrupted = "Sending was interrupted before the server answered. This change will be sent again automatically."
    public var noAnswer = "The server did not answer. This change will be sent again automatically."
    public var serverTrouble = "The server is having trouble. This change will be sent again automatically."
    public var serverBusy = "The server is busy. This change will be sent again automatically."
    public var notTheServer = "The network answered with a page that is not the server's (a Wi-Fi sign-in page?). This change will be sent again automatically."
    public var unexpectedAnswer = "The server answered in a way this app does not understand. This change will be sent again automatically."
    public var stillFinishing = "The server is still finishing an earlier copy of this change. It will be checked again shortly."

    // Refusals: the server's own message when it sent one, else these.

    public var sessionExpired = "Your session expired. Sign in again to send your changes."
    public var notAllowed = "You are not allowed to make this change. Ask the business owner."
    public var keyReused = "A different change was already sent under this change's key. Someone needs to look at it."
    public var changedElsewhere = "This record was changed elsewhere since you started editing it. Choose which version to keep."
    /// 400 and 422 with no message: the change itself, as typed, is what the server refused.
    public var needsCorrecting = "The server refused this change. Check what you entered and correct it."
    public var notFound = "The server no longer has what this change is for. It cannot be sent."
    public var tooLarge = "This change is too large for the server to take. It cannot be sent as it is."
    /// Any other 4xx with no message (a proxy's page, an address the server does not serve): not
    /// the member's to correct.
    public var cannotTake = "The server cannot take this change. Someone needs to look at it."
    public var approvalRefused = "The owner did not approve this change."

    // Outcomes the engine decides itself.

    public var gaveUp = "This change could not be sent after many tries. Try again, or discard it."
    public var damagedOnDevice = "The saved change was damaged on this device and was not sent. Someone needs to look at it."
    public var unsendableAddress = "This change was not sent: the address it was saved with cannot be sent as saved. Someone needs to look at it."
    public var dependencyEnded = "This change depended on another that did not go through, so it was not sent."
    public var builtOnRolledBack = "This change was made on top of an earlier one that did not go through. Check it, then keep it, change it or discard it."
    public var deletedOnServer = "This record was deleted on the server while your change waited. Keep your version to create it again, or discard your change."
    public var mayAlreadyBeApplied = "This change waited so long the server may no longer recognise it. Check whether it was applied before sending it again."
    public var discarded = "This change was discarded."
    public var serverVersionKept = "The server's version was kept: this change was discarded."
    // Attachments.

    /// Before "<the server's message>" when it sent one.
    public var attachmentRefused = "The server refused the attached file"
    public var attachmentDamaged = "The attached file is damaged on this device and cannot be sent. Discard this change, or make it again with the file."
    public var attachmentMismatch = "The attached file did not arrive intact. Try again, or discard this change."
    /// "<name> waiting for internet".
    public var fileWaiting = "waiting for internet"
    /// "uploading <name>, <landed> of <size>".
    public var uploading = "uploading"

    /// A code no line above covers, with no message.
    public var refused = "The server refused this change."

    // A record's sync state, as a list shows it beside the value.

    public var waitingForInternet = "waiting for internet"
    public var sending = "sending..."
    public var waitingForApproval = "waiting for the owner's approval"
    public var waitingForDecision = "changed elsewhere"
    public var saved = "saved"
    public var held = "held: made on a change that was rolled back"
    public var rolledBack = "rolled back"

    public init() {}

    /// The engine's own words, in English.
    public static let english = OutboxWords()

    /// The codes of failures the engine sends again by itself.
    static let retriedCodes: Set<String> = [
        ErrorCode.offline, ErrorCode.cancelled, ErrorCode.noResponse, ErrorCode.serverUnavailable, ErrorCode.rateLimited,
        ErrorCode.invalidResponse, ErrorCode.unexpectedStatus, ErrorCode.idempotencyInProgress,
    ]

    /// What the member reads of a failure: its `code` as the journal recorded it (for a failure
    /// the engine retries, always one of the engine's: the server's own code goes with its message,
    /// for support), and `serverMessage`, the message the answer's JSON body carried (or, in a
    /// journal written before the engine kept the two apart, the words it recorded). `nil` when
    /// there is nothing to say (no code and no message).
    public func failure(code: String?, serverMessage: String?) -> String? {
        let message = serverMessage.flatMap { $0.isEmpty ? nil : $0 }
        guard code != nil || message != nil else { return nil }
        if code == ErrorCode.gaveUp { return gaveUp }
        if let code, Self.retriedCodes.contains(code) { return retriedWords(code) }
        if code == ErrorCode.attachmentRefused { return message.map { "\(attachmentRefused): \($0)" } ?? "\(attachmentRefused)." }
        if let code, let own = engineWords(code) { return own }
        if let message { return message }
        return code.map(refusalWords) ?? refused
    }

    /// A failure the engine retries, by its code; never the body's message.
    private func retriedWords(_ code: String) -> String {
        switch code {
        case ErrorCode.offline: offline
        case ErrorCode.cancelled: interrupted
        case ErrorCode.noResponse: noAnswer
        case ErrorCode.rateLimited: serverBusy
        case ErrorCode.invalidResponse: notTheServer
        case ErrorCode.unexpectedStatus: unexpectedAnswer
        case ErrorCode.idempotencyInProgress: stillFinishing
        default: serverTrouble
        }
    }

    /// Outcomes the engine decides without a server's words.
    private func engineWords(_ code: String) -> String? {
        switch code {
        case ErrorCode.payloadCorrupt: damagedOnDevice
        case ErrorCode.endpointUnsendable: unsendableAddress
        case ErrorCode.dependencyEnded: dependencyEnded
        case ErrorCode.builtOnRolledBack: builtOnRolledBack
        case ErrorCode.deletedOnServer: deletedOnServer
        case ErrorCode.claimMayBeForgotten: mayAlreadyBeApplied
        case ErrorCode.discarded: discarded
        case ErrorCode.serverVersionKept: serverVersionKept
        case ErrorCode.attachmentDamaged: attachmentDamaged
        case ErrorCode.attachmentMismatch: attachmentMismatch
        default: nil
        }
    }

    /// A refusal whose answer carried no message.
    private func refusalWords(_ code: String) -> String {
        switch code {
        case ErrorCode.unauthorized: sessionExpired
        case ErrorCode.forbidden: notAllowed
        case ErrorCode.idempotencyConflict: keyReused
        case ErrorCode.preconditionFailed, ErrorCode.revisionConflict: changedElsewhere
        case ErrorCode.validationFailed, ErrorCode.badRequest: needsCorrecting
        case ErrorCode.notFound, ErrorCode.gone: notFound
        case ErrorCode.payloadTooLarge: tooLarge
        case ErrorCode.approvalRejected: approvalRefused
        default: code.hasPrefix("http_") || ErrorCode.statusCodes.values.contains(code) ? cannotTake : refused
        }
    }

    /// A record's sync state in a few words, as a list shows it beside the value: `"waiting for
    /// internet"`, `"sending..."`, `"saved"`, `"changed elsewhere"`, `"rolled back: <why>"`;
    /// several joined by `"; "` when the record says several things at once. `online`: whether
    /// the app sees a network (a write in flight with none fails at once, so the member is told
    /// what they wait for).
    public func recordState(_ sync: LocalRecord.Sync, online: Bool) -> String {
        var parts: [String] = []
        if sync.conflict != nil {
            parts.append(waitingForDecision)
        } else if let last = sync.pending.last {
            switch last.status {
            case .pendingApproval: parts.append(waitingForApproval)
            default:
                // A write waits for its file first: the file is what moves.
                if let file = sync.pending.lazy.compactMap(\.upload).first {
                    parts.append(upload(name: file.name, landed: file.landed, of: file.size, online: online))
                } else {
                    parts.append(online ? sending : waitingForInternet)
                }
            }
        } else if !sync.held.isEmpty {
            parts.append(held)
        }
        if let back = sync.rolledBack {
            let why = failure(code: back.code, serverMessage: back.serverMessage) ?? refused
            parts.append("\(rolledBack): \(why)")
        }
        if parts.isEmpty { parts.append(saved) }
        return parts.joined(separator: "; ")
    }

    /// How far an attachment's upload got, in a few words: `"uploading note.jpg, 3.1 of 8 MB"`,
    /// or `"note.jpg waiting for internet"` when nothing is moving (`online` false).
    public func upload(name: String, landed: Int64, of size: Int64, online: Bool) -> String {
        guard online else { return "\(name) \(fileWaiting)" }
        return "\(uploading) \(name), \(Self.megabytes(landed, of: size))"
    }

    /// `"3.1 of 8 MB"`: decimal megabytes, one decimal where it says something.
    package static func megabytes(_ landed: Int64, of size: Int64) -> String {
        func text(_ bytes: Int64) -> String {
            let tenths = (bytes * 10 + 500_000) / 1_000_000
            return tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
        }
        return size < 1_000_000 ? "\((landed + 999) / 1000) of \((size + 999) / 1000) KB" : "\(text(landed)) of \(text(size)) MB"
    }
}
