import Foundation
import OutboxCore
import Testing

/// The words table: for each failure class, what the member reads and what support reads (the
/// journal's message, as the answer carried it). A retried failure never shows its body; a refusal
/// shows the message written for the member; a proxy's page gets words that do not ask the member
/// to correct what is not theirs; no text names a Swift case.
@Suite("What the member reads, and what support reads")
struct OutboxWordsTests {
    static let words = OutboxWords.english
    static let leak = "could not connect to server: host=10.0.4.7 port=6432 dbname=outbox user=outbox_app"

    static func json(_ status: Int, _ body: String) -> TransportResult {
        .response(TransportResponse(statusCode: status, headers: ["Content-Type": "application/json"], body: Data(body.utf8)))
    }

    static func page(_ status: Int) -> TransportResult {
        .response(TransportResponse(statusCode: status, headers: ["Content-Type": "text/html"],
                                    body: Data("<html><body><h1>\(status)</h1><hr>nginx</body></html>".utf8)))
    }

    /// (name, what came back, what the member reads, what the journal keeps for support)
    static let table: [(String, TransportResult, String, String?)] = [
        ("no network", .noResponse(.offline), words.offline, nil),
        ("a timeout", .noResponse(.timedOut), words.noAnswer, nil),
        ("cannot connect", .noResponse(.cannotConnect), words.noAnswer, nil),
        ("interrupted by the app's expiry", .noResponse(.cancelled), words.interrupted, nil),
        ("500 carrying the database's address", json(500, #"{"code":"db_unavailable","message":"\#(leak)"}"#), words.serverTrouble, "db_unavailable: \(leak)"),
        ("502 a proxy's page", page(502), words.serverTrouble, nil),
        ("503 with a message", json(503, #"{"message":"Maintenance until 14:00"}"#), words.serverTrouble, "Maintenance until 14:00"),
        ("429 with a message", json(429, #"{"code":"rate_limited","message":"Slow down, client 42"}"#), words.serverBusy, "Slow down, client 42"),
        ("503 with a code and no message", json(503, #"{"code":"maintenance"}"#), words.serverTrouble, "maintenance"),
        ("408", page(408), words.serverTrouble, nil),
        ("a captive portal's 200", page(200), words.notTheServer, nil),
        ("302", page(302), words.unexpectedAnswer, nil),
        ("422 with the member's message", json(422, #"{"code":"validation_failed","message":"Price must be positive"}"#), "Price must be positive", "Price must be positive"),
        ("422 with no message", json(422, #"{"code":"validation_failed"}"#), words.needsCorrecting, nil),
        ("400 a proxy's page", page(400), words.needsCorrecting, nil),
        ("413 a proxy's page", page(413), words.tooLarge, nil),
        ("414 a proxy's page", page(414), words.cannotTake, nil),
        ("431 a proxy's page", page(431), words.cannotTake, nil),
        ("405 a proxy's page", page(405), words.cannotTake, nil),
        ("404 a proxy's page", page(404), words.notFound, nil),
        ("403 with the owner's rule", json(403, #"{"code":"not_owner","message":"Only the owner may change prices."}"#), "Only the owner may change prices.", "Only the owner may change prices."),
        ("403 plain", page(403), words.notAllowed, nil),
        ("401", page(401), words.sessionExpired, nil),
        ("412 with no message", page(412), words.changedElsewhere, nil),
        ("409 the key reused", json(409, #"{"code":"idempotency_conflict"}"#), words.keyReused, nil),
        ("409 still finishing", json(409, #"{"code":"idempotency_in_progress","message":"lock held by pid 4411"}"#), words.stillFinishing, "lock held by pid 4411"),
    ]

    @Test func eachFailureClassHasItsWords() {
        for (name, result, member, support) in Self.table {
            let classification = DispositionTable.classify(result, policy: .idempotent, now: Date(timeIntervalSince1970: 0))
            let read = Self.words.failure(code: classification.errorCode, serverMessage: classification.errorMessage)
            #expect(read == member, "\(name): the member reads")
            #expect(classification.errorMessage == support, "\(name): support reads")
        }
    }

    /// A retried failure's body never reaches the member, whatever its code.
    @Test func aRetriedFailureNeverShowsItsBody() {
        for status in [408, 429, 500, 502, 503, 504] {
            let classification = DispositionTable.classify(Self.json(status, #"{"code":"x_\#(status)","message":"\#(Self.leak)"}"#),
                                                           policy: .idempotent, now: Date(timeIntervalSince1970: 0))
            let read = Self.words.failure(code: classification.errorCode, serverMessage: classification.errorMessage) ?? ""
            #expect(!read.contains("10.0.4.7") && !read.isEmpty, "\(status)")
        }
    }

    /// No text the member reads names a Swift case, the way "(cannotConnect)" once did.
    @Test func noTextNamesASwiftCase() {
        let failures: [TransportRequest.Failure] = [.offline, .timedOut, .connectionLost, .cannotConnect, .hostNotFound,
                                            .secureConnectionFailed, .cancelled, .other, .missingFromBatch]
        for failure in failures {
            let classification = DispositionTable.classify(.noResponse(failure), policy: .idempotent, now: Date(timeIntervalSince1970: 0))
            let read = Self.words.failure(code: classification.errorCode, serverMessage: classification.errorMessage) ?? ""
            #expect(!read.isEmpty && !read.contains("\(failure)"), "\(failure): \(read)")
        }
        let every = Self.table.map(\.2)
        for text in every { #expect(text.range(of: #"[a-z][A-Z]"#, options: .regularExpression) == nil, "camel case in \(text)") }
    }

    /// Outcomes the engine decides itself read the same in any journal; a gave-up row says so,
    /// and support reads how many attempts and the last one's class.
    @Test func theEnginesOwnOutcomesHaveTheirWords() {
        #expect(Self.words.failure(code: ErrorCode.gaveUp, serverMessage: "This change could not be sent after 5 attempts (...)") == Self.words.gaveUp)
        #expect(Self.words.failure(code: ErrorCode.deletedOnServer, serverMessage: "recorded text") == Self.words.deletedOnServer)
        #expect(Self.words.failure(code: ErrorCode.serverVersionKept, serverMessage: nil) == Self.words.serverVersionKept)
        #expect(Self.words.failure(code: nil, serverMessage: nil) == nil)
    }

    /// An app's own words (its translation) replace the engine's everywhere they are asked.
    @Test func anAppsOwnWordsAreUsed() {
        var french = OutboxWords()
        french.offline = "Pas de connexion. Cette modification sera envoyée au retour d'internet."
        french.waitingForInternet = "en attente d'internet"
        french.rolledBack = "annulée"
        french.needsCorrecting = "Le serveur a refusé cette modification. Corrigez-la."
        #expect(french.failure(code: ErrorCode.offline, serverMessage: nil) == french.offline)
        var sync = LocalRecord.Sync()
        sync.pending = [.init(operation: OperationID(), status: .queued, deletes: false)]
        sync.rolledBack = .init(operation: OperationID(), status: .failed, code: ErrorCode.validationFailed, message: "ignored")
        #expect(french.recordState(sync, online: false) == "en attente d'internet; annulée: Le serveur a refusé cette modification. Corrigez-la.")
    }

    /// The record's sync state, row by row.
    @Test func aRecordsSyncStateInWords() {
        let id = OperationID()
        var sync = LocalRecord.Sync()
        #expect(Self.words.recordState(sync, online: true) == "saved")
        sync.pending = [.init(operation: id, status: .syncing, deletes: false)]
        #expect(Self.words.recordState(sync, online: true) == "sending...")
        #expect(Self.words.recordState(sync, online: false) == "waiting for internet")
        sync.pending = [.init(operation: id, status: .pendingApproval, deletes: false)]
        #expect(Self.words.recordState(sync, online: true) == "waiting for the owner's approval")
        sync.conflict = .init(operation: id, serverRevision: "4", serverValue: nil)
        #expect(Self.words.recordState(sync, online: true) == "changed elsewhere")
        sync = LocalRecord.Sync()
        sync.held = [id]
        sync.rolledBack = .init(operation: OperationID(), status: .blocked, code: "not_owner", message: "", serverMessage: "Only the owner may change prices.")
        #expect(Self.words.recordState(sync, online: true) == "held: made on a change that was rolled back; rolled back: Only the owner may change prices.")
    }
}
