import Foundation
import OutboxCrypto
import OutboxWire
import Testing

/// A page body with `changes` spliced in as written, and its other fields as given.
private func body(
    changes: String = "[]", count: String = "0", digest: String? = nil, limits: String? = nil,
    from: String = #""3-41-0""#, cursor: String = #""3-43-0""#, hasMore: String = "false", business: String = #""pharmacy-7""#
) -> Data {
    let digestText = digest ?? "\"" + FeedDigest.page([]).hex + "\""
    var text = #"{"business":\#(business),"from":\#(from),"cursor":\#(cursor),"has_more":\#(hasMore),"count":\#(count),"digest":\#(digestText)"#
    if let limits { text += #","limits":"# + limits }
    text += #","changes":"# + changes + "}"
    return Data(text.utf8)
}

private func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

@Suite("Reading and writing a feed page")
struct FeedPageReadingTests {
    @Test func quotedTextReadsBackAsItWasAndPlainTextIsOnlyQuoted() throws {
        for text in ["p-1", "café", "", "a/b", "tab\there", "quote\"d", "back\\slash", "\u{1}\u{1F}\u{7F}", "line\nbreak", "😀 \u{2028}"] {
            let quoted = JSONNode.quoted(text)
            #expect(try JSONNode.read(Array(quoted.utf8)) == .string(text), "\(quoted)")
            #expect(!quoted.dropFirst().dropLast().utf8.contains { $0 < 0x20 }, "no raw control character: \(quoted)")
        }
        #expect(JSONNode.quoted("stock_movement-99/é") == "\"stock_movement-99/é\"")
        #expect(JSONNode.quoted("a\u{1}\"") == #""a\u0001\"""#)
    }

    @Test func aChangesCountedBytesAreTheBytesItWrites() throws {
        let changes = [
            FeedChange(type: "product", id: "p1", revision: 0, record: Data(#"{"id":"p1"}"#.utf8)),
            FeedChange(type: "pro\"duct", id: "caf\u{E9}\n\u{1}", revision: 9, record: nil),
            FeedChange(type: "t", id: "", revision: 10, record: Data("{}".utf8)),
            FeedChange(type: "stock_movement", id: "m-99", revision: UInt64.max, record: Data(#"{ "qty" : -3 }"#.utf8)),
        ]
        for change in changes {
            #expect(change.encodedCount == change.encoded().count, "\(change)")
            let page = FeedPage(business: "b", from: .start(of: 1), cursor: .start(of: 1), hasMore: false, count: 1,
                                digest: FeedDigest.page([change.digestInput]), changes: [change])
            #expect(try FeedPage.decoded(from: page.encoded()).changes == [change])
        }
    }

    @Test(arguments: [
        #"{"id":"p1","price":14,"revision":19}"#,
        #"{ "price" : 14 ,  "id":"p1" }"#,
        "{\n\t\"id\": \"p1\",\n\t\"note\": \"caf\\u00e9 \\\"quoted\\\" \\/ slash\"\n}",
        #"{"id":"p1","name":"cafe\u0301","nested":{"b":[1,2.50,1e3],"a":null}}"#,
        #"{}"#,
    ])
    func aRecordIsKeptAsTheExactBytesOfItsValue(_ record: String) throws {
        let page = try FeedPage.decoded(from: body(
            changes: #"[ {"type":"product","id":"p1","revision":19,"record":"# + record + #"  } ]"#, count: "1"))
        let change = try #require(page.changes.first)
        #expect(change.record == Data(record.utf8), "white space, key order and escapes as sent")
        #expect(change.digestInput.recordHash == SHA256Digest(of: Data(record.utf8)))
    }

    @Test func everyFieldIsReadAndATombstoneHasNoRecord() throws {
        let limits = #"{"max_limit":1000,"max_page_bytes":4194304,"tombstone_retention_seconds":2592000}"#
        let changes = #"[{"type":"product","id":"p1","revision":19,"record":{"id":"p1"}},"#
            + #"{"type":"product","id":"p2","revision":4,"deleted":true},"#
            + #"{"type":"employee","id":"e1","revision":2,"deleted":false,"record":{"id":"e1"}}]"#
        let page = try FeedPage.decoded(from: body(changes: changes, count: "3", limits: limits, hasMore: "true"))
        #expect(page.business == "pharmacy-7")
        #expect(page.from == FeedPosition(epoch: 3, major: 41))
        #expect(page.cursor == FeedPosition(epoch: 3, major: 43))
        #expect(page.hasMore)
        #expect(page.count == 3)
        #expect(page.limits == FeedLimits(maxLimit: 1000, maxPageBytes: 4_194_304, tombstoneRetentionSeconds: 2_592_000))
        #expect(page.changes.map(\.id) == ["p1", "p2", "e1"])
        #expect(page.changes.map(\.isDelete) == [false, true, false])
        #expect(page.changes.map(\.revision) == [19, 4, 2])
        #expect(page.changes[2].type == "employee")
    }

    @Test func aLongPageKeepsEachRecordWithItsOwnChange() throws {
        let changes = (0..<1_000).map { number in
            FeedChange(type: "product", id: "p\(number)", revision: UInt64(number + 1),
                       record: number % 7 == 3 ? nil : Data(#"{"id":"p\#(number)", "n": \#(number)}"#.utf8))
        }
        let written = FeedPage(business: "b", from: .start(of: 1), cursor: FeedPosition(epoch: 1, major: 1_000), hasMore: false,
                               count: changes.count, digest: FeedDigest.page(changes.map(\.digestInput)), changes: changes)
        let read = try FeedPage.decoded(from: written.encoded())
        #expect(read.changes == changes)
        #expect(read.computedDigest == written.digest)
    }

    @Test func aPageWithoutLimitsReadsAsNone() throws {
        #expect(try FeedPage.decoded(from: body()).limits == nil)
    }

    @Test func aCountThatDisagreesIsReadAsSentForThePageCheckToRefuse() throws {
        let page = try FeedPage.decoded(from: body(count: "2"))
        #expect(page.count == 2 && page.changes.isEmpty)
    }

    @Test func aPageWrittenByTheServerSideReadsBackWithItsDigest() throws {
        let changes = [
            FeedChange(type: "product", id: "p1", revision: 19, record: Data("{ \"id\":\"p1\", \"price\":14 }".utf8)),
            FeedChange(type: "product", id: "caf\u{E9}", revision: 4, record: nil),
            FeedChange(type: "product", id: "q\"uote\\d", revision: 7, record: Data(#"{"id":"q\"uote\\d"}"#.utf8)),
        ]
        let written = FeedPage(
            business: "pharmacy-7", from: .start(of: 3), cursor: FeedPosition(epoch: 3, major: 3), hasMore: false, count: changes.count,
            digest: FeedDigest.page(changes.map(\.digestInput)),
            limits: FeedLimits(maxLimit: 1000, maxPageBytes: 1 << 22, tombstoneRetentionSeconds: 60), changes: changes)
        let read = try FeedPage.decoded(from: written.encoded())
        #expect(read == written)
        #expect(read.computedDigest == read.digest)
    }

    @Test(arguments: [
        (#"[1]"#, "", "the body must be an object"),
        (#"{"business":"b""#, "", "not JSON"),
        (text(body(business: "7")), "business", "business must be a string, not a number"),
        (text(body(from: #""3-41""#)), "from", "from: feed position '3-41' is not three numbers"),
        (text(body(cursor: "null")), "cursor", "cursor must be a string, not null"),
        (text(body(hasMore: #""no""#)), "has_more", "has_more must be true or false"),
        (text(body(count: "-1")), "count", "count is -1: it must be a whole number from 0"),
        (text(body(count: "1.5")), "count", "count is 1.5"),
        (text(body(digest: #""ABC""#)), "digest", "digest must be a SHA-256 in 64 lowercase hex digits"),
        (text(body(limits: #"{"max_limit":0,"max_page_bytes":1,"tombstone_retention_seconds":1}"#)),
         "limits.max_limit", "limits.max_limit must be at least 1"),
        (text(body(limits: #"{"max_limit":10,"tombstone_retention_seconds":1}"#)),
         "limits.max_page_bytes", "limits.max_page_bytes is missing"),
        (text(body(changes: "{}")), "changes", "changes must be an array, not an object"),
        (text(body(changes: #"["x"]"#, count: "1")), "changes[0]", "changes[0] must be an object, not a string"),
        (text(body(changes: #"[{"id":"p1","revision":1,"record":{}}]"#, count: "1")), "changes[0].type", "changes[0].type is missing"),
        (text(body(changes: #"[{"type":"product","id":"p1","id":"p2","revision":1,"record":{}}]"#, count: "1")), "changes[0].id", "changes[0].id appears 2 times"),
        (text(body(changes: #"[{"type":"product","id":"p1","revision":"1","record":{}}]"#, count: "1")), "changes[0].revision", "must be a whole number, not a string"),
        (text(body(changes: #"[{"type":"product","id":"p1","revision":18446744073709551616,"record":{}}]"#, count: "1")), "changes[0].revision", "18446744073709551616"),
        (text(body(changes: #"[{"type":"product","id":"p1","revision":1}]"#, count: "1")), "changes[0].record", "changes[0].record is missing"),
        (text(body(changes: #"[{"type":"product","id":"p1","revision":1,"deleted":true,"record":{}}]"#, count: "1")), "changes[0].record", "a tombstone holds none"),
        (text(body(changes: #"[{"type":"product","id":"p1","revision":1,"deleted":1}]"#, count: "1")), "changes[0].deleted", "must be true or false, not a number"),
        (text(body(changes: #"[{"type":"product","id":"p1","revision":1,"record":[1]}]"#, count: "1")), "changes[0].record", "must be an object, not an array"),
        (text(body(changes: #"[{"type":"product","id":"p1","revision":1,"record":{"a":"\ud800"}}]"#, count: "1")), "changes[0].record.a", "half of a UTF-16 surrogate pair"),
    ])
    func eachMalformedFieldIsNamedByItsPath(_ whole: String, _ field: String, _ words: String) {
        let data = Data(whole.utf8)
        #expect {
            try FeedPage.decoded(from: data)
        } throws: { error in
            guard let invalid = error as? FeedPage.Invalid else { return false }
            return invalid.field == field && invalid.message.contains(words)
        }
    }

    @Test(arguments: FeedResnapshot.Reason.allCases)
    func aResnapshotBodyRoundTripsWithItsReasonAndEpoch(_ reason: FeedResnapshot.Reason) throws {
        let refusal = FeedResnapshot(reason: reason, message: "start again \"now\"", epoch: 4)
        let text = String(decoding: refusal.body, as: UTF8.self)
        #expect(text.hasPrefix(#"{"code":"resnapshot_required","reason":""# + reason.rawValue + "\""))
        #expect(try FeedResnapshot.decoded(from: refusal.body) == refusal)
    }

    @Test(arguments: [
        (#"{"code":"revision_conflict","reason":"expired","epoch":1}"#, "code"),
        (#"{"code":"resnapshot_required","reason":"gone","epoch":1}"#, "reason"),
        (#"{"code":"resnapshot_required","reason":"ahead","epoch":-1}"#, "epoch"),
        (#"{"code":"resnapshot_required","reason":"ahead"}"#, "epoch"),
    ])
    func aResnapshotBodyThatIsNotOneNamesItsField(_ text: String, _ field: String) {
        #expect {
            try FeedResnapshot.decoded(from: Data(text.utf8))
        } throws: { error in
            (error as? FeedPage.Invalid)?.field == field
        }
    }
}

@Suite("Byte spans of values read strictly")
struct JSONNodeSpanTests {
    @Test func theSpansOfPickedValuesAreTheirExactBytesInTheOrderRead() throws {
        let text = #"{"a": [ {"x" :1}, "two\u0021" , 3.50 ], "b":{ }, "a2":null}"#
        let bytes = Array(text.utf8)
        let (node, spans) = try JSONNode.read(bytes) { path in
            path.components.count == 2 || path == JSONPath.root.member("b")
        }
        #expect(spans.map(\.path.description) == ["a[0]", "a[1]", "a[2]", "b"])
        #expect(spans.map { String(decoding: bytes[$0.range], as: UTF8.self) } == [#"{"x" :1}"#, #""two\u0021""#, "3.50", "{ }"])
        // A picked object or array is its kind alone (its bytes are the caller's); scalars and
        // everything not picked are built as without spans.
        #expect(node == (try JSONNode.read(Array(#"{"a": [ {}, "two!" , 3.50 ], "b":{ }, "a2":null}"#.utf8))))
    }

    @Test func aValueInsideAPickedOneIsNotPickedAgain() throws {
        #expect(try JSONNode.read(Array(#"{"a":1}"#.utf8), spans: nil).spans.isEmpty)
        #expect(try JSONNode.read(Array(#"{"a":1}"#.utf8)) { _ in true }.spans.map(\.path.description) == [""])
        #expect(try JSONNode.read(Array(#"[1,{"a":[2]}]"#.utf8)) { $0.components.count == 1 }.spans.map(\.path.description) == ["[0]", "[1]"])
    }

    @Test func aPickedValueIsCheckedUnderEveryRuleThoughNotBuilt() {
        for bad in [#"{"a":[{"x":01}]}"#, #"{"a":[{"x":"\ud800"}]}"#, #"{"a":[{"x" 1}]}"#, #"{"a":[[1,]]}"#] {
            #expect(throws: JSONReadError.self, "\(bad)") { try JSONNode.read(Array(bad.utf8)) { $0.components.count == 2 } }
        }
    }
}

@Suite("Reading and writing snapshot pages and summaries")
struct SnapshotReadingTests {
    @Test func aSnapshotPageRoundTripsWithItsRecordsBytes() throws {
        let records = [FeedChange(type: "product", id: "p1", revision: 3, record: Data(#"{ "id" : "p1" }"#.utf8))]
        let written = SnapshotPage(business: "b", position: FeedPosition(epoch: 2, major: 9), hasMore: true, count: 1,
                                   digest: FeedDigest.page(records.map(\.digestInput)),
                                   limits: FeedLimits(maxLimit: 5, maxPageBytes: 100, tombstoneRetentionSeconds: 1), records: records)
        let read = try SnapshotPage.decoded(from: written.encoded())
        #expect(read == written && read.computedDigest == read.digest)
    }

    @Test func aTombstoneInASnapshotIsRefusedByItsPath() {
        let body = #"{"business":"b","position":"1-1-0","has_more":false,"count":1,"digest":""# + FeedDigest.page([]).hex
            + #"","records":[{"type":"product","id":"p1","revision":2,"deleted":true}]}"#
        #expect {
            try SnapshotPage.decoded(from: Data(body.utf8))
        } throws: { error in
            (error as? FeedPage.Invalid)?.field == "records[0].deleted"
        }
    }

    @Test func aSummaryRoundTripsAndAMissingFieldIsNamed() throws {
        let summary = FeedSummary(business: "b", type: "product", position: FeedPosition(epoch: 1, major: 4), count: 2,
                                  digest: FeedDigest.summary([(id: "a", revision: UInt64(1)), (id: "b", revision: UInt64(2))]))
        #expect(try FeedSummary.decoded(from: summary.encoded()) == summary)
        #expect {
            try FeedSummary.decoded(from: Data(#"{"business":"b","type":"product","count":2}"#.utf8))
        } throws: { error in
            (error as? FeedPage.Invalid)?.field == "position"
        }
    }
}
