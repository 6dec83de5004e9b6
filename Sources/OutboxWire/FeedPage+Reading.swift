public import Foundation
import OutboxCrypto

extension FeedPage {
    /// Why a body is not a feed page: the field at fault by its JSON path (`changes[2].revision`;
    /// empty for the body as a whole) and what is wrong, so a server's author knows what to fix.
    public struct Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        public var field: String
        public var message: String
        public var description: String { message }
    }

    /// Reads a `GET /sync/changes` body strictly: every field the page needs present once and of
    /// its type, positions in their text, the digest in 64 lowercase hex digits, revisions and
    /// counts whole numbers in digits. Each change is a record (`record`, a JSON object, and no
    /// `deleted` or `"deleted":false`) or a tombstone (`"deleted":true` and no `record`). A
    /// change's ``FeedChange/record`` is the exact bytes of its `record` value in `body`: the
    /// page digest hashes those bytes, so nothing is re-encoded.
    ///
    /// The count and the digest are read, not checked against the changes: comparing them is
    /// the engine's page check, which journals a refusal.
    /// - Throws: ``Invalid`` naming the first field at fault.
    public static func decoded(from body: Data) throws(Invalid) -> FeedPage {
        let (reading, root) = try FeedReading.read(body, keepingRecordsOf: WireBodyField.changes)
        return try reading.page(root)
    }

    /// The page as JSON, each record's bytes written as they are held (``FeedChange/record``
    /// must be a JSON value): `{"business":...,"from":...,"cursor":...,"has_more":...,"count":...,
    /// "digest":...,"limits":{...},"changes":[...]}`.
    public func encoded() -> Data {
        FeedReading.object([
            (WireBodyField.business, FeedReading.quoted(business)), (WireBodyField.from, FeedReading.quoted(from.text)),
            (WireBodyField.cursor, FeedReading.quoted(cursor.text)), (WireBodyField.hasMore, hasMore ? "true" : "false"),
            (WireBodyField.count, String(count)), (WireBodyField.digest, FeedReading.quoted(digest.hex)),
        ] + (limits.map { [(WireBodyField.limits, $0.json)] } ?? []), list: WireBodyField.changes, changes)
    }
}

extension FeedChange {
    /// `{"type":...,"id":...,"revision":n,"record":<its bytes>}` or, for a tombstone,
    /// `{"type":...,"id":...,"revision":n,"deleted":true}`.
    public func encoded() -> Data {
        var out = Data()
        out.reserveCapacity(encodedCount)
        encode(into: &out)
        return out
    }

    /// How many bytes ``encoded()`` writes, counted without writing them: a server fills a page
    /// up to its `max_page_bytes` by this, then writes each change once.
    public var encodedCount: Int {
        let fields = Self.fieldPrefixes
        return fields.type.count + FeedReading.quoted(type).utf8.count + fields.id.count + FeedReading.quoted(id).utf8.count
            + fields.revision.count + Self.digitCount(revision) + (record.map { fields.record.count + $0.count } ?? fields.deleted.count) + 1
    }

    /// Appends ``encoded()``'s bytes to `out`.
    func encode(into out: inout Data) {
        let fields = Self.fieldPrefixes
        out += fields.type
        out += Data(FeedReading.quoted(type).utf8)
        out += fields.id
        out += Data(FeedReading.quoted(id).utf8)
        out += fields.revision
        out += Data(String(revision).utf8)
        if let record {
            out += fields.record
            out += record
        } else {
            out += fields.deleted
        }
        out += Data("}".utf8)
    }

    /// The fixed bytes before each field's value, and a tombstone's ending.
    private static let fieldPrefixes = (
        type: Data(("{" + FeedReading.quoted(WireBodyField.type) + ":").utf8),
        id: Data(("," + FeedReading.quoted(WireBodyField.id) + ":").utf8),
        revision: Data(("," + FeedReading.quoted(WireBodyField.revision) + ":").utf8),
        record: Data(("," + FeedReading.quoted(WireBodyField.record) + ":").utf8),
        deleted: Data(("," + FeedReading.quoted(WireBodyField.deleted) + ":true").utf8)
    )

    private static func digitCount(_ number: UInt64) -> Int {
        var count = 1
        var rest = number / 10
        while rest > 0 {
            count += 1
            rest /= 10
        }
        return count
    }
}

extension FeedLimits {
    /// `{"max_limit":n,"max_page_bytes":n,"tombstone_retention_seconds":n}`.
    public var json: String {
        "{" + FeedReading.quoted(WireBodyField.maxLimit) + ":" + String(maxLimit) + ","
            + FeedReading.quoted(WireBodyField.maxPageBytes) + ":" + String(maxPageBytes) + ","
            + FeedReading.quoted(WireBodyField.tombstoneRetentionSeconds) + ":" + String(tombstoneRetentionSeconds) + "}"
    }
}

/// Reads a feed page's tree, naming each field at fault by its path; writes its small parts.
struct FeedReading {
    let bytes: [UInt8]
    /// Where `changes[i].record` stands, by `i`: one lookup a change, however long the page.
    let records: [Int: Range<Int>]

    /// `body` read strictly, the bytes of each `<list>[i].record` kept.
    static func read(_ body: Data, keepingRecordsOf list: String) throws(FeedPage.Invalid) -> (FeedReading, JSONNode) {
        let bytes = Array(body)
        do {
            let (root, spans) = try JSONNode.read(bytes, spans: isRecord(of: list))
            return (FeedReading(bytes: bytes, spans: spans), root)
        } catch {
            throw FeedPage.Invalid(field: error.field, message: error.message())
        }
    }

    /// The body's shape, for messages.
    var shape = FeedReading.pageShape

    init(bytes: [UInt8], spans: [JSONSpan]) {
        self.bytes = bytes
        var records: [Int: Range<Int>] = [:]
        for span in spans {
            if span.path.components.count == 3, case .index(let index) = span.path.components[1] { records[index] = span.range }
        }
        self.records = records
    }

    /// Whether a path is `<list>[i].record` (`changes[i].record`): the values whose bytes are kept.
    static func isRecord(of list: String) -> (JSONPath) -> Bool {
        { path in
            let components = path.components
            guard components.count == 3, components[0] == .member(list), components[2] == .member(WireBodyField.record),
                case .index = components[1]
            else { return false }
            return true
        }
    }

    static let pageShape = #"expected {"business","from","cursor","has_more","count","digest","limits" (optional),"#
        + #""changes":[{"type","id","revision","record"} or {"type","id","revision","deleted":true}, ...]}"#

    func page(_ root: JSONNode) throws(FeedPage.Invalid) -> FeedPage {
        guard case .object = root else { throw Self.invalid(.root, "the body must be an object, not \(root.kind); " + shape) }
        let business = try string(WireBodyField.business, of: root, at: .root)
        let from = try position(WireBodyField.from, of: root, at: .root)
        let cursor = try position(WireBodyField.cursor, of: root, at: .root)
        let hasMore = try bool(WireBodyField.hasMore, of: root, at: .root)
        let count = try Int(whole(WireBodyField.count, of: root, at: .root, upTo: UInt64(Int.max)))
        let digest = try digest(WireBodyField.digest, of: root, at: .root)
        let limits = try optional(WireBodyField.limits, of: root, at: .root).map { node throws(FeedPage.Invalid) in
            try self.limits(node, at: JSONPath.root.member(WireBodyField.limits))
        }
        let changes = try list(WireBodyField.changes, of: root)
        return FeedPage(business: business, from: from, cursor: cursor, hasMore: hasMore, count: count, digest: digest,
                        limits: limits, changes: changes)
    }

    /// The changes of the root's array `name`, each read by ``change(_:index:at:)``.
    func list(_ name: String, of root: JSONNode) throws(FeedPage.Invalid) -> [FeedChange] {
        let path = JSONPath.root.member(name)
        let list = try field(name, of: root, at: .root)
        guard case .array(let elements) = list else { throw Self.invalid(path, "\(path) must be an array, not \(list.kind)") }
        var changes: [FeedChange] = []
        changes.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            changes.append(try change(element, index: index, at: path.index(index)))
        }
        return changes
    }

    func change(_ node: JSONNode, index: Int, at path: JSONPath) throws(FeedPage.Invalid) -> FeedChange {
        guard case .object = node else { throw Self.invalid(path, "\(path) must be an object, not \(node.kind); " + shape) }
        let type = try string(WireBodyField.type, of: node, at: path)
        let id = try string(WireBodyField.id, of: node, at: path)
        let revision = try whole(WireBodyField.revision, of: node, at: path, upTo: UInt64.max)
        let deleted: Bool
        switch try optional(WireBodyField.deleted, of: node, at: path) {
        case nil: deleted = false
        case .bool(let value)?: deleted = value
        case let other?: throw Self.invalid(path.member(WireBodyField.deleted), "\(path.member(WireBodyField.deleted)) must be true or false, not \(other.kind)")
        }
        let recordPath = path.member(WireBodyField.record)
        switch (try optional(WireBodyField.record, of: node, at: path), deleted) {
        case (nil, true):
            return FeedChange(type: type, id: id, revision: revision, record: nil)
        case (nil, false):
            throw Self.invalid(recordPath, "\(recordPath) is missing: a change holds its record, or \"deleted\":true for a tombstone")
        case (_?, true):
            throw Self.invalid(recordPath, "\(path) is deleted and holds a record: a tombstone holds none")
        case (let record?, false):
            guard case .object = record else { throw Self.invalid(recordPath, "\(recordPath) must be an object, not \(record.kind)") }
            guard let range = records[index] else {
                throw Self.invalid(recordPath, "\(recordPath) was read but its bytes were not found")
            }
            return FeedChange(type: type, id: id, revision: revision, record: Data(bytes[range]))
        }
    }

    func limits(_ node: JSONNode, at path: JSONPath) throws(FeedPage.Invalid) -> FeedLimits {
        guard case .object = node else { throw Self.invalid(path, "\(path) must be an object, not \(node.kind)") }
        let maxLimit = try whole(WireBodyField.maxLimit, of: node, at: path, upTo: UInt64(Int.max))
        guard maxLimit > 0 else { throw Self.invalid(path.member(WireBodyField.maxLimit), "\(path.member(WireBodyField.maxLimit)) must be at least 1") }
        let maxPageBytes = try whole(WireBodyField.maxPageBytes, of: node, at: path, upTo: UInt64(Int.max))
        let retention = try whole(WireBodyField.tombstoneRetentionSeconds, of: node, at: path, upTo: UInt64(Int.max))
        return FeedLimits(maxLimit: Int(maxLimit), maxPageBytes: Int(maxPageBytes), tombstoneRetentionSeconds: Int(retention))
    }

    // MARK: Fields

    static func invalid(_ path: JSONPath, _ message: String) -> FeedPage.Invalid {
        FeedPage.Invalid(field: path.isRoot ? "" : path.description, message: message)
    }

    /// The member `name` if present; written twice, it is refused rather than guessed at.
    func optional(_ name: String, of object: JSONNode, at path: JSONPath) throws(FeedPage.Invalid) -> JSONNode? {
        let found = object.members(named: name)
        if found.count > 1 { throw Self.invalid(path.member(name), "\(path.member(name)) appears \(found.count) times; send each field once") }
        return found.first
    }

    func field(_ name: String, of object: JSONNode, at path: JSONPath) throws(FeedPage.Invalid) -> JSONNode {
        guard let found = try optional(name, of: object, at: path) else {
            throw Self.invalid(path.member(name), "\(path.member(name)) is missing; " + shape)
        }
        return found
    }

    func string(_ name: String, of object: JSONNode, at path: JSONPath) throws(FeedPage.Invalid) -> String {
        let value = try field(name, of: object, at: path)
        guard case .string(let text) = value else { throw Self.invalid(path.member(name), "\(path.member(name)) must be a string, not \(value.kind)") }
        return text
    }

    func bool(_ name: String, of object: JSONNode, at path: JSONPath) throws(FeedPage.Invalid) -> Bool {
        let value = try field(name, of: object, at: path)
        guard case .bool(let flag) = value else { throw Self.invalid(path.member(name), "\(path.member(name)) must be true or false, not \(value.kind)") }
        return flag
    }

    func position(_ name: String, of object: JSONNode, at path: JSONPath) throws(FeedPage.Invalid) -> FeedPosition {
        let text = try string(name, of: object, at: path)
        do {
            return try FeedPosition(text: text)
        } catch {
            throw Self.invalid(path.member(name), "\(path.member(name)): \(error.description)")
        }
    }

    func digest(_ name: String, of object: JSONNode, at path: JSONPath) throws(FeedPage.Invalid) -> SHA256Digest {
        let text = try string(name, of: object, at: path)
        let hex = Array(text.utf8)
        let digits = hex.compactMap(Self.hexDigit)
        guard hex.count == 2 * SHA256Digest.byteCount, digits.count == hex.count,
            let digest = SHA256Digest(bytes: stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] })
        else {
            throw Self.invalid(path.member(name), "\(path.member(name)) must be a SHA-256 in 64 lowercase hex digits")
        }
        return digest
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    /// A whole number in digits from 0 to `maximum`: `1.5`, `-1`, `1e2` and one too large are
    /// each refused, naming the field.
    func whole(_ name: String, of object: JSONNode, at path: JSONPath, upTo maximum: UInt64) throws(FeedPage.Invalid) -> UInt64 {
        let field = path.member(name)
        let value = try self.field(name, of: object, at: path)
        guard case .number(let text) = value else { throw Self.invalid(field, "\(field) must be a whole number, not \(value.kind)") }
        let shown = text.count > 40 ? String(text.prefix(40)) + "..." : text
        guard text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let number = UInt64(text), number <= maximum else {
            throw Self.invalid(field, "\(field) is \(shown): it must be a whole number from 0 to \(maximum) written in digits")
        }
        return number
    }

    // MARK: Writing

    /// `{"name":value,...,"<list>":[change,...]}`, each change with its record's bytes as held.
    static func object(_ members: [(String, String)], list: String, _ changes: [FeedChange]) -> Data {
        var out = Data("{".utf8)
        for (name, value) in members { out += member(name, value) + Data(",".utf8) }
        out += Data((quoted(list) + ":[").utf8)
        out.reserveCapacity(out.count + changes.reduce(2) { $0 + $1.encodedCount + 1 })
        for (index, change) in changes.enumerated() {
            if index > 0 { out += Data(",".utf8) }
            change.encode(into: &out)
        }
        out += Data("]}".utf8)
        return out
    }

    /// `"name":value`.
    static func member(_ name: String, _ value: String) -> Data {
        Data((quoted(name) + ":" + value).utf8)
    }

    static func quoted(_ text: String) -> String { JSONNode.quoted(text) }
}
