package import Foundation
package import OutboxCrypto
package import OutboxWire

/// The member's view of one record: a pure function of its server base (or local value) and the
/// writes whose change it may show, each with its status, in the order the member made them.
///
/// | write | in the view | the sync state says |
/// |---|---|---|
/// | queued, syncing, pending approval | its change applied | pending |
/// | conflicted | its change applied, the server's value beside it | pending, conflict |
/// | conflicted, held (built on a rolled-back write) | hidden | held |
/// | synced, the answer did not describe this record, and no newer base since | its change applied | confirmed |
/// | synced, the server's value since | hidden: the base is the server's | - |
/// | failed, blocked, discarded | hidden: the view is the base again | rolled back (the latest, until acknowledged or replaced by a later change) |
///
/// The base is what the server last confirmed (a deleted one shows as no value); a local-only
/// record's value is its own.
package enum RecordView {
    /// A write the view reads: what it needs of the write's state, and its change to this record
    /// (`nil` when unreadable).
    package struct Write: Sendable {
        package var id: OperationID
        package var status: OutboxStatus
        package var latestSeq: JournalSequence
        package var heldOn: OperationID?
        package var rolledBackSeq: JournalSequence?
        package var rollbackAcknowledged: Bool
        package var serverRevision: String?
        package var serverCurrent: Data?
        package var lastErrorCode: String?
        package var lastErrorMessage: String?
        package var latestOutcome: OutcomeCategory?
        /// Where the feed shows a synced write.
        package var visibleAt: FeedPosition?
        package var change: RecordWrite?
        /// The first of its files not uploaded yet, for a queued write that carries files.
        package var upload: LocalRecord.Sync.Upload?

        package init(state: OperationState, change: RecordWrite?) {
            id = state.id
            status = state.status
            latestSeq = state.latestSeq
            heldOn = state.heldOn
            rolledBackSeq = state.rolledBackSeq
            rollbackAcknowledged = state.rollbackAcknowledged
            serverRevision = state.serverRevision
            serverCurrent = state.serverCurrent
            lastErrorCode = state.lastErrorCode
            lastErrorMessage = state.lastErrorMessage
            latestOutcome = state.latestOutcome
            visibleAt = state.visibleAt
            self.change = change
            upload = state.pendingAttachment.map {
                LocalRecord.Sync.Upload(attachment: $0.id, name: $0.manifest.name, landed: $0.landedBytes, size: $0.manifest.size)
            }
        }

        /// A write queued, syncing or waiting for approval: its status and change are all the view
        /// reads of it (such a write is neither held, rolled back nor confirmed).
        package init(pending id: OperationID, status: OutboxStatus, change: RecordWrite?) {
            precondition(Self.readsStatusAlone(status), "\(status) needs the whole state")
            self.id = id
            self.status = status
            latestSeq = .zero
            rollbackAcknowledged = false
            self.change = change
        }

        /// Whether a write of `status` is read from its status alone.
        package static func readsStatusAlone(_ status: OutboxStatus) -> Bool {
            status == .queued || status == .syncing || status == .pendingApproval
        }
    }

    /// Whether a synced write's change no longer shows over `base` (``OverlayRetirement``).
    package static func isRetired(_ write: Write, base: LocalRecord.ServerBase?, feed: FeedPosition?) -> Bool {
        let answer = OverlayRetirement.Answer(seq: write.latestSeq, visibleAt: write.visibleAt, revision: write.serverRevision.flatMap(UInt64.init))
        return OverlayRetirement.isRetired(answer, base: base.map { OverlayRetirement.Base(seq: $0.seq, revision: $0.revision) }, feed: feed)
    }

    /// A value as stored: its bytes (`nil`: none) and the schema version it was written with.
    package struct Stored: Sendable {
        package var base: LocalRecord.ServerBase?
        package var value: Data?
        package var schemaVersion: Int?
        /// The value's hash as stored: a value sealed from this reader still has one.
        package var valueHash: SHA256Digest?

        package init(base: LocalRecord.ServerBase?, value: Data?, schemaVersion: Int?, valueHash: SHA256Digest?? = nil) {
            self.base = base
            self.value = value
            self.schemaVersion = schemaVersion
            self.valueHash = valueHash ?? value.map { SHA256Digest(of: $0) }
        }
    }

    /// - Parameters:
    ///   - stored: the server base (or, for a local-only type, the local value).
    ///   - feed: the cursor of the record's business change feed; `nil` when it is not pulled.
    ///   - upgrade: reads a value of an older schema version as the current one's.
    package static func view(
        _ key: RecordKey, stored: Stored, isLocalOnly: Bool, writes: [Write], feed: FeedPosition? = nil,
        schemaVersion current: Int, upgrade: ((Data, Int) throws -> Data)?
    ) -> LocalRecord {
        var value = stored.value
        var hash = stored.valueHash
        var version = stored.schemaVersion
        var sync = LocalRecord.Sync()
        var notice: LocalRecord.Sync.RolledBack?
        for write in writes {
            let state = write
            // The records' status-change table (``RecordRule``) says how the write stands.
            let retired = state.status == .synced && isRetired(state, base: stored.base, feed: feed)
            switch RecordRule.overlay(status: state.status, held: state.heldOn != nil,
                                      rolledBack: state.rolledBackSeq != nil && !state.rollbackAcknowledged, retired: retired) {
            case .held:
                sync.held.append(state.id)
            case .pending, .conflicted:
                apply(write.change, to: &value, hash: &hash, version: &version)
                sync.pending.append(LocalRecord.Sync.Pending(operation: state.id, status: state.status, deletes: write.change?.isDelete ?? false,
                                                       upload: state.upload))
                if state.status == .conflicted {
                    sync.conflict = LocalRecord.Sync.Conflict(operation: state.id, serverRevision: state.serverRevision,
                                                        serverValue: serverValue(of: state, base: stored.base))
                }
                notice = nil
            case .confirmed:
                // Until the server's own value is back, the member's stays.
                apply(write.change, to: &value, hash: &hash, version: &version)
                sync.confirmed.append(state.id)
                notice = nil
            case .rolledBack:
                notice = rolledBack(state)
            case .gone:
                break
            }
        }
        sync.rolledBack = notice
        var base = stored.base
        // The hash as stored names the view's bytes unless an adapter rewrote them.
        if let upgrade {
            if let old = version, old < current, let bytes = value {
                let upgraded = (try? upgrade(bytes, old)) ?? bytes
                if upgraded != bytes { hash = SHA256Digest(of: upgraded) }
                value = upgraded
            }
            if let old = stored.schemaVersion, old < current, let bytes = base?.value { base?.value = (try? upgrade(bytes, old)) ?? bytes }
        }
        let sealed = hash != nil && value == nil
        return LocalRecord(key: key, value: value, schemaVersion: version.map { upgrade == nil ? $0 : max($0, current) },
                           server: isLocalOnly ? nil : base, isLocalOnly: isLocalOnly, sync: sync,
                           valueHash: hash, isSealed: sealed)
    }

    private static func apply(_ change: RecordWrite?, to value: inout Data?, hash: inout SHA256Digest?, version: inout Int?) {
        guard let change else { return }
        value = change.isDelete ? nil : change.value
        hash = change.valueHash
        version = change.schemaVersion
    }

    /// The server's value beside a conflicted change: the base when it holds the conflict's
    /// revision (a 412's `current` went there), else what the conflict kept.
    private static func serverValue(of state: Write, base: LocalRecord.ServerBase?) -> Data? {
        if let base, let revision = state.serverRevision.flatMap(UInt64.init), base.revision >= revision { return base.value }
        return state.serverCurrent
    }

    private static func rolledBack(_ state: Write) -> LocalRecord.Sync.RolledBack {
        let words = OutboxWords.english
        if state.status == .discarded {
            let code = state.latestOutcome == .conflicted ? ErrorCode.serverVersionKept : ErrorCode.discarded
            return LocalRecord.Sync.RolledBack(operation: state.id, status: .discarded, code: code,
                                         message: words.failure(code: code, serverMessage: nil) ?? words.discarded)
        }
        return LocalRecord.Sync.RolledBack(operation: state.id, status: state.status, code: state.lastErrorCode ?? "refused",
                                     message: words.failure(code: state.lastErrorCode, serverMessage: state.lastErrorMessage) ?? words.refused,
                                     serverMessage: state.lastErrorMessage)
    }
}
