import Foundation
import OutboxCore
import OutboxCrypto
import OutboxStorage
import OutboxWire

/// The invariant check: the server's summary of one type (a count and a digest over ids and
/// revisions, never values, at a position S) compared with the base once the feed stands exactly
/// at S. A match is journaled; a mismatch is journaled and starts a resync of that type alone
/// (never a repair in place); a comparison that could not be made at the same position is
/// journaled as inconclusive, and tried again at the next interval.
extension FeedPuller {
    /// What a summary check did.
    struct SummaryCheck: Sendable, Equatable {
        var checked: SummaryChecked?
        /// The type's resync after a mismatch.
        var resync: Resnapshot?
        var pagesApplied = 0
        /// What stopped it before a verdict (no response, a sign-out, ...): nothing journaled.
        var stoppedBy: Outbox.PullStop?
    }

    func checkSummary(business: String, type: String, settings: PullConfiguration, limits: FeedLimits?, maxPages: Int) async -> SummaryCheck {
        var done = SummaryCheck()
        if let changed = await accountChanged() {
            done.stoppedBy = changed
            return done
        }
        let request = TransportRequest(method: "GET", endpoint: settings.summaryEndpoint + "?type=\(Self.queryEscaped(type))",
                                       headers: [WireHeader.businessID: business], body: Data())
        let summary: FeedSummary
        do {
            let response = try await send(request)
            guard response.statusCode == 200 else {
                done.stoppedBy = await refusal(response, business: business).0
                return done
            }
            summary = try FeedSummary.decoded(from: response.body)
        } catch let invalid as FeedPage.Invalid {
            let refusal = PageRefusal.malformed("\(invalid)")
            await journalRefusal(refusal, business: business, from: nil)
            done.stoppedBy = .refused(refusal)
            return done
        } catch {
            done.stoppedBy = Self.noResponse(error)
            return done
        }
        guard ExactString(summary.business) == ExactString(business), ExactString(summary.type) == ExactString(type) else {
            let refusal = PageRefusal.otherType(asked: "\(business)/\(type)", answered: "\(summary.business)/\(summary.type)")
            await journalRefusal(refusal, business: business, from: nil)
            done.stoppedBy = .refused(refusal)
            return done
        }
        // The feed to exactly the summary's position, then the base compared there.
        let pulled = await pull(business: business, settings: settings, limits: limits, maxPages: maxPages, until: summary.position) { nil }
        done.pagesApplied = pulled.report.pagesApplied
        if let stop = pulled.report.stoppedBy {
            done.stoppedBy = stop
            return done
        }
        do {
            let local = try store.read { txn in try store.schema.summary(business: business, type: type, at: summary.position, in: txn) }
            let verdict: SummaryChecked.Verdict = if let local {
                local.count == summary.count && local.digest == summary.digest ? .matched : .mismatched
            } else {
                .inconclusive
            }
            let checked = SummaryChecked(business: business, type: type, position: summary.position, serverCount: summary.count,
                                         serverDigest: summary.digest, localCount: local?.count, localDigest: local?.digest, verdict: verdict)
            _ = try await room.append([JournalStore.Draft(operationID: nil, body: .summaryChecked(checked))])
            done.checked = checked
            log.log(verdict == .mismatched ? .warning : .info, "a type's summary was compared with the base", [
                EngineLog.Key.reason: .string("\(verdict)"),
            ])
        } catch OutboxError.storageFull {
            done.stoppedBy = .storageFull
            return done
        } catch {
            done.stoppedBy = .journalError("\(error)")
            return done
        }
        if done.checked?.verdict == .mismatched {
            done.resync = await resnapshot(business: business, type: type, reason: "summary_mismatch", settings: settings, limits: limits,
                                           maxPages: max(1, maxPages - done.pagesApplied))
            done.stoppedBy = done.resync?.stoppedBy
        }
        return done
    }
}

extension JournalSchema {
    /// The count and summary digest (``FeedDigest/summary(_:)``) of one type's live bases, when
    /// the business's feed stands exactly at `position` and no base of the type changed after the
    /// page that set it (an answer since would make the comparison unsound); `nil` otherwise.
    func summary(business: String, type: String, at position: FeedPosition, in txn: borrowing LMDBTransaction) throws -> (count: Int, digest: SHA256Digest)? {
        guard let row = try feedRow(business: business, in: txn), row.cursor == position, row.staging == nil else { return nil }
        var live: [(id: String, revision: UInt64)] = []
        var sound = true
        try txn.scan(baseTable(generation: row.generation), leading: RecordKey.scopeBytes(business: business, type: type)) { entry in
            let base = try entry.value()
            if base.seq > row.pageSeq {
                sound = false
                return .stop
            }
            if base.valueHash != nil { live.append((try entry.key().id, base.revision)) }
            return .next
        }
        return sound ? (live.count, FeedDigest.summary(live)) : nil
    }
}
