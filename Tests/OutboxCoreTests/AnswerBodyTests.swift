import Foundation
import OutboxCore
import OutboxWire
import Testing

/// An answer's body is read once (`AnswerBody`), and what its status means is decided once
/// (`AnswerMeaning`): the engine's disposition table, its record answers and the batch word all
/// ask them, so they cannot disagree.
@Suite("An answer read once")
struct AnswerBodyTests {
    static let now = Date(timeIntervalSinceReferenceDate: 800_000_000)

    static func response(_ status: Int, _ body: String, headers: [String: String] = ["Content-Type": "application/json"]) -> TransportResponse {
        TransportResponse(statusCode: status, headers: headers, body: Data(body.utf8))
    }

    static func classify(_ response: TransportResponse) -> Classification {
        DispositionTable.classify(.response(response), policy: .idempotent, now: now)
    }

    static func text(_ data: Data?) -> String? {
        data.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func aBooleanRevisionIsRefusedByEveryReader() {
        for body in [#"{"revision":true}"#, #"{"server_revision":false}"#] {
            #expect(AnswerBody(Data(body.utf8)).revision == nil, "\(body)")
            #expect(RecordAnswer(Self.response(200, body)).revision == nil, "\(body)")
            #expect(Self.classify(Self.response(200, body)).serverRevision == nil, "\(body)")
        }
        // Refused in the body, the entity tag's revision stands.
        let tagged = Self.response(200, #"{"revision":true}"#, headers: ["ETag": "\"5\""])
        #expect(RecordAnswer(tagged).revision == 5)
        #expect(Self.classify(tagged).serverRevision == "5")
    }

    @Test func aRevisionOfDecimalDigitsIsAcceptedAsAStringOrANumber() {
        let accepted: [(String, UInt64)] = [
            (#""42""#, 42), ("42", 42), ("42.0", 42), ("4.2e1", 42), ("420e-1", 42), ("0", 0), ("-0", 0),
            (#""007""#, 7), ("18446744073709551615", .max), (#""18446744073709551615""#, .max),
        ]
        for (written, revision) in accepted {
            let body = #"{"revision":\#(written)}"#
            #expect(AnswerBody(Data(body.utf8)).revision == revision, "\(written)")
            #expect(RecordAnswer(Self.response(201, body)).revision == revision, "\(written)")
            #expect(Self.classify(Self.response(201, body)).serverRevision == String(revision), "\(written)")
        }
        let refused = [#""r7""#, #""""#, #""4.2""#, #"" 7""#, "-1", "7.5", "1e-1", "18446744073709551616", "1e20",
                       #""18446744073709551616""#, "null", "[7]", #"{"n":7}"#]
        for written in refused {
            let body = #"{"revision":\#(written)}"#
            #expect(AnswerBody(Data(body.utf8)).revision == nil, "\(written)")
            #expect(RecordAnswer(Self.response(201, body)).revision == nil, "\(written)")
            #expect(Self.classify(Self.response(201, body)).serverRevision == nil, "\(written)")
        }
        // `revision` first; a refused one leaves `server_revision` to speak.
        #expect(AnswerBody(Data(#"{"revision":"8","server_revision":"9"}"#.utf8)).revision == 8)
        #expect(AnswerBody(Data(#"{"revision":"r8","server_revision":"9"}"#.utf8)).revision == 9)
    }

    @Test func aRecordOverTheCapIsNotKeptByEitherConsumer() {
        let cap = AnswerBody.maxRecordBytes
        #expect(cap == Classification.maxServerCurrentBytes && cap == 64 << 10, "one cap, the one Docs/wire.md promises")
        // A string of n characters is kept as n + 2 bytes, its quotes.
        let atTheCap = String(repeating: "x", count: cap - 2)
        let overTheCap = String(repeating: "x", count: cap - 1)

        let kept = #"{"revision":2,"record":"\#(atTheCap)"}"#
        #expect(RecordAnswer(Self.response(200, kept)).record?.count == cap)
        let notKept = #"{"revision":2,"record":"\#(overTheCap)"}"#
        #expect(RecordAnswer(Self.response(200, notKept)).record == nil)
        #expect(RecordAnswer(Self.response(200, notKept)).revision == 2, "the revision still counts")
        #expect(RecordAnswer(Self.response(200, notKept)).recordWithheld, "sent, not kept: the server's value is unknown")
        #expect(!RecordAnswer(Self.response(200, kept)).recordWithheld)
        #expect(!RecordAnswer(Self.response(200, #"{"revision":2,"record":null}"#)).recordWithheld, "null is no record")
        #expect(!RecordAnswer(Self.response(200, #"{"revision":2}"#)).recordWithheld)
        #expect(RecordAnswer(Self.response(200, #"{"revision":2,"record":{"a":1,"a":2}}"#)).recordWithheld, "a member named twice")

        let conflict = #"{"code":"revision_conflict","server_revision":"3","current":"\#(atTheCap)"}"#
        #expect(Self.classify(Self.response(412, conflict)).serverCurrent?.count == cap)
        #expect(RecordAnswer(Self.response(412, conflict)).record?.count == cap)
        let tooLarge = #"{"code":"revision_conflict","server_revision":"3","current":"\#(overTheCap)"}"#
        let classified = Self.classify(Self.response(412, tooLarge))
        #expect(classified.disposition == .conflicted && classified.serverRevision == "3")
        #expect(classified.serverCurrent == nil)
        #expect(RecordAnswer(Self.response(412, tooLarge)).record == nil)
    }

    @Test func aBodyThatIsNotJSONSaysNothing() {
        let bodies = ["<html><body>Sign in to Wi-Fi</body></html>", #"{"revision":3"#, #"{"revision":3} trailing"#,
                      #"{"code":"\ud800"}"#, " ", ""]
        for body in bodies {
            let read = AnswerBody(Data(body.utf8))
            #expect(read == AnswerBody(Data()), "\(body)")
            #expect(!read.isJSON, "\(body)")
            let answer = RecordAnswer(Self.response(200, body))
            #expect(answer.revision == nil && answer.record == nil && !answer.deleted && answer.type == nil, "\(body)")
            let classified = Self.classify(Self.response(200, body))
            #expect(classified.disposition == .transientFailure && classified.errorCode == "invalid_response", "\(body)")
        }
        // Any JSON value is JSON; a field is read from an object only.
        #expect(AnswerBody(Data("42".utf8)).isJSON && AnswerBody(Data("42".utf8)).revision == nil)
        #expect(Self.classify(Self.response(200, "[]")).disposition == .accepted)
    }

    @Test func bothConsumersReadTheSameBodyTheSameWay() {
        let bodies: [(Int, String)] = [
            (200, #"{"type":"product","id":"p-1","revision":"7","record":{"name":"Gauze","id":"p-1","price":12.50}}"#),
            (201, #"{"revision":7,"record":{"b":[1,{"d":"x/y","c":null}],"a":"\u00e9"}}"#),
            (412, #"{"code":"revision_conflict","message":"moved","server_revision":"9","current":{"z":true,"a":1e400}}"#),
            (409, #"{"code":"revision_conflict","server_revision":9,"current":{"b":1,"a":2}}"#),
        ]
        for (status, body) in bodies {
            let read = AnswerBody(Data(body.utf8))
            let answer = RecordAnswer(Self.response(status, body))
            let classified = Self.classify(Self.response(status, body))
            #expect(answer.revision == read.revision, "\(body)")
            #expect(classified.serverRevision == read.revision.map { String($0) }, "\(body)")
            #expect(answer.record == (read.record ?? read.current), "\(body)")
            if classified.disposition == .conflicted {
                #expect(classified.serverCurrent == read.current && classified.serverCurrent == answer.record, "\(body)")
                #expect(classified.errorMessage == read.message, "\(body)")
            } else {
                #expect(classified.disposition == .accepted && classified.serverCurrent == nil, "\(body)")
            }
        }
    }

    @Test func aRecordIsKeptWithItsMembersInKeyOrderAndItsNumbersAsWritten() {
        let body = #"{"record": {"b": 1, "a": {"d": "x/y\n", "c": [1.50, true, null, -0.0e1]}, "B": "\u00e9\ud83d\ude00"}}"#
        #expect(Self.text(AnswerBody(Data(body.utf8)).record)
            == #"{"B":"é😀","a":{"c":[1.50,true,null,-0.0e1],"d":"x/y\n"},"b":1}"#)
        // Ordered by the names' bytes: upper case before lower, `_` between them.
        let names = #"{"record":{"item_b":0,"itemB":0,"item":0,"Item":0,"é":0,"z":0}}"#
        #expect(Self.text(AnswerBody(Data(names.utf8)).record) == #"{"Item":0,"item":0,"itemB":0,"item_b":0,"z":0,"é":0}"#)
        // A name written twice is not guessed between: the record is not kept, the rest is read.
        let twice = AnswerBody(Data(#"{"revision":4,"record":{"a":{"x":1,"x":2}}}"#.utf8))
        #expect(twice.record == nil && twice.revision == 4)
        // A field written twice is none.
        #expect(AnswerBody(Data(#"{"revision":4,"revision":5}"#.utf8)).revision == nil)
        // `null` is no record; `deleted` is the literal true only.
        #expect(AnswerBody(Data(#"{"record":null}"#.utf8)).record == nil)
        #expect(AnswerBody(Data(#"{"deleted":true}"#.utf8)).deleted)
        #expect(!AnswerBody(Data(#"{"deleted":"true"}"#.utf8)).deleted && !AnswerBody(Data(#"{"deleted":1}"#.utf8)).deleted)
    }

    @Test func theEngineAndTheBatchWordReadOneTableOfStatuses() {
        let json = ["Content-Type": "application/json"]
        let replayed = ["Content-Type": "application/json", "Idempotent-Replayed": "true"]
        let rows: [(Int, [String: String], String, Disposition, BatchOutcome)] = [
            (200, json, "{}", .accepted, .accepted),
            (201, replayed, "{}", .replayed, .replayed),
            (204, [:], "", .accepted, .accepted),
            (409, json, #"{"code":"idempotency_conflict"}"#, .blocked, .keyConflict),
            (422, json, #"{"code":"idempotency_conflict"}"#, .blocked, .keyConflict),
            (409, json, #"{"code":"idempotency_in_progress"}"#, .transientFailure, .inProgress),
            (412, json, "{}", .conflicted, .revisionConflict),
            (409, json, #"{"code":"revision_conflict"}"#, .conflicted, .revisionConflict),
            (401, [:], "", .unauthorized, .unauthorized),
            (403, [:], "", .blocked, .rejected),
            (404, [:], "", .rejected, .rejected),
            (422, json, #"{"code":"validation_failed"}"#, .rejected, .rejected),
            (408, [:], "", .transientFailure, .retry),
            (429, [:], "", .transientFailure, .retry),
            (503, [:], "", .transientFailure, .retry),
            (302, [:], "", .transientFailure, .retry),
            (100, [:], "", .transientFailure, .retry),
            // A code on a 2xx is not a refusal's; a replayed refusal is still a refusal.
            (200, json, #"{"code":"idempotency_conflict"}"#, .accepted, .accepted),
            (422, replayed, #"{"code":"validation_failed"}"#, .rejected, .rejected),
        ]
        for (status, headers, body, disposition, outcome) in rows {
            let response = TransportResponse(statusCode: status, headers: headers, body: Data(body.utf8))
            #expect(Self.classify(response).disposition == disposition, "\(status) \(body)")
            #expect(BatchOutcome(status: status, headers: headers, body: Data(body.utf8)) == outcome, "\(status) \(body)")
        }
    }
}
