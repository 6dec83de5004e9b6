import IdempotencyClaims
import OutboxWire

/// How many times a write was applied, per `Idempotency-Key`, the keys compared byte for byte:
/// `k-café` in NFC and in NFD are two keys with a count each, as PostgreSQL and LMDB keep them,
/// never merged the way a `[String: Int]` would merge them.
///
/// ```swift
/// let applied = try server.appliedCounts()
/// applied["op-1"]                 // 1
/// applied == ["op-1": 1]          // every key and count
/// for (key, count) in applied {}  // in byte order of the keys
/// ```
public struct AppliedCounts: Sequence, Equatable, Sendable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    private var counts: [ExactString: Int] = [:]

    /// Counts by key; a key given twice (the same bytes) has its counts added.
    public init(_ counts: some Sequence<(key: String, count: Int)>) {
        for (key, count) in counts { self.counts[ExactString(key), default: 0] += count }
    }

    public init(dictionaryLiteral elements: (String, Int)...) {
        self.init(elements.map { (key: $0.0, count: $0.1) })
    }

    /// The count of the key with exactly these bytes; `nil` when it was never applied.
    public subscript(key: String) -> Int? {
        counts[ExactString(key)]
    }

    public var isEmpty: Bool { counts.isEmpty }
    /// How many keys.
    public var count: Int { counts.count }
    /// The keys, in byte order.
    public var keys: [String] { counts.keys.sorted().map(\.string) }
    /// The counts, in the byte order of their keys.
    public var values: [Int] { sortedEntries.map(\.value) }

    private var sortedEntries: [(key: ExactString, value: Int)] {
        counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: Int)]> {
        sortedEntries.map { (key: $0.key.string, value: $0.value) }.makeIterator()
    }

    /// Whether `counts` holds the same keys with the same counts. A `[String: Int]` has already
    /// merged keys Swift finds equal, so it matches only counts whose keys it can tell apart.
    public static func == (lhs: AppliedCounts, rhs: [String: Int]) -> Bool {
        lhs.count == rhs.count && rhs.allSatisfy { lhs[$0.key] == $0.value }
    }

    public var description: String {
        "[" + sortedEntries.map { "\(JSONText.quoted($0.key.string)): \($0.value)" }.joined(separator: ", ") + "]"
    }

    /// `GET /_control/applied`: `{"applied":[{"count":1,"key":"op-1"}, ...]}` in byte order of
    /// the keys, so keys Swift or a JSON object reader would merge stay two entries.
    var json: String {
        #"{"applied":["# + sortedEntries.map { #"{"count":\#($0.value),"key":"# + JSONText.quoted($0.key.string) + "}" }
            .joined(separator: ",") + "]}"
    }
}
