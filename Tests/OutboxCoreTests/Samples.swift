import Foundation
import OutboxWire
import OutboxCore
import OutboxCrypto

/// Events of every kind, with optional fields both present and absent.
enum Samples {
    static let moment = Date(timeIntervalSince1970: 1_800_000_000.125)
    static let id = OperationID("E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    static let record = RecordKey(business: "pharmacy-7", type: "product", id: "7d0c3a52")

    static func request(entityID: String? = "product-1") -> OutboxRequest {
        OutboxRequest(
            businessID: "pharmacy-7",
            operationType: "product.create",
            endpoint: "/products",
            payload: Data(#"{"id":"product-1","name":"Antiseptic 500 ml","price":12.5}"#.utf8),
            entityID: entityID,
            category: "Products",
            entityLabel: "Antiseptic 500 ml",
            summary: "New product"
        )
    }

    static func enqueued(_ request: OutboxRequest = request()) -> Enqueued {
        Enqueued(request: request, requestHash: SHA256Digest(of: request.payload), account: "member-42")
    }

    /// One body of every kind (and more than one where optionals differ).
    static let bodies: [JournalEventBody] = [
        .enqueued(enqueued()),
        .enqueued(enqueued(request(entityID: nil))),
        .attemptStarted(AttemptStarted(attempt: 1, trigger: .connectivityRegained)),
        .attemptFinished(AttemptFinished(attempt: 1, outcome: .noResponse(.timedOut), disposition: .transientFailure,
                                         errorCode: "timed_out", errorMessage: "The server did not answer.",
                                         nextAttemptAt: moment.addingTimeInterval(2))),
        .attemptFinished(AttemptFinished(attempt: 2, outcome: .response(statusCode: 429), disposition: .transientFailure,
                                         retryAfter: moment.addingTimeInterval(30), nextAttemptAt: moment.addingTimeInterval(30))),
        .attemptFinished(AttemptFinished(attempt: 3, outcome: .response(statusCode: 202), disposition: .pendingApproval,
                                         approvalRequestID: "apr-9")),
        .attemptFinished(AttemptFinished(attempt: 4, outcome: .response(statusCode: 201), disposition: .accepted,
                                         serverRevision: "rev-3")),
        .attemptFinished(AttemptFinished(attempt: 1, outcome: .notSent, disposition: .blocked,
                                         errorCode: "payload_corrupt", errorMessage: "The saved change was damaged.")),
        .attemptAbandoned(AttemptAbandoned(attempt: 2)),
        .withdrawn(Withdrawn(errorCode: "validation_failed", errorMessage: "Price must be positive.")),
        .requeued(Requeued(requestedBy: .member)),
        .discarded(Discarded(requestedBy: .app, reason: .signOut)),
        .approvalDecided(ApprovalDecided(approved: true, reference: "owner-ok")),
        .approvalDecided(ApprovalDecided(approved: false, reference: nil)),
        .sessionPaused(SessionPaused(reason: "unauthorized", triggeredBy: id)),
        .sessionPaused(SessionPaused(reason: "unauthorized", triggeredBy: nil)),
        .sessionResumed,
        .journalOpened(JournalOpened(formatVersion: 1, engineVersion: "0.1.0", appVersion: "3.2 (41)")),
        .journalOpened(JournalOpened(formatVersion: 1, engineVersion: "0.1.0", appVersion: nil)),
        .compacted(Compacted(firstSeq: 1, lastSeq: 900, removedCount: 850, digest: SHA256Digest(of: Data("x".utf8)), operations: [
            CompactedOperation(id: id, operationType: "product.create", status: .synced, firstSeq: 2, createdAt: moment,
                               changedAt: moment.addingTimeInterval(90), attemptCount: 3, latestOutcome: .replayed,
                               lastErrorCode: nil, serverRevision: "r7"),
            CompactedOperation(id: OperationID("0E621E1F-C36C-495A-93FC-0C247A3E6E5F")!, operationType: "employee.create",
                               status: .discarded, firstSeq: 5, createdAt: moment, changedAt: moment, attemptCount: 0,
                               latestOutcome: nil, lastErrorCode: "idempotency_conflict", serverRevision: nil),
        ])),
        .compacted(Compacted(firstSeq: 3, lastSeq: 3, removedCount: 1, digest: SHA256Digest(of: Data()), operations: [])),
        // Format 2: intent, conflicts, sessions, time zones, what compaction keeps.
        .enqueued(Enqueued(
            request: {
                var edit = request()
                edit.method = "PUT"
                edit.endpoint = "/products/product-1"
                edit.operationID = id
                edit.baseRevision = "r7"
                edit.dependsOn = [OperationID("0E621E1F-C36C-495A-93FC-0C247A3E6E5F")!]
                return edit
            }(),
            requestHash: SHA256Digest(of: request().payload), account: "member-42",
            supersedes: Supersession(operation: OperationID("1E621E1F-C36C-495A-93FC-0C247A3E6E5F")!, reason: .revised, laneSeq: 4)
        )),
        .attemptFinished(AttemptFinished(attempt: 2, Classification(
            outcome: .response(statusCode: 412), disposition: .conflicted, errorCode: "precondition_failed",
            errorMessage: "Changed elsewhere.", serverRevision: "r8", serverCurrent: Data(#"{"price":13}"#.utf8)
        ), nextAttemptAt: nil)),
        .attemptFinished(AttemptFinished(attempt: 3, Classification(
            outcome: .response(statusCode: 409), disposition: .conflicted, errorCode: "revision_conflict", serverRevision: "r9"
        ), nextAttemptAt: nil, sealedServerCurrent: [1, 2, 3])),
        .attemptFinished(AttemptFinished(attempt: 50, outcome: .response(statusCode: 503), disposition: .gaveUp, errorCode: "gave_up")),
        .superseded(Superseded(by: OperationID("2E621E1F-C36C-495A-93FC-0C247A3E6E5F")!, reason: .coalesced)),
        .rebased(Rebased(baseRevision: "r9")),
        .dependencyEnded(DependencyEnded(dependency: OperationID("0E621E1F-C36C-495A-93FC-0C247A3E6E5F")!, status: .discarded)),
        .discarded(Discarded(requestedBy: .rule, reason: .serverWon)),
        .sessionChanged(SessionChanged(observation: .otherAccount)),
        .journalOpened(JournalOpened(formatVersion: 2, engineVersion: "0.2.0", appVersion: nil, timeZone: "Europe/Berlin")),
        .journalOpened(JournalOpened(formatVersion: 6, engineVersion: "0.2.0", appVersion: nil, timeZone: "Europe/Berlin", installation: "install-A")),
        .compacted(Compacted(firstSeq: 4, lastSeq: 9, removedCount: 5, digest: SHA256Digest(of: Data("y".utf8)), operations: [
            CompactedOperation(id: id, operationType: "product.update", status: .superseded, firstSeq: 4, createdAt: moment,
                               changedAt: moment, attemptCount: 1, latestOutcome: .conflicted, lastErrorCode: "revision_conflict",
                               serverRevision: "r8", identity: CompactedIdentity(
                                   businessID: "pharmacy-7", category: "Products", entityID: "product-1", entityLabel: "Antiseptic 500 ml",
                                   summary: "New price", sealedPresentation: nil, requestHash: SHA256Digest(of: Data("z".utf8)),
                                   supersededBy: OperationID("2E621E1F-C36C-495A-93FC-0C247A3E6E5F")!,
                                   method: "PATCH", endpoint: "/products/product-1", payloadVersion: 2, payloadByteCount: 41,
                                   account: "member-1"
                               )),
        ])),
        // Format 3: the member's records.
        .enqueued(Enqueued(
            request: { var edit = Samples.request(); edit.revisionFrom = record; return edit }(),
            requestHash: SHA256Digest(of: Samples.request().payload), account: "member-42",
            changes: [RecordWrite(key: record, value: Data(#"{"price":13.5}"#.utf8), schemaVersion: 2),
                      RecordWrite(key: RecordKey(business: "pharmacy-7", type: "product", id: "p-2"), value: nil, schemaVersion: 1)],
            basisRevision: 7, connectedClock: 12_345.5
        )),
        // A change whose value is the payload itself: written as a reference to it.
        .enqueued(Enqueued(
            request: Samples.request(), requestHash: SHA256Digest(of: Samples.request().payload), account: "member-42",
            changes: [RecordWrite(key: record, value: Samples.request().payload, schemaVersion: 2)]
        )),
        // Format 7: the files a write carries.
        .enqueued(Enqueued(
            request: Samples.request(), requestHash: SHA256Digest(of: Samples.request().payload), account: "member-42",
            attachments: [AttachmentManifest(id: photo, name: "delivery note.jpg", contentType: "image/jpeg", size: 8_389_842,
                                             sha256: SHA256Digest(of: Data("photo".utf8))),
                          AttachmentManifest(id: AttachmentID(uuid: UUID(uuidString: "1C1A2B3C-4D5E-4F60-8172-839405A6B7C8")!), name: "sig.png",
                                             contentType: "image/png", size: 0, sha256: SHA256Digest(of: Data()))]
        )),
        .attemptStarted(AttemptStarted(attempt: AttemptNumber(rawValue: 2), trigger: .timer, sentRevision: "7")),
        .attemptFinished({
            var finished = AttemptFinished(attempt: AttemptNumber(rawValue: 2), Classification(outcome: .response(statusCode: 200), disposition: .accepted), nextAttemptAt: nil)
            finished.confirmations = [RecordConfirmation(key: record, revision: 8, valueHash: SHA256Digest(of: Data("{}".utf8)), source: .answer),
                                      RecordConfirmation(key: record, revision: 9, valueHash: nil, source: .written)]
            finished.visibleAt = FeedPosition(epoch: 3, major: 41, minor: 2)
            finished.connectedAgeSeconds = 42.25
            return finished
        }()),
        .heldOnRollback(HeldOnRollback(builtOn: id)),
        .rollbackAcknowledged(RollbackAcknowledged(key: record)),
        .recordsWritten(RecordsWritten(writes: [RecordWrite(key: RecordKey(business: "pharmacy-7", type: "draft", id: "f-1"), value: nil, valueHash: SHA256Digest(of: Data("{}".utf8)), schemaVersion: 1, sealedValue: nil)])),
        .recordBaseDropped(RecordBaseDropped(business: "pharmacy-7", type: "product", schemaVersion: 3)),
        // Format 4: the pull.
        .deletedOnServer(DeletedOnServer(key: record, revision: 5)),
        .pageApplied(PageApplied(business: "pharmacy-7", from: FeedPosition(epoch: 3, major: 41), to: FeedPosition(epoch: 3, major: 43, minor: 2),
                                 reachedEnd: true, digest: SHA256Digest(of: Data("page".utf8)),
                                 confirmations: [RecordConfirmation(key: record, revision: 19, valueHash: SHA256Digest(of: Data("{}".utf8)), source: .pulled),
                                                 RecordConfirmation(key: record, revision: 20, valueHash: nil, source: .pulled)],
                                 skipped: [SkippedChange(type: "invoice", id: "i-1", revision: 4, reason: .unknownType),
                                           SkippedChange(type: "product", id: "huge", revision: 9, reason: .overLimit)])),
        .pageRefused(PageRefused(business: "pharmacy-7", from: FeedPosition(epoch: 3, major: 41), code: "digest_mismatch",
                                 detail: "the page's digest is not the digest of the changes it holds")),
        .pageRefused(PageRefused(business: "pharmacy-7", from: nil, code: "malformed", detail: "changes[0].revision: not a number")),
        .resnapshotStarted(ResnapshotStarted(business: "pharmacy-7", reason: "expired", from: FeedPosition(epoch: 3, major: 41), position: FeedPosition(epoch: 3, major: 60))),
        .resnapshotStarted(ResnapshotStarted(business: "pharmacy-7", reason: "unknown", from: nil, position: FeedPosition(epoch: 4, major: 1))),
        .snapshotPageStaged(SnapshotPageStaged(business: "pharmacy-7", page: 2, position: FeedPosition(epoch: 3, major: 61, minor: 1),
                                               digest: SHA256Digest(of: Data("snapshot".utf8)),
                                               confirmations: [RecordConfirmation(key: record, revision: 21, valueHash: SHA256Digest(of: Data("{}".utf8)), source: .snapshot)],
                                               skipped: [SkippedChange(type: "draft", id: "d-1", revision: 1, reason: .localOnly)], reachedEnd: false)),
        .resnapshotFinished(ResnapshotFinished(business: "pharmacy-7", cursor: FeedPosition(epoch: 3, major: 60), staged: 1_200,
                                               vanished: [RecordConfirmation(key: record, revision: 21, valueHash: nil, source: .snapshot)])),
        .resnapshotAbandoned(ResnapshotAbandoned(business: "pharmacy-7", code: "epoch_changed", detail: "the server answered from epoch 4")),
        .resnapshotStarted(ResnapshotStarted(business: "pharmacy-7", type: "product", reason: "summary_mismatch", from: FeedPosition(epoch: 3, major: 70), position: FeedPosition(epoch: 3, major: 71))),
        .resnapshotFinished(ResnapshotFinished(business: "pharmacy-7", type: "product", cursor: FeedPosition(epoch: 3, major: 70), staged: 3, vanished: [])),
        .summaryChecked(SummaryChecked(business: "pharmacy-7", type: "product", position: FeedPosition(epoch: 3, major: 70), serverCount: 12,
                                       serverDigest: SHA256Digest(of: Data("server".utf8)), localCount: 11, localDigest: SHA256Digest(of: Data("local".utf8)),
                                       verdict: .mismatched)),
        .summaryChecked(SummaryChecked(business: "pharmacy-7", type: "product", position: FeedPosition(epoch: 3, major: 72), serverCount: 12,
                                       serverDigest: SHA256Digest(of: Data("server".utf8)), localCount: nil, localDigest: nil, verdict: .inconclusive)),
        .routeChanged(RouteChanged(seen: true, at: Date(timeIntervalSince1970: 1_800_000_100.25))),
        .routeChanged(RouteChanged(seen: false, at: Date(timeIntervalSince1970: 1_800_000_160))),
        .claimMayBeForgotten(ClaimMayBeForgotten(firstAttemptAt: Date(timeIntervalSince1970: 1_797_000_000.5), retentionSeconds: 2_505_600)),
        .installationAdopted(InstallationAdopted(previous: "install-A", installation: "install-B")),
        .attachmentGranted(AttachmentGranted(attachment: photo, segmentSize: 8 << 20, segmentCount: 2, lifetimeSeconds: 900)),
        .segmentLanded(SegmentLanded(attachment: photo, segment: LandedSegment(number: 2, size: 1_234, etag: "d41d8cd98f00b204e9800998ecf8427e"))),
        .attachmentCompleted(AttachmentCompleted(attachment: photo, object: "objects/photo-1", size: 8_389_842,
                                                 sha256: SHA256Digest(of: Data("photo".utf8)))),
        .attachmentRefused(AttachmentRefused(attachment: photo, statusCode: 413, errorCode: "attachment_refused", message: "Photos may be at most 5 MB.")),
        .attachmentRefused(AttachmentRefused(attachment: photo, statusCode: nil, errorCode: "attachment_damaged", message: "")),
    ]

    /// The attachment the upload samples are about.
    static let photo = AttachmentID(uuid: UUID(uuidString: "0C1A2B3C-4D5E-4F60-8172-839405A6B7C8")!)

    static func events() -> [JournalEvent] {
        bodies.enumerated().map { offset, body in
            JournalEvent(
                seq: JournalSequence(rawValue: UInt64(offset + 1)),
                operationID: body.kind.isOperationEvent ? id : nil,
                recordedAt: moment.addingTimeInterval(Double(offset)),
                uptime: offset.isMultiple(of: 2) ? Uptime(seconds: 3600.5 + Double(offset), bootID: UUID(uuidString: "6E621E1F-C36C-495A-93FC-0C247A3E6E5F")!) : nil,
                body: body
            )
        }
    }
}
