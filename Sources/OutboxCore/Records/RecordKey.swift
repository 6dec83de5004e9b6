import Foundation

/// A record the member's data is kept under: its business, its type and its id.
///
/// Compared byte for byte (the same text in NFC and in NFD is two records), as LMDB and the
/// server compare it. Each part is bounded so that every key it enters fits LMDB's 511 bytes with
/// its suffixes: business at most 128 bytes, type at most 64, id at most 255 (UTF-8), each
/// non-empty, valid UTF-8 without control characters.
///
/// ```swift
/// let key = RecordKey(business: "pharmacy-7", type: "product", id: "7d0c3a52")
/// ```
public struct RecordKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var business: String
    public var type: String
    public var id: String

    public init(business: String, type: String, id: String) {
        self.business = business
        self.type = type
        self.id = id
    }

    public static let maxBusinessBytes = 128
    public static let maxTypeBytes = 64
    public static let maxIDBytes = 255

    public static func == (left: RecordKey, right: RecordKey) -> Bool {
        left.business.utf8.elementsEqual(right.business.utf8) && left.type.utf8.elementsEqual(right.type.utf8)
            && left.id.utf8.elementsEqual(right.id.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// By business, then type, then id, each by its bytes: the order of the journal's keys.
    public static func < (left: RecordKey, right: RecordKey) -> Bool {
        left.bytes.lexicographicallyPrecedes(right.bytes)
    }

    /// `pharmacy-7/product/7d0c3a52`: for logs, support and `journal-inspect record`.
    public var description: String { "\(business)/\(type)/\(id)" }

    /// Reads `business/type/id`, the id being everything after the second `/`.
    public init?(path: String) {
        let parts = path.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        self.init(business: String(parts[0]), type: String(parts[1]), id: String(parts[2]))
    }

    // MARK: Stored form

    /// The key's bytes as the journal's record tables lead with them: the business and the type
    /// each after its length (1 byte), then the id, then a zero byte. The id is not
    /// length-prefixed, so keys of one type sort by the id's bytes; the zero byte (which no id
    /// holds) ends it, so no key's bytes begin another's.
    public var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + business.utf8.count + type.utf8.count + id.utf8.count)
        Self.appendScope(business: business, type: type, to: &bytes)
        bytes.append(contentsOf: id.utf8)
        bytes.append(0)
        return bytes
    }

    /// The leading bytes of every key of one business and type, in id order.
    public static func scopeBytes(business: String, type: String) -> [UInt8] {
        var bytes: [UInt8] = []
        appendScope(business: business, type: type, to: &bytes)
        return bytes
    }

    /// The leading bytes of every key of one business, in type then id order.
    public static func businessScopeBytes(_ business: String) -> [UInt8] {
        precondition(business.utf8.count <= 255, "a record key's part over 255 bytes")
        return [UInt8(business.utf8.count)] + Array(business.utf8)
    }

    private static func appendScope(business: String, type: String, to bytes: inout [UInt8]) {
        precondition(business.utf8.count <= 255 && type.utf8.count <= 255, "a record key's part over 255 bytes")
        bytes.append(UInt8(business.utf8.count))
        bytes.append(contentsOf: business.utf8)
        bytes.append(UInt8(type.utf8.count))
        bytes.append(contentsOf: type.utf8)
    }

    /// Reads a key from the start of `bytes` (as ``bytes`` writes it).
    /// - Returns: the key and how many bytes it took; `nil` when they are not a key's.
    public static func read(_ bytes: some RandomAccessCollection<UInt8>) -> (key: RecordKey, count: Int)? {
        let bytes = Array(bytes)
        guard let businessLength = bytes.first.map(Int.init), bytes.count > 1 + businessLength else { return nil }
        let typeLength = Int(bytes[1 + businessLength])
        let idStart = 2 + businessLength + typeLength
        guard bytes.count > idStart, let end = bytes[idStart...].firstIndex(of: 0) else { return nil }
        guard let business = String(validating: bytes[1..<(1 + businessLength)], as: UTF8.self),
              let type = String(validating: bytes[(2 + businessLength)..<idStart], as: UTF8.self),
              let id = String(validating: bytes[idStart..<end], as: UTF8.self)
        else { return nil }
        return (RecordKey(business: business, type: type, id: id), end + 1)
    }

    // MARK: Checks

    /// Why the key cannot be kept, naming the part; `nil` when it can.
    public var problem: (field: String, problem: String)? {
        // Each part checked in turn, with no list built: a pulled page checks 500 keys.
        Self.problem(of: business, field: "business", limit: Self.maxBusinessBytes)
            ?? Self.problem(of: type, field: "type", limit: Self.maxTypeBytes)
            ?? Self.problem(of: id, field: "id", limit: Self.maxIDBytes)
    }

    /// Why one part of a key cannot be kept; `nil` when it can.
    private static func problem(of text: String, field: String, limit: Int) -> (field: String, problem: String)? {
        let count = text.utf8.count
        if count == 0 { return (field, "must not be empty") }
        if count > limit { return (field, "is \(count) bytes (UTF-8), over the limit of \(limit)") }
        if OutboxRequest.containsControl(text) { return (field, "must not contain control characters") }
        return nil
    }

    /// The key, checked as a read or a write takes it.
    /// - Parameter field: what the caller calls the key: a part is named `<field>.business`.
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` naming the part that cannot be
    ///   kept: a read refuses it as a write does, and never reaches a bound it would trap on.
    public func checked(as field: String = "key") throws(OutboxError) -> RecordKey {
        if let problem { throw .invalidRequest(field: "\(field).\(problem.field)", problem: problem.problem) }
        return self
    }

    /// Checks the business and type of a scope (a query's, a feed's): each as a key's part.
    /// - Parameter type: `nil` checks the business alone.
    /// - Throws: ``OutboxError/invalidRequest(field:problem:)`` naming the part.
    public static func checkScope(business: String, type: String?, field: String? = nil) throws(OutboxError) {
        let prefix = field.map { "\($0)." } ?? ""
        if let problem = problem(of: business, field: "business", limit: maxBusinessBytes) ?? type.flatMap({ problem(of: $0, field: "type", limit: maxTypeBytes) }) {
            throw .invalidRequest(field: prefix + problem.field, problem: problem.problem)
        }
    }

    /// Checks an id that bounds a page (`after:`): as a key's id.
    public static func checkID(_ id: String, field: String) throws(OutboxError) {
        if let problem = problem(of: id, field: "id", limit: maxIDBytes) { throw .invalidRequest(field: field, problem: problem.problem) }
    }
}
