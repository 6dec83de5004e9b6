import Foundation
import Testing

/// Requests a hostile client or a careless one sends, byte for byte over a raw socket, each class
/// against a server on every storage: every case answered as expected, and the three stores
/// answering every case alike (status, code, field, message, replay, each batch result) and
/// ending with the same applied counts and records. A server that crashed fails the test process;
/// one that stopped answering fails the closing read.
@Suite("Hostile input, alike on every store", .timeLimit(.minutes(10)))
struct HostileInputTests {
    @Test(arguments: HostileClass.allCases)
    func everyStoreAnswersEveryCaseAlikeAndAsExpected(_ hostile: HostileClass) async throws {
        let cases = hostile.cases
        #expect((4...24).contains(cases.count), "a bounded number of cases per class")
        var transcripts: [ServerStorageKind: Transcript] = [:]
        for storage in ServerStorageKind.allCases {
            let transcript = try await onThread { try Transcript.run(cases, on: storage) }
            transcripts[storage] = transcript
            for (index, hostileCase) in cases.enumerated() {
                let answer = transcript.answers[index]
                #expect(hostileCase.expect.accepts(answer), "\(hostile) on \(storage): \(hostileCase.name): answered \(answer)")
            }
            if let applied = hostile.applied {
                #expect(transcript.applied == applied, "\(hostile) on \(storage): applied \(transcript.applied)")
            }
            #expect(transcript.alive, "\(hostile) on \(storage): the server answers after every case")
        }
        let memory = try #require(transcripts[.memory])
        for storage in [ServerStorageKind.lmdb, .postgres] {
            let other = try #require(transcripts[storage])
            for (index, hostileCase) in cases.enumerated() where memory.answers[index] != other.answers[index] {
                Issue.record("\(hostile): \(hostileCase.name): memory answered \(memory.answers[index]), \(storage) \(other.answers[index])")
            }
            #expect(memory.applied == other.applied, "\(hostile): applied on memory \(memory.applied), on \(storage) \(other.applied)")
            #expect(memory.records == other.records, "\(hostile): records on memory \(memory.records), on \(storage) \(other.records)")
        }
    }
}

// MARK: The classes and their cases

private let nfc = "caf\u{E9}"
private let nfd = "cafe\u{301}"

enum HostileClass: String, CaseIterable, CustomStringConvertible, Sendable {
    /// Header values that are not UTF-8, or hold control characters, or are too long (item 2).
    case headerBytes
    /// Keys, business ids and record ids equal as Swift strings and distinct in bytes (item 3).
    case unicodeEquivalence
    /// `/_control/applied` keeping byte-distinct keys apart (item 4).
    case appliedKeys
    /// Values no store can keep: U+0000, ids too long for a key (item 5).
    case unstorableValues
    /// Escapes of half a surrogate pair, and raw bytes that are not UTF-8, in JSON.
    case loneSurrogates
    /// Numbers that are not whole, or out of range (item 7).
    case numbers
    /// Headers sent twice (item 8).
    case repeatedHeaders
    /// Lengths beyond any limit, and weak entity tags (item 9).
    case framing
    /// JSON members written twice.
    case repeatedMembers
    /// Business ids, keys and record ids at their longest, and beyond.
    case keyLengths
    /// Deletes: stale, weak and malformed `If-Match`, copies, tombstones, ids that differ only
    /// in their bytes, in a batch.
    case deletes

    var description: String { rawValue }

    var cases: [HostileCase] {
        switch self {
        case .headerBytes:
            return [
                .init("a key ending in byte FF", post(key: bytes("op-") + [0xFF], body: #"{"id":"h-1"}"#), .problem(400, "idempotency_key_invalid")),
                .init("a key ending in byte FE", post(key: bytes("op-") + [0xFE], body: #"{"id":"h-1"}"#), .problem(400, "idempotency_key_invalid")),
                .init("a key with a truncated sequence", post(key: [0xC3, 0x28], body: #"{"id":"h-2"}"#), .problem(400, "idempotency_key_invalid")),
                .init("a key holding an encoded surrogate", post(key: bytes("op-") + [0xED, 0xA0, 0x80], body: #"{"id":"h-3"}"#),
                      .problem(400, "idempotency_key_invalid")),
                .init("a key holding a C1 control", post(key: bytes("op-") + [0xC2, 0x85], body: #"{"id":"h-4"}"#),
                      .problem(400, "idempotency_key_invalid")),
                .init("a business id of byte FF", post(key: bytes("b-1"), business: [0xFF], body: #"{"id":"h-5"}"#),
                      .problem(400, "business_id_invalid")),
                .init("a business id of byte FE", post(key: bytes("b-2"), business: [0xFE], body: #"{"id":"h-5"}"#),
                      .problem(400, "business_id_invalid")),
                .init("a business id holding a C1 control", post(key: bytes("b-3"), business: bytes("shop") + [0xC2, 0x9F], body: #"{"id":"h-6"}"#),
                      .problem(400, "business_id_invalid")),
                .init("a path holding a byte beyond ASCII", raw("PATCH", bytes("/products/") + [0xFF], key: bytes("u-1"), body: "{}"),
                      .problem(400, "malformed_request")),
                .init("a UTF-8 key, accepted", post(key: bytes("op-" + nfc), body: #"{"id":"h-7"}"#), .status(201)),
            ]
        case .unicodeEquivalence:
            return [
                .init("key in NFC", post(key: bytes("k-" + nfc), body: #"{"id":"e-1"}"#), .status(201)),
                .init("the same key in NFD: another write", post(key: bytes("k-" + nfd), body: #"{"id":"e-1"}"#), .status(201, revision: 2)),
                .init("the NFD key again: its replay", post(key: bytes("k-" + nfd), body: #"{"id":"e-1"}"#), .status(201, revision: 2, replayed: true)),
                .init("record id in NFC", post(key: bytes("r-1"), body: #"{"id":"\#(nfc)"}"#), .status(201, revision: 1)),
                .init("record id in NFD: another record", post(key: bytes("r-2"), body: #"{"id":"\#(nfd)"}"#), .status(201, revision: 1)),
                .init("business in NFC", post(key: bytes("b-1"), business: bytes(nfc), body: #"{"id":"p-1"}"#), .status(201, revision: 1)),
                .init("business in NFD: another business", post(key: bytes("b-1"), business: bytes(nfd), body: #"{"id":"p-1"}"#),
                      .status(201, revision: 1)),
                .init("an update of the NFD record", raw("PATCH", bytes("/products/cafe%CC%81"), key: bytes("u-1"), body: #"{"n":1}"#),
                      .status(200, revision: 2)),
                .init("an update of the NFC record", raw("PATCH", bytes("/products/caf%C3%A9"), key: bytes("u-2"), body: #"{"n":2}"#),
                      .status(200, revision: 2)),
                .init("a batch of operation ids in NFC and NFD",
                      batch([op("o-" + nfc, key: "bk-1", payload: #"{"id":"q-1"}"#), op("o-" + nfd, key: "bk-2", payload: #"{"id":"q-2"}"#)]),
                      .batch([.init(201, "accepted"), .init(201, "accepted")])),
            ]
        case .appliedKeys:
            return [
                .init("create under the NFC key", post(key: bytes("a-" + nfc), body: #"{"id":"p-1"}"#), .status(201, revision: 1)),
                .init("update under the NFD key", raw("PATCH", bytes("/products/p-1"), key: bytes("a-" + nfd), body: #"{"x":1}"#),
                      .status(200, revision: 2)),
                .init("a copy of the update", raw("PATCH", bytes("/products/p-1"), key: bytes("a-" + nfd), body: #"{"x":1}"#),
                      .status(200, revision: 2, replayed: true)),
                .init("a batch under a third spelling", batch([op("o-1", key: "a-ca\u{301}fe", payload: #"{"id":"p-2"}"#)]),
                      .batch([.init(201, "accepted")])),
            ]
        case .unstorableValues:
            return [
                .init("setup: p-1", post(key: bytes("s-1"), body: #"{"id":"p-1"}"#), .status(201)),
                .init("an id holding U+0000", post(key: bytes("n-1"), body: #"{"id":"nul\u0000id"}"#), .problem(422, "validation_failed", field: "id")),
                .init("a name holding U+0000", post(key: bytes("n-2"), body: #"{"id":"p-2","name":"a\u0000b"}"#),
                      .problem(422, "validation_failed", field: "name")),
                .init("U+0000 in an array", post(key: bytes("n-3"), body: #"{"id":"p-3","tags":["x","\u0000"]}"#),
                      .problem(422, "validation_failed", field: "tags[1]")),
                .init("U+0000 in a member name", post(key: bytes("n-4"), body: #"{"id":"p-4","a\u0000":1}"#),
                      .problem(422, "validation_failed", field: nil)),
                .init("U+0000 in a patch", raw("PATCH", bytes("/products/p-1"), key: bytes("n-5"), body: #"{"name":"\u0000"}"#),
                      .problem(422, "validation_failed", field: "name")),
                .init("U+0000 in a product id", raw("POST", bytes("/stock-movements"), key: bytes("n-6"), body: #"{"id":"m-1","product_id":"p\u0000"}"#),
                      .problem(422, "validation_failed", field: "product_id")),
                .init("an update of a path id holding %00", raw("PATCH", bytes("/products/p%001"), key: bytes("n-7"), body: "{}"),
                      .problem(404, "not_found")),
                .init("another device's change of a path id holding %00", raw("POST", bytes("/_control/records/product/p%001"), body: ""),
                      .problem(404, "not_found")),
                .init("a batch: business id holding U+0000, an id holding U+0000, a path id holding %00",
                      batch([op("o-1", key: "nb-1", business: #"biz\u0000x"#, payload: #"{"id":"p-5"}"#),
                             op("o-2", key: "nb-2", payload: #"{"id":"nul\u0000"}"#),
                             op("o-3", key: "nb-3", method: "PATCH", endpoint: "/products/a%00b", payload: "{}")]),
                      .batch([.init(400, "rejected", code: "business_id_invalid"),
                              .init(422, "rejected", code: "validation_failed", field: "operations[1].payload.id"),
                              .init(404, "rejected", code: "not_found")])),
            ]
        case .loneSurrogates:
            return [
                .init("an id of a high surrogate alone", post(key: bytes("l-1"), body: #"{"id":"\ud800"}"#), .problem(422, "validation_failed", field: "id")),
                .init("a low surrogate first", post(key: bytes("l-2"), body: #"{"id":"p-1","name":"\udc00x"}"#),
                      .problem(422, "validation_failed", field: "name")),
                .init("a high surrogate before a letter", post(key: bytes("l-3"), body: #"{"id":"p-1","n":"\ud800\u0041"}"#),
                      .problem(422, "validation_failed", field: "n")),
                .init("raw bytes that are not UTF-8", post(key: bytes("l-4"), bodyBytes: bytes(#"{"id":"p-"#) + [0xFF] + bytes(#""}"#)),
                      .problem(422, "validation_failed", field: "id")),
                .init("a whole pair, accepted", post(key: bytes("l-5"), body: #"{"id":"p-\ud83d\ude00"}"#), .status(201, revision: 1)),
                .init("a batch key of a surrogate alone", batch([op("o-1", key: #"\ud800"#, payload: #"{"id":"p-2"}"#)]),
                      .problem(400, "batch_invalid", message: "operations[0].idempotency_key")),
                .init("a batch business id of a surrogate alone", batch([op("o-1", key: "k", business: #"\udfff"#, payload: #"{"id":"p-2"}"#)]),
                      .problem(400, "batch_invalid", message: "operations[0].business_id")),
            ]
        case .numbers:
            return [
                .init("payload_version 1.5", batch([op("o-1", key: "v-1", version: "1.5", payload: #"{"id":"p-1"}"#)]),
                      .problem(400, "batch_invalid", message: "operations[0].payload_version")),
                .init("payload_version 2^63", batch([op("o-1", key: "v-2", version: "9223372036854775808", payload: #"{"id":"p-1"}"#)]),
                      .problem(400, "batch_invalid", message: "operations[0].payload_version is 9223372036854775808, out of range")),
                .init("payload_version 1e400", batch([op("o-1", key: "v-3", version: "1e400", payload: #"{"id":"p-1"}"#)]),
                      .problem(400, "batch_invalid", message: "operations[0].payload_version is 1e400, a number out of range")),
                .init("payload_version as a string", batch([op("o-1", key: "v-4", version: #""1""#, payload: #"{"id":"p-1"}"#)]),
                      .problem(400, "batch_invalid", message: "operations[0].payload_version must be a whole number")),
                .init("a price of 1e400", post(key: bytes("v-5"), body: #"{"id":"p-1","price":1e400}"#),
                      .problem(422, "validation_failed", field: "price", message: "out of range")),
                .init("a price of -1e400 in a batch", batch([op("o-1", key: "v-6", payload: #"{"id":"p-1","price":-1e400}"#)]),
                      .batch([.init(422, "rejected", code: "validation_failed", field: "operations[0].payload.price")])),
                .init("a price of 1e308, accepted", post(key: bytes("v-7"), body: #"{"id":"p-1","price":1e308}"#), .status(201, revision: 1)),
                .init("thirty digits, accepted", post(key: bytes("v-8"), body: #"{"id":"p-2","n":123456789012345678901234567890}"#),
                      .status(201, revision: 1)),
            ]
        case .repeatedHeaders:
            return [
                .init("setup: p-1", post(key: bytes("s-1"), body: #"{"id":"p-1"}"#), .status(201)),
                .init("the key twice, the same", raw("POST", bytes("/products"), headers: [bytes("Idempotency-Key: k-1"), bytes("Idempotency-Key: k-1")],
                                                     body: #"{"id":"p-2"}"#), .problem(400, "idempotency_key_invalid")),
                .init("the key twice, different", raw("POST", bytes("/products"), headers: [bytes("Idempotency-Key: k-1"), bytes("Idempotency-Key: k-2")],
                                                      body: #"{"id":"p-2"}"#), .problem(400, "idempotency_key_invalid")),
                .init("If-Match twice", raw("PATCH", bytes("/products/p-1"), key: bytes("u-1"),
                                            headers: [bytes(#"If-Match: "999""#), bytes(#"If-Match: "1""#)], body: #"{"n":1}"#),
                      .problem(400, "if_match_invalid")),
                .init("If-Match listing both in one header", raw("PATCH", bytes("/products/p-1"), key: bytes("u-2"),
                                                                headers: [bytes(#"If-Match: "999", "1""#)], body: #"{"n":1}"#),
                      .status(200, revision: 2)),
                .init("the business twice", raw("POST", bytes("/products"), key: bytes("k-3"),
                                                headers: [bytes("X-Business-ID: a"), bytes("X-Business-ID: b")], body: #"{"id":"p-3"}"#),
                      .problem(400, "business_id_invalid")),
            ]
        case .framing:
            return [
                .init("setup: p-1", post(key: bytes("s-1"), body: #"{"id":"p-1"}"#), .status(201)),
                .init("Content-Length 2^60", rawHead("POST /products HTTP/1.1\r\nIdempotency-Key: f-1\r\nContent-Length: 1152921504606846976\r\n\r\n"),
                      .problem(413, "body_too_large")),
                .init("Content-Length of 23 digits", rawHead("POST /products HTTP/1.1\r\nIdempotency-Key: f-2\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
                      .problem(413, "body_too_large")),
                .init("Content-Length 2 MB", rawHead("POST /products HTTP/1.1\r\nIdempotency-Key: f-3\r\nContent-Length: 2000000\r\n\r\n"),
                      .problem(413, "body_too_large")),
                .init("Content-Length 1e3", rawHead("POST /products HTTP/1.1\r\nIdempotency-Key: f-4\r\nContent-Length: 1e3\r\n\r\n"),
                      .problem(400, "malformed_request")),
                .init("Content-Length -1", rawHead("POST /products HTTP/1.1\r\nIdempotency-Key: f-5\r\nContent-Length: -1\r\n\r\n"),
                      .problem(400, "malformed_request")),
                .init("If-Match naming the revision as a weak tag", raw("PATCH", bytes("/products/p-1"), key: bytes("w-1"),
                                                                        headers: [bytes(#"If-Match: W/"1""#)], body: #"{"n":1}"#),
                      .problem(412, "revision_conflict", message: "a weak tag never matches")),
                .init("If-Match with a weak tag and another revision", raw("PATCH", bytes("/products/p-1"), key: bytes("w-2"),
                                                                           headers: [bytes(#"If-Match: W/"1", "7""#)], body: #"{"n":1}"#),
                      .problem(412, "revision_conflict", message: "weak tag")),
            ]
        case .repeatedMembers:
            return [
                .init("the id twice", post(key: bytes("d-1"), body: #"{"id":"p-1","id":"p-2"}"#),
                      .problem(422, "validation_failed", field: "id", message: "appears 2 times")),
                .init("the revision sent", post(key: bytes("d-2"), body: #"{"id":"p-1","revision":3}"#),
                      .problem(422, "validation_failed", field: "revision")),
                .init("a batch key twice", batchText(#"{"operations":[{"operation_id":"o-1","idempotency_key":"a","idempotency_key":"b","business_id":"default","operation_type":"t","method":"POST","endpoint":"/products","payload_version":1,"payload":"e30="}]}"#),
                      .problem(400, "batch_invalid", message: "operations[0].idempotency_key appears 2 times")),
                .init("operations twice", batchText(#"{"operations":[],"operations":[]}"#),
                      .problem(400, "batch_invalid", message: "operations appears 2 times")),
                .init("other members twice, kept as sent", post(key: bytes("d-3"), body: #"{"id":"p-3","n":1,"n":2}"#), .status(201, revision: 1)),
            ]
        case .keyLengths:
            let business200 = String(repeating: "b", count: 200)
            let key255 = String(repeating: "k", count: 255)
            let id255 = String(repeating: "i", count: 255)
            return [
                .init("every part at its longest", post(key: bytes(key255), business: bytes(business200), body: #"{"id":"\#(id255)"}"#),
                      .status(201, revision: 1)),
                .init("its copy", post(key: bytes(key255), business: bytes(business200), body: #"{"id":"\#(id255)"}"#),
                      .status(201, revision: 1, replayed: true)),
                .init("a business id one byte longer", post(key: bytes("k-1"), business: bytes(business200 + "b"), body: #"{"id":"p-1"}"#),
                      .problem(400, "business_id_invalid")),
                .init("a key one byte longer", post(key: bytes(key255 + "k"), body: #"{"id":"p-1"}"#), .problem(400, "idempotency_key_invalid")),
                .init("an id one byte longer", post(key: bytes("k-2"), body: #"{"id":"\#(id255)i"}"#), .problem(422, "validation_failed", field: "id")),
                .init("an update of a path id one byte longer", raw("PATCH", bytes("/products/" + id255 + "i"), key: bytes("k-3"), body: "{}"),
                      .problem(404, "not_found")),
                .init("another device's change of an unknown type", raw("POST", bytes("/_control/records/" + String(repeating: "t", count: 600) + "/p-1"), body: ""),
                      .problem(404, "not_found")),
                .init("a batch business id one byte longer", batch([op("o-1", key: "k-4", business: business200 + "b", payload: #"{"id":"p-1"}"#)]),
                      .batch([.init(400, "rejected", code: "business_id_invalid")])),
            ]
        case .deletes:
            return [
                .init("setup: p-1", post(key: bytes("s-1"), body: #"{"id":"p-1"}"#), .status(201, revision: 1)),
                .init("setup: the NFC record", post(key: bytes("s-2"), body: #"{"id":"\#(nfc)"}"#), .status(201, revision: 1)),
                .init("a delete without a key", raw("DELETE", bytes("/products/p-1"), body: ""), .problem(400, "idempotency_key_required")),
                .init("a stale If-Match", raw("DELETE", bytes("/products/p-1"), key: bytes("d-1"), headers: [bytes(#"If-Match: "7""#)], body: ""),
                      .problem(412, "revision_conflict", message: "at revision 1")),
                .init("If-Match naming the revision as a weak tag", raw("DELETE", bytes("/products/p-1"), key: bytes("d-2"),
                                                                        headers: [bytes(#"If-Match: W/"1""#)], body: ""),
                      .problem(412, "revision_conflict", message: "a weak tag never matches")),
                .init("If-Match that is no tag", raw("DELETE", bytes("/products/p-1"), key: bytes("d-3"), headers: [bytes("If-Match: 1")], body: ""),
                      .problem(400, "if_match_invalid")),
                .init("If-Match twice", raw("DELETE", bytes("/products/p-1"), key: bytes("d-4"),
                                            headers: [bytes(#"If-Match: "1""#), bytes(#"If-Match: "1""#)], body: ""),
                      .problem(400, "if_match_invalid")),
                .init("a path id holding %00", raw("DELETE", bytes("/products/p%001"), key: bytes("d-5"), body: ""), .problem(404, "not_found")),
                .init("the NFD spelling of the NFC record: another record", raw("DELETE", bytes("/products/cafe%CC%81"), key: bytes("d-6"), body: ""),
                      .problem(404, "not_found")),
                .init("the NFC record", raw("DELETE", bytes("/products/caf%C3%A9"), key: bytes("d-7"), headers: [bytes(#"If-Match: "1""#)], body: ""),
                      .status(200, revision: 2)),
                .init("p-1 with a body, not read", raw("DELETE", bytes("/products/p-1"), key: bytes("d-8"), headers: [bytes(#"If-Match: "1""#)],
                                                      body: "not JSON"),
                      .status(200, revision: 2)),
                .init("its copy", raw("DELETE", bytes("/products/p-1"), key: bytes("d-8"), headers: [bytes(#"If-Match: "1""#)], body: "not JSON"),
                      .status(200, revision: 2, replayed: true)),
                .init("its key with another body", raw("DELETE", bytes("/products/p-1"), key: bytes("d-8"), body: ""),
                      .problem(409, "idempotency_conflict")),
                .init("an update of the tombstone", raw("PATCH", bytes("/products/p-1"), key: bytes("d-9"), body: #"{"n":1}"#),
                      .problem(404, "not_found", message: "deleted at revision 2")),
                .init("another device's change of the tombstone", raw("POST", bytes("/_control/records/product/p-1"), body: ""),
                      .problem(404, "not_found")),
                .init("a create of the deleted id", post(key: bytes("d-10"), body: #"{"id":"p-1"}"#), .status(201, revision: 3)),
                .init("a batch: a delete, a stale one, the tombstone's, a copy",
                      batch([op("o-1", key: "bd-1", method: "DELETE", endpoint: "/products/p-1", baseRevision: "3", payload: "{}"),
                             op("o-2", key: "bd-2", method: "DELETE", endpoint: "/products/caf%C3%A9", baseRevision: "1", payload: "{}"),
                             op("o-3", key: "bd-3", method: "DELETE", endpoint: "/products/p-1", payload: "{}"),
                             op("o-4", key: "bd-1", method: "DELETE", endpoint: "/products/p-1", baseRevision: "3", payload: "{}")]),
                      .batch([.init(200, "accepted"), .init(404, "rejected", code: "not_found"), .init(404, "rejected", code: "not_found"),
                              .init(200, "replayed")])),
            ]
        }
    }

    /// What `/_control/applied` holds after the class's cases, when the class checks it: pairs,
    /// since a `[String: Int]` literal of keys in NFC and NFD holds one key twice.
    var applied: [Entry]? {
        let pairs: [(String, Int)]?
        switch self {
        case .headerBytes: pairs = [("op-" + nfc, 1)]
        case .unicodeEquivalence:
            pairs = [("k-" + nfc, 1), ("k-" + nfd, 1), ("r-1", 1), ("r-2", 1), ("b-1", 2), ("u-1", 1), ("u-2", 1), ("bk-1", 1), ("bk-2", 1)]
        case .appliedKeys: pairs = [("a-" + nfc, 1), ("a-" + nfd, 1), ("a-ca\u{301}fe", 1)]
        case .unstorableValues, .repeatedMembers, .framing: pairs = nil
        case .loneSurrogates: pairs = [("l-5", 1)]
        case .numbers: pairs = [("v-7", 1), ("v-8", 1)]
        case .repeatedHeaders: pairs = [("s-1", 1), ("u-2", 1)]
        case .keyLengths: pairs = [(String(repeating: "k", count: 255), 1)]
        case .deletes: pairs = [("s-1", 1), ("s-2", 1), ("d-7", 1), ("d-8", 1), ("d-10", 1), ("bd-1", 1)]
        }
        return pairs?.map { Entry(key: $0.0, count: $0.1) }.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }
}

/// One request and what it must be answered.
struct HostileCase: Sendable {
    var name: String
    var bytes: [UInt8]
    var expect: Expectation

    init(_ name: String, _ bytes: [UInt8], _ expect: Expectation) {
        self.name = name
        self.bytes = bytes
        self.expect = expect
    }
}

/// What an answer must be: its status, and what else the case names.
struct Expectation: Sendable {
    var status: Int
    var code: String?
    var field: String?
    var checksField = false
    var messageContains: String?
    var revision: Int?
    var replayed = false
    var results: [ExpectedResult]?

    struct ExpectedResult: Sendable {
        var status: Int
        var outcome: String
        var code: String?
        var field: String?

        init(_ status: Int, _ outcome: String, code: String? = nil, field: String? = nil) {
            self.status = status
            self.outcome = outcome
            self.code = code
            self.field = field
        }
    }

    static func status(_ status: Int, revision: Int? = nil, replayed: Bool = false) -> Expectation {
        Expectation(status: status, revision: revision, replayed: replayed)
    }

    static func problem(_ status: Int, _ code: String, message: String? = nil) -> Expectation {
        Expectation(status: status, code: code, messageContains: message)
    }

    static func problem(_ status: Int, _ code: String, field: String?, message: String? = nil) -> Expectation {
        Expectation(status: status, code: code, field: field, checksField: true, messageContains: message)
    }

    static func batch(_ results: [ExpectedResult]) -> Expectation {
        Expectation(status: 200, results: results)
    }

    func accepts(_ answer: Answer) -> Bool {
        guard answer.status == status, answer.replayed == replayed else { return false }
        if let code, answer.code != code { return false }
        if checksField, answer.field != field { return false }
        if let messageContains, !(answer.message ?? "").contains(messageContains) { return false }
        if let revision, answer.revision != revision { return false }
        if code != nil, status >= 400, answer.message?.isEmpty != false { return false }
        if let results {
            guard answer.results.count == results.count else { return false }
            for (expected, got) in zip(results, answer.results) {
                guard got.status == expected.status, got.outcome == expected.outcome else { return false }
                if let code = expected.code, got.code != code { return false }
                if let field = expected.field, got.field != field { return false }
            }
        }
        return true
    }
}

// MARK: Requests, byte for byte

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A request with these exact bytes in its request line, headers and body.
private func raw(
    _ method: String, _ path: [UInt8], key: [UInt8]? = nil, business: [UInt8]? = nil, headers: [[UInt8]] = [], body: String
) -> [UInt8] {
    raw(method, path, key: key, business: business, headers: headers, bodyBytes: bytes(body))
}

private func raw(
    _ method: String, _ path: [UInt8], key: [UInt8]? = nil, business: [UInt8]? = nil, headers: [[UInt8]] = [], bodyBytes: [UInt8]
) -> [UInt8] {
    var head = bytes(method + " ") + path + bytes(" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n")
    if let key { head += bytes("Idempotency-Key: ") + key + bytes("\r\n") }
    if let business { head += bytes("X-Business-ID: ") + business + bytes("\r\n") }
    for header in headers { head += header + bytes("\r\n") }
    if !bodyBytes.isEmpty { head += bytes("Content-Type: application/json\r\n") }
    return head + bytes("Content-Length: \(bodyBytes.count)\r\n\r\n") + bodyBytes
}

private func post(key: [UInt8], business: [UInt8]? = nil, body: String) -> [UInt8] {
    raw("POST", bytes("/products"), key: key, business: business, body: body)
}

private func post(key: [UInt8], bodyBytes: [UInt8]) -> [UInt8] {
    raw("POST", bytes("/products"), key: key, bodyBytes: bodyBytes)
}

private func rawHead(_ text: String) -> [UInt8] { bytes(text) }

/// One operation's JSON text; `key`, `business` and `version` go in as written (escapes and
/// all), the payload in base64.
private func op(
    _ id: String, key: String, business: String = "default", method: String = "POST", endpoint: String = "/products",
    version: String = "1", baseRevision: String? = nil, payload: String
) -> String {
    #"{"operation_id":"\#(id)","idempotency_key":"\#(key)","business_id":"\#(business)","operation_type":"product.create","#
        + #""method":"\#(method)","endpoint":"\#(endpoint)","payload_version":\#(version),"#
        + (baseRevision.map { #""base_revision":"\#($0)","# } ?? "")
        + #""payload":"\#(Data(payload.utf8).base64EncodedString())"}"#
}

private func batch(_ operations: [String]) -> [UInt8] {
    batchText(#"{"operations":["# + operations.joined(separator: ",") + "]}")
}

private func batchText(_ body: String) -> [UInt8] {
    raw("POST", bytes("/sync/batch"), body: body)
}

// MARK: What a store answered

/// One answer, reduced to what every store must agree on.
struct Answer: Equatable, Sendable, CustomStringConvertible {
    var status: Int
    var code: String?
    var field: String?
    var message: String?
    var revision: Int?
    var replayed: Bool
    var results: [Result]

    struct Result: Equatable, Sendable {
        var status: Int
        var outcome: String
        var code: String?
        var field: String?
        var message: String?
    }

    init(_ response: RawResponse) {
        status = response.status
        let object = response.json
        code = object?["code"] as? String
        field = object?["field"] as? String
        message = object?["message"] as? String
        revision = (object?["revision"] as? Int) ?? response.header("ETag").flatMap { Int($0.replacingOccurrences(of: "\"", with: "")) }
        replayed = response.header("Idempotent-Replayed") == "true"
        results = (object?["results"] as? [[String: Any]] ?? []).map { result in
            let body = (result["body"] as? String).flatMap { Data(base64Encoded: $0) }
                .flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
            return Result(status: result["status"] as? Int ?? 0, outcome: result["outcome"] as? String ?? "",
                          code: body?["code"] as? String, field: body?["field"] as? String, message: body?["message"] as? String)
        }
    }

    var description: String {
        var text = "\(status)"
        if let code { text += " \(code)" }
        if let field { text += " field \(field)" }
        if replayed { text += " replayed" }
        if let revision { text += " revision \(revision)" }
        if let message { text += ": \(message)" }
        if !results.isEmpty { text += " results \(results.map { "\($0.status) \($0.outcome) \($0.code ?? "") \($0.field ?? "")" })" }
        return text
    }
}

struct Entry: Equatable, Sendable, CustomStringConvertible {
    var key: String
    var count: Int

    static func == (lhs: Entry, rhs: Entry) -> Bool {
        lhs.key.utf8.elementsEqual(rhs.key.utf8) && lhs.count == rhs.count
    }

    var description: String { "\(key.utf8.map { String(format: "%02x", $0) }.joined()): \(count)" }
}

/// A record as `/_control/records` shows it, its texts compared byte for byte.
struct RecordLine: Equatable, Sendable, CustomStringConvertible {
    var type: String
    var business: String
    var id: String
    var revision: Int
    /// A tombstone.
    var deleted: Bool

    static func == (lhs: RecordLine, rhs: RecordLine) -> Bool {
        lhs.type.utf8.elementsEqual(rhs.type.utf8) && lhs.business.utf8.elementsEqual(rhs.business.utf8)
            && lhs.id.utf8.elementsEqual(rhs.id.utf8) && lhs.revision == rhs.revision && lhs.deleted == rhs.deleted
    }

    var description: String { "\(type)/\(business)/\(id)@\(revision)\(deleted ? " deleted" : "")" }
}

/// Every answer of one class's cases on one store, and what the store holds after them.
struct Transcript: Sendable {
    var answers: [Answer] = []
    var applied: [Entry] = []
    var records: [RecordLine] = []
    var alive = false

    static func run(_ cases: [HostileCase], on storage: ServerStorageKind) throws -> Transcript {
        let (server, cleanUp) = try storage.start()
        defer {
            server.stop()
            cleanUp()
        }
        var transcript = Transcript()
        for hostileCase in cases {
            let connection = try RawConnection(port: server.port)
            try connection.send(hostileCase.bytes)
            transcript.answers.append(Answer(try connection.readResponse()))
        }
        let applied = try send(server.port, "GET /_control/applied HTTP/1.1\r\nConnection: close\r\n\r\n")
        transcript.alive = applied.status == 200
        transcript.applied = Self.appliedEntries(applied.json ?? [:])
        let records = try send(server.port, "GET /_control/records HTTP/1.1\r\nConnection: close\r\n\r\n")
        transcript.records = (records.json?["records"] as? [[String: Any]] ?? []).map { record in
            RecordLine(type: record["type"] as? String ?? "", business: record["business_id"] as? String ?? "",
                       id: record["id"] as? String ?? "", revision: record["revision"] as? Int ?? 0,
                       deleted: record["deleted"] as? Bool ?? false)
        }
        return transcript
    }

    private static func send(_ port: UInt16, _ text: String) throws -> RawResponse {
        let connection = try RawConnection(port: port)
        try connection.send(text)
        return try connection.readResponse()
    }

    /// `{"applied":[{"key","count"}]}`, in byte order of the keys; an answer of another shape
    /// (an object of counts by key) read as its members.
    private static func appliedEntries(_ object: [String: Any]) -> [Entry] {
        let entries: [Entry]
        if let list = object["applied"] as? [[String: Any]] {
            entries = list.map { Entry(key: $0["key"] as? String ?? "", count: $0["count"] as? Int ?? 0) }
        } else {
            entries = object.map { Entry(key: $0.key, count: $0.value as? Int ?? 0) }
        }
        return entries.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }
}
