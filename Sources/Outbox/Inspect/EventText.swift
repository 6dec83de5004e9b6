package import Foundation
package import OutboxCore

/// Events and outcomes in a few words: the words of a ``HistoryEntry`` and `journal-inspect`'s tables.
package enum EventText {
    /// `2027-01-15T08:00:00Z`: whole seconds, UTC.
    private static func utc(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!))
    }

    /// The first 8 characters of an id: enough to type it back as a prefix.
    package static func shortID(_ id: OperationID) -> String {
        String(id.idempotencyKey.prefix(8))
    }

    /// `201`, `no response (offline)`, `not sent`.
    package static func outcome(_ outcome: AttemptOutcome) -> String {
        switch outcome {
        case .response(let statusCode): "\(statusCode)"
        case .noResponse(let failure): "no response (\(failure))"
        case .notSent: "not sent"
        }
    }

    /// The fewest words for a drawing: `503`, `offline`, `not sent`.
    package static func shortOutcome(_ outcome: AttemptOutcome) -> String {
        switch outcome {
        case .response(let statusCode): "\(statusCode)"
        case .noResponse(let failure): failure.rawValue
        case .notSent: "not sent"
        }
    }

    /// `code: message`, or whichever of the two there is.
    package static func error(code: String?, message: String?) -> String {
        switch (code, message) {
        case (let code?, let message?): "\(code): \(message)"
        case (let code?, nil): code
        case (nil, let message?): message
        case (nil, nil): ""
        }
    }

    /// Records and what each change did, in short: `p/product/7d0c (put 1a2b3c4d5e6f)`.
    private static func recordList(_ writes: [RecordWrite]) -> String {
        writes.map { write in
            "\(write.key) (" + (write.valueHash.map { "put \($0.hex.prefix(12))" } ?? "delete") + ")"
        }.joined(separator: ", ")
    }

    /// Changes passed over and why, in short: `invoice/i-1 at 4 (type not pulled)`; the first
    /// five, then how many more.
    private static func skippedList(_ skipped: [SkippedChange]) -> String {
        let named = skipped.prefix(5).map { change in
            let why = switch change.reason {
            case .unknownType: "type not pulled"
            case .overLimit: "over the payload limit"
            case .localOnly: "local-only type"
            case .invalidKey: "not a record key"
            }
            return "\(change.type)/\(change.id) at \(change.revision) (\(why))"
        }.joined(separator: ", ")
        return skipped.count > 5 ? named + " and \(skipped.count - 5) more" : named
    }

    /// One line of details for the `events` stream and ``HistoryEntry/words``. Never the
    /// payload: its size.
    /// - Parameter absolute: how a moment in the details prints (ISO 8601 in UTC when not given).
    package static func detail(_ event: JournalEvent, absolute: ((Date) -> String)? = nil) -> String {
        let absolute = absolute ?? utc
        switch event.body {
        case .enqueued(let enqueued):
            let request = enqueued.request
            var text = "\(request.operationType) \(request.method) \(request.endpoint) \"\(request.entityLabel)\" "
                + "[\(request.category)], \(request.payload.count) bytes"
            if let revision = request.baseRevision { text += ", edits revision \(revision)" }
            if !request.dependsOn.isEmpty { text += ", depends on \(request.dependsOn.map(shortID).joined(separator: ", "))" }
            if let supersedes = enqueued.supersedes {
                let old = shortID(supersedes.operation)
                switch supersedes.reason {
                case .revised: text += ", corrects \(old) (the member's correction, in its place)"
                case .resolvedMine: text += ", resolves \(old)'s conflict with the member's version"
                case .coalesced: text += ", coalesces \(old), never sent, into this newer write"
                }
            }
            if !enqueued.changes.isEmpty { text += ", changes " + recordList(enqueued.changes) }
            for file in enqueued.attachments {
                text += ", attaches \(file.name) (\(file.contentType), \(file.size) bytes, SHA-256 \(file.sha256.hex), id \(file.id))"
            }
            if let key = request.revisionFrom { text += ", If-Match from \(key)'s server revision" }
            return text
        case .attemptStarted(let started):
            return "attempt \(started.attempt), woken by \(started.trigger)" + (started.sentRevision.map { ", If-Match \"\($0)\"" } ?? "")
        case .attemptFinished(let finished):
            var text = "attempt \(finished.attempt): \(outcome(finished.outcome)) -> \(finished.disposition.rawValue)"
            if let next = finished.nextAttemptAt { text += ", next at \(absolute(next))" }
            if let id = finished.approvalRequestID { text += ", approval request \(id)" }
            if let revision = finished.serverRevision { text += ", revision \(revision)" }
            let error = error(code: finished.errorCode, message: finished.errorMessage)
            if !error.isEmpty { text += "; \(error)" }
            for confirmation in finished.confirmations {
                text += "; \(confirmation.key) at revision \(confirmation.revision)"
                    + (confirmation.valueHash.map { " (\($0.hex.prefix(12)), from the \(confirmation.source))" } ?? " deleted")
            }
            return text
        case .attemptAbandoned(let abandoned):
            return "attempt \(abandoned.attempt) had no outcome when the app ended; due again at once"
        case .withdrawn(let withdrawn):
            return error(code: withdrawn.errorCode, message: withdrawn.errorMessage)
        case .requeued(let requeued):
            return "retry asked by the \(requeued.requestedBy)"
        case .discarded(let discarded):
            switch discarded.reason {
            case .signOut: return "on sign-out, by the \(discarded.requestedBy) at the member's choice"
            case .memberDiscarded: return "by the \(discarded.requestedBy)"
            case .serverWon: return "the server's version kept, by the \(discarded.requestedBy)"
            }
        case .approvalDecided(let decision):
            return (decision.approved ? "approved" : "rejected") + (decision.reference.map { " (\"\($0)\")" } ?? "")
        case .superseded(let superseded):
            let new = shortID(superseded.by)
            switch superseded.reason {
            case .revised: return "superseded by \(new), the member's correction"
            case .resolvedMine: return "superseded by \(new), the member's version chosen over the server's"
            case .coalesced: return "coalesced into \(new), a newer write of the same record, before it was ever sent"
            }
        case .rebased(let rebased):
            return "rebased by its conflict rule onto the server's revision \(rebased.baseRevision); sent again under the same key"
        case .dependencyEnded(let ended):
            return "blocked: \(shortID(ended.dependency)), which it depends on, ended \(ended.status)"
        case .claimMayBeForgotten(let claim):
            return "blocked: first sent \(absolute(claim.firstAttemptAt)), longer ago than the server keeps claims "
                + "(\(Int(claim.retentionSeconds)) s with the margin): sent again under its key it could apply twice; a person checks"
        case .heldOnRollback(let held):
            return "held: built on \(shortID(held.builtOn)), a change of the same record that was rolled back; a person decides"
        case .rollbackAcknowledged(let acknowledged):
            return "the member saw the rollback of \(acknowledged.key)"
        case .recordsWritten(let written):
            return "local records written: " + recordList(written.writes)
        case .recordBaseDropped(let dropped):
            return "server base of \(dropped.business)/\(dropped.type) dropped for schema version \(dropped.schemaVersion): fetched again"
        case .pageApplied(let page):
            let deletes = page.confirmations.filter { $0.valueHash == nil }.count
            return "page of \(page.business)'s feed applied: \(page.from) -> \(page.to), \(page.confirmations.count) changes (\(deletes) deleted)"
                + (page.skipped.isEmpty ? "" : ", passed over: " + Self.skippedList(page.skipped))
                + (page.reachedEnd ? "; the feed's end" : "; more follow")
        case .pageRefused(let refused):
            return "page of \(refused.business)'s feed from \(refused.from?.text ?? "its start") refused (\(refused.code)): \(refused.detail); nothing of it applied"
        case .resnapshotStarted(let started):
            return "resnapshot of \(started.business)\(started.type.map { "/\($0)" } ?? "") started (\(started.reason)): the server's records fetched again whole from \(started.position)"
                + (started.from.map { ", the cursor \($0) given up" } ?? "") + "; the member's base stays until the swap"
        case .snapshotPageStaged(let page):
            return "snapshot page \(page.page) of \(page.business) staged: \(page.confirmations.count) records read at \(page.position)"
                + (page.skipped.isEmpty ? "" : ", passed over: " + Self.skippedList(page.skipped))
                + (page.reachedEnd ? "; the snapshot's end" : "; more follow")
        case .resnapshotFinished(let finished):
            return "resnapshot of \(finished.business) swapped in: \(finished.staged) records, the feed from \(finished.cursor)"
                + (finished.vanished.isEmpty ? "" : "; \(finished.vanished.count) records a pending write changes are gone from the server: deleted")
        case .summaryChecked(let checked):
            let local = checked.localCount.map { "\($0) here" } ?? "not compared"
            return "summary of \(checked.business)/\(checked.type) at \(checked.position) \(checked.verdict): \(checked.serverCount) records on the server, \(local)"
                + (checked.verdict == .mismatched ? "; the type is fetched again" : "")
        case .resnapshotAbandoned(let abandoned):
            return "resnapshot of \(abandoned.business) abandoned (\(abandoned.code)): \(abandoned.detail); the member's base untouched, started again"
        case .deletedOnServer(let deleted):
            return "conflicted: \(deleted.key) was deleted on the server (revision \(deleted.revision)) while this change waited; a person decides"
        case .routeChanged(let changed):
            return changed.seen
                ? "a route to the server was seen at \(absolute(changed.at)): waiting counts as connected"
                : "no route to the server from \(absolute(changed.at)): waiting no longer counts as connected"
        case .sessionChanged(let changed):
            switch changed.observation {
            case .signedIn: return "the journal's account is signed in again: passes send"
            case .signedOut: return "nobody is signed in: passes send nothing"
            case .otherAccount: return "another account is signed in: nothing is sent under it"
            }
        case .sessionPaused(let paused):
            return "worker paused: \(paused.reason)" + (paused.triggeredBy.map { " (operation \(shortID($0)))" } ?? "")
        case .sessionResumed:
            return "worker resumed: the session was refreshed"
        case .journalOpened(let opened):
            return "format \(opened.formatVersion), engine \(opened.engineVersion)" + (opened.appVersion.map { ", app \($0)" } ?? "")
                + (opened.timeZone.map { ", device zone \($0)" } ?? "")
                + (opened.installation.map { ", installation \($0)" } ?? "")
        case .attachmentGranted(let granted):
            return "upload of \(granted.attachment) granted: \(granted.segmentCount) segment\(granted.segmentCount == 1 ? "" : "s") of "
                + "\(granted.segmentSize) bytes, URLs good for \(Int(granted.lifetimeSeconds)) s by the server (signatures not kept)"
        case .segmentLanded(let landed):
            return "segment \(landed.segment.number) of \(landed.attachment) landed: \(landed.segment.size) bytes, ETag \(landed.segment.etag)"
        case .attachmentCompleted(let completed):
            return "\(completed.attachment) completed as \(completed.object): \(completed.size) bytes, SHA-256 \(completed.sha256.hex) (the file's)"
        case .attachmentRefused(let refused):
            return "\(refused.attachment) refused: \(refused.errorCode)" + (refused.statusCode.map { " (HTTP \($0))" } ?? "")
                + (refused.message.isEmpty ? "" : ": \(refused.message)") + "; the write is held, its file kept"
        case .installationAdopted(let adopted):
            return "the writes made on installation \(adopted.previous) adopted by \(adopted.installation): they are sent from here"
        case .compacted(let compacted):
            let writes = compacted.operations.count
            return "seqs \(compacted.firstSeq)...\(compacted.lastSeq) compacted: \(compacted.removedCount) events of \(writes) settled "
                + "write\(writes == 1 ? "" : "s") removed, SHA-256 \(compacted.digest.hex)"
        }
    }
}
