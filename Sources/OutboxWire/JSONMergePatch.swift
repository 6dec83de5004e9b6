/// A `PATCH` body applied to a record, as RFC 7396 (JSON merge patch) says, on the JSON text
/// itself: what the patch does not touch keeps its bytes and its order.
///
/// ```swift
/// let merged = try JSONMergePatch.apply(
///     Array(#"{"price":13}"#.utf8), to: Array(#"{"id":"p-1","name":"Gauze","price":12.5}"#.utf8))
/// // {"id":"p-1","name":"Gauze","price":13}
/// ```
///
/// A member the patch sets is replaced where it stands, or appended in the patch's order; a
/// member the patch sets to `null` is removed; a member whose old and new values are both
/// objects is merged the same way, recursively. A patch that is not an object replaces the
/// target whole. Members are written `"name":value`, without spaces between them; values keep
/// their text exactly as they came (numbers are never reformatted).
///
/// Both inputs are read by ``JSONNode``, the package's one strict reader (nested at most
/// ``maxDepth`` levels); what is not JSON is refused with ``Invalid``, never guessed at.
package enum JSONMergePatch {
    /// Where the bytes stop being the JSON this reads.
    package struct Invalid: Error, Equatable, CustomStringConvertible {
        package var offset: Int
        package var reason: String
        package var description: String { "\(reason) at byte \(offset)" }
    }

    /// `patch` applied to `target`.
    /// - Throws: ``Invalid`` when either is not one JSON text.
    package static func apply(_ patch: [UInt8], to target: [UInt8]) throws(Invalid) -> [UInt8] {
        try merge(try Piece(reading: patch), into: try Piece(reading: target))
    }

    /// Deep enough for any record; a hostile patch cannot exhaust the stack.
    static let maxDepth = 256

    /// A value's text and, once read, its tree, whose members say where their names and values
    /// stand in `text`.
    private struct Piece {
        var text: [UInt8]
        var range: Range<Int>
        var node: JSONNode

        /// A whole JSON text, read by the package's one strict reader.
        init(reading text: [UInt8]) throws(Invalid) {
            do {
                node = try JSONNode.read(text, maxDepth: JSONMergePatch.maxDepth)
            } catch {
                throw Invalid(offset: error.offset, reason: error.reason)
            }
            self.text = text
            // The reader took the text as one value with white space around it.
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
            let first = text.firstIndex { !isSpace($0) } ?? text.endIndex
            let last = text.lastIndex { !isSpace($0) }.map { $0 + 1 } ?? first
            range = first..<last
        }

        init(text: [UInt8], range: Range<Int>, node: JSONNode) {
            self.text = text
            self.range = range
            self.node = node
        }

        var bytes: ArraySlice<UInt8> { text[range] }
    }

    /// One member of the merged object: its name as written and its value.
    private struct Member {
        var rawName: ArraySlice<UInt8>
        var name: String
        var value: Piece
    }

    /// RFC 7396's MergePatch(Target, Patch), on texts; `target` is `nil` when the member is absent.
    private static func merge(_ patch: Piece, into target: Piece?) throws(Invalid) -> [UInt8] {
        guard case .object(let changes) = patch.node else { return Array(patch.bytes) }
        var merged: [Member] = []
        if let target, case .object(let members) = target.node {
            merged = members.map { Member(rawName: target.text[$0.nameRange], name: $0.name, value: Piece(text: target.text, range: $0.valueRange, node: $0.value)) }
        }
        for change in changes {
            // A name written twice is read as its last value (as parsers do); once the patch
            // touches it, one member of that name is left, where the first stood.
            // Names are compared byte for byte, as JSON compares them: never by Unicode equivalence.
            let positions = merged.indices.filter { merged[$0].name.hasSameBytes(as: change.name) }
            if change.value == .null {
                merged.removeAll { $0.name.hasSameBytes(as: change.name) }
                continue
            }
            let changed = Piece(text: patch.text, range: change.valueRange, node: change.value)
            let text = try merge(changed, into: positions.last.map { merged[$0].value })
            // A merged object is read again, for a later member of the patch with its name.
            let value: Piece
            if case .object = change.value {
                value = try Piece(reading: text)
            } else {
                value = Piece(text: text, range: 0..<text.count, node: change.value)
            }
            if let first = positions.first {
                merged[first].value = value
                for index in positions.dropFirst().reversed() { merged.remove(at: index) }
            } else {
                merged.append(Member(rawName: patch.text[change.nameRange], name: change.name, value: value))
            }
        }
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in merged.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += member.rawName
            out.append(UInt8(ascii: ":"))
            out += member.value.bytes
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}
