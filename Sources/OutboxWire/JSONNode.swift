// Kept in one file: one strict reader; its scanner, its paths and its problems are one grammar.
// It is the only JSON scanner of the package: the engine's check of a payload at enqueue
// (`check(_:)`), the servers' reading of bodies and feed pages, and the merge patch on text
// (`JSONMergePatch`, through each member's byte ranges) all read with it.

/// JSON text read strictly (RFC 8259) into a tree whose strings are exactly the text's
/// characters, for the server half's checks: every member kept in order (a name sent twice is
/// seen twice, never resolved silently), numbers kept as written, and the place of every
/// problem named by its path (`operations[0].payload_version`).
///
/// What a `JSONDecoder` or `JSONSerialization` would hide is refused with the path: an escape
/// that decodes to half of a UTF-16 surrogate pair (`"\ud800"`, not a character: a decoder
/// replaces it with U+FFFD, so two distinct texts would read as one), and bytes that are not
/// UTF-8. Nothing is normalized: `"caf\u00e9"` and `"cafe\u0301"` read as two strings.
///
/// ```swift
/// let node = try JSONNode.read(Array(#"{"id":"p-1","price":12.5}"#.utf8))
/// node.member("id")      // .string("p-1")
/// ```
package indirect enum JSONNode: Equatable, Sendable {
    /// The members in the order written, a name written twice kept twice.
    case object([JSONMember])
    case array([JSONNode])
    case string(String)
    /// A number as written, never rounded through a `Double`: `1e400`, `9223372036854775808`.
    case number(String)
    case bool(Bool)
    case null

    /// The most levels of nesting read; deeper is refused, so hostile input cannot exhaust the
    /// stack (as the engine's own check of a payload).
    package static let maxDepth = 512

    /// Reads one JSON text, white space around it allowed.
    /// - Throws: ``JSONReadError`` naming the path, the byte and what is wrong.
    package static func read(_ bytes: [UInt8]) throws(JSONReadError) -> JSONNode {
        try read(bytes, maxDepth: maxDepth)
    }

    /// Reads one JSON text as ``read(_:)`` does, nested at most `maxDepth` levels.
    package static func read(_ bytes: [UInt8], maxDepth: Int) throws(JSONReadError) -> JSONNode {
        var reader = Reader(bytes, wanted: nil, maxDepth: maxDepth)
        return try reader.document()
    }

    /// Checks that `bytes` are one JSON text under the rules of ``read(_:)``, building nothing:
    /// the engine refuses at enqueue what a server reading strictly would refuse.
    /// - Throws: ``JSONReadError`` naming the byte and what is wrong.
    package static func check(_ bytes: [UInt8]) throws(JSONReadError) {
        var reader = Reader(bytes, wanted: nil, maxDepth: maxDepth, buildsTree: false)
        _ = try reader.document()
    }

    /// Reads one JSON text as ``read(_:)`` does, and answers where in `bytes` each value whose
    /// path `spans` picks stands: its exact bytes, from its first character to its last, white
    /// space around it left out. A feed page's records are hashed as sent, so the reader that
    /// checks the page says where they are rather than a second scanner.
    ///
    /// A picked value is checked under every rule but not built: the caller keeps its bytes, so
    /// an object reads as `.object([])` and an array as `.array([])`, their kind alone (a page's
    /// records are most of its nodes, and building them was most of reading it). A value inside
    /// a picked one is not picked again.
    ///
    /// ```swift
    /// let (node, spans) = try JSONNode.read(body) { $0.components.last == .member("record") }
    /// body[spans[0].range]   // the record's bytes as written: its spaces, key order and escapes
    /// ```
    package static func read(
        _ bytes: [UInt8], spans: ((JSONPath) -> Bool)?
    ) throws(JSONReadError) -> (node: JSONNode, spans: [JSONSpan]) {
        var reader = Reader(bytes, wanted: spans, maxDepth: maxDepth)
        let node = try reader.document()
        return (node, reader.spans)
    }

    /// The members of an object named `name`, compared byte for byte, in order; none for
    /// anything but an object.
    package func members(named name: String) -> [JSONNode] {
        guard case .object(let members) = self else { return [] }
        return members.filter { $0.name.hasSameBytes(as: name) }.map(\.value)
    }

    /// The value of the member `name` of an object when it is there once; `nil` when absent
    /// (or not an object). Check ``members(named:)`` first where a name written twice matters.
    package func member(_ name: String) -> JSONNode? {
        let found = members(named: name)
        return found.count == 1 ? found[0] : nil
    }

    /// `text` as a JSON string literal, quotes included (RFC 8259 escaping, `/` left as it is),
    /// for the bodies written by hand where their shape is fixed and small.
    package static func quoted(_ text: String) -> String {
        // Most text needs no escape: one scan of its bytes, then one concatenation (a feed
        // page quotes each change's type and id; by scalars this was most of a page's encoding).
        let needsEscape = text.utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
        guard needsEscape else { return "\"" + text + "\"" }
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// What kind of value this is, in words: `a string`, `an object`, ...
    package var kind: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .bool: "true or false"
        case .null: "null"
        }
    }

    /// The first place, depth first in the order written, where `problem` finds something,
    /// member names included (reported at their object's path).
    package func firstProblem(at path: JSONPath = .root, _ problem: (JSONNode, _ name: String?) -> String?) -> (JSONPath, String)? {
        if let found = problem(self, nil) { return (path, found) }
        switch self {
        case .object(let members):
            for member in members {
                if let found = problem(.string(member.name), member.name) { return (path, found) }
                if let found = member.value.firstProblem(at: path.member(member.name), problem) { return found }
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                if let found = element.firstProblem(at: path.index(index), problem) { return found }
            }
        case .string, .number, .bool, .null:
            break
        }
        return nil
    }

    /// Parses with a cursor over the bytes; each step knows the path of the value it reads.
    private struct Reader {
        let bytes: [UInt8]
        var position = 0
        /// Which values' spans to keep; `nil`: none.
        let wanted: ((JSONPath) -> Bool)?
        var spans: [JSONSpan] = []
        let maxDepth: Int
        /// `false` for a check, or inside a picked value: every rule applies, and no member,
        /// element or string is kept.
        var buildsTree: Bool
        /// Inside a picked value, whose bytes the caller keeps: nothing in it is picked again.
        var insidePicked = false

        init(_ bytes: [UInt8], wanted: ((JSONPath) -> Bool)?, maxDepth: Int, buildsTree: Bool = true) {
            self.bytes = bytes
            self.wanted = wanted
            self.maxDepth = maxDepth
            self.buildsTree = buildsTree
        }

        /// The one value of the text, white space around it allowed.
        mutating func document() throws(JSONReadError) -> JSONNode {
            skipWhitespace()
            let node = try value(at: .root, depth: 0)
            skipWhitespace()
            guard position == bytes.count else { throw syntax("unexpected content after the JSON value", at: .root) }
            return node
        }

        var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
        }

        func syntax(_ reason: String, at path: JSONPath) -> JSONReadError {
            JSONReadError(path: path, offset: position, problem: .syntax(reason))
        }

        mutating func value(at path: JSONPath, depth: Int) throws(JSONReadError) -> JSONNode {
            guard !insidePicked, let wanted, wanted(path) else { return try bareValue(at: path, depth: depth) }
            let start = position
            // An object or an array is checked, not built; a scalar is cheap and built as usual.
            let container = current == UInt8(ascii: "{") || current == UInt8(ascii: "[")
            let builds = buildsTree
            buildsTree = builds && !container
            insidePicked = true
            defer {
                buildsTree = builds
                insidePicked = false
            }
            let node: JSONNode
            do {
                node = try bareValue(at: path, depth: depth)
            } catch where !buildsTree && builds {
                // Read again, building, so the error names the field inside it by its path.
                position = start
                buildsTree = true
                node = try bareValue(at: path, depth: depth)
            }
            spans.append(JSONSpan(path: path, range: start..<position))
            guard builds, container else { return node }
            return bytes[start] == UInt8(ascii: "{") ? .object([]) : .array([])
        }

        mutating func bareValue(at path: JSONPath, depth: Int) throws(JSONReadError) -> JSONNode {
            guard depth < maxDepth else {
                throw JSONReadError(path: path, offset: position, problem: .tooDeep, levels: maxDepth)
            }
            guard let byte = current else { throw syntax("a value is missing: the text ends", at: path) }
            // A check builds no node: each case of this indirect enum but `null` is a box.
            switch byte {
            case UInt8(ascii: "{"):
                let node = try object(at: path, depth: depth)
                return buildsTree ? node : .null
            case UInt8(ascii: "["):
                let node = try array(at: path, depth: depth)
                return buildsTree ? node : .null
            case UInt8(ascii: "\""):
                let text = try string(at: path, isName: false)
                return buildsTree ? .string(text) : .null
            case UInt8(ascii: "t"): try literal("true", at: path); return .bool(true)
            case UInt8(ascii: "f"): try literal("false", at: path); return .bool(false)
            case UInt8(ascii: "n"): try literal("null", at: path); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let text = try number(at: path)
                return buildsTree ? .number(text) : .null
            default: throw syntax("expected a value", at: path)
            }
        }

        mutating func literal(_ word: String, at path: JSONPath) throws(JSONReadError) {
            let expected = Array(word.utf8)
            guard position + expected.count <= bytes.count, bytes[position..<position + expected.count].elementsEqual(expected) else {
                throw syntax("expected a value", at: path)
            }
            position += expected.count
        }

        mutating func expect(_ byte: UInt8, _ what: String, at path: JSONPath) throws(JSONReadError) {
            guard current == byte else { throw syntax("expected \(what)", at: path) }
            position += 1
        }

        mutating func object(at path: JSONPath, depth: Int) throws(JSONReadError) -> JSONNode {
            position += 1
            var members: [JSONMember] = []
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw syntax("expected a member name in quotes", at: path) }
                let nameStart = position
                let name = try string(at: path, isName: true)
                let nameRange = nameStart..<position
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "':' after a member name", at: path)
                skipWhitespace()
                let valueStart = position
                let value = try value(at: buildsTree ? path.member(name) : path, depth: depth + 1)
                if buildsTree { members.append(JSONMember(name: name, value: value, nameRange: nameRange, valueRange: valueStart..<position)) }
                skipWhitespace()
                if current == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                try expect(UInt8(ascii: "}"), "',' or '}'", at: path)
                return .object(members)
            }
        }

        mutating func array(at path: JSONPath, depth: Int) throws(JSONReadError) -> JSONNode {
            position += 1
            var elements: [JSONNode] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                let element = try value(at: buildsTree ? path.index(elements.count) : path, depth: depth + 1)
                if buildsTree { elements.append(element) }
                skipWhitespace()
                if current == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                try expect(UInt8(ascii: "]"), "',' or ']'", at: path)
                return .array(elements)
            }
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, answered as written.
        mutating func number(at path: JSONPath) throws(JSONReadError) -> String {
            let start = position
            func digits() -> Int {
                let first = position
                while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { position += 1 }
                return position - first
            }
            if current == UInt8(ascii: "-") { position += 1 }
            let leading = position
            let whole = digits()
            guard whole > 0 else { throw syntax("a number needs digits", at: path) }
            if whole > 1, bytes[leading] == UInt8(ascii: "0") { throw syntax("a number may not start with 0", at: path) }
            if current == UInt8(ascii: ".") {
                position += 1
                guard digits() > 0 else { throw syntax("a number needs digits after '.'", at: path) }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                position += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
                guard digits() > 0 else { throw syntax("a number needs digits in its exponent", at: path) }
            }
            return buildsTree ? String(decoding: bytes[start..<position], as: UTF8.self) : ""
        }

        /// A string, its escapes decoded; its raw bytes must be UTF-8, and every `\u` escape a
        /// character (a surrogate only as the first half of a pair whose second half follows).
        mutating func string(at path: JSONPath, isName: Bool) throws(JSONReadError) -> String {
            let opening = position
            position += 1
            var decoded: [UInt8] = []
            var rawStart = position
            func flushRaw(_ end: Int) throws(JSONReadError) {
                guard isUTF8(rawStart..<end) else {
                    throw JSONReadError(path: path, offset: rawStart, problem: .notUTF8, inName: isName)
                }
                if buildsTree { decoded += bytes[rawStart..<end] }
            }
            while true {
                guard let byte = current else {
                    position = opening
                    throw syntax("a string is not closed", at: path)
                }
                switch byte {
                case UInt8(ascii: "\""):
                    try flushRaw(position)
                    position += 1
                    return buildsTree ? String(decoding: decoded, as: UTF8.self) : ""
                case UInt8(ascii: "\\"):
                    try flushRaw(position)
                    let escape = position
                    position += 1
                    let scalar = try escaped(at: path, isName: isName, escapeStart: escape)
                    if buildsTree { decoded += Array(String(Character(scalar)).utf8) }
                    rawStart = position
                case 0..<0x20:
                    throw syntax("a control character must be escaped in a string", at: path)
                default:
                    position += 1
                }
            }
        }

        /// Whether the bytes in `range` are UTF-8, strictly (RFC 3629: no overlong form, no
        /// surrogate, nothing above U+10FFFF), as `String(validating:)` judges them; by hand,
        /// because that call is generic across modules and cost a payload's check most of its time.
        func isUTF8(_ range: Range<Int>) -> Bool {
            var index = range.lowerBound
            while index < range.upperBound {
                let lead = bytes[index]
                if lead < 0x80 {
                    index += 1
                    continue
                }
                let length: Int
                var lowest: UInt8 = 0x80
                var highest: UInt8 = 0xBF
                switch lead {
                case 0xC2...0xDF: length = 2
                case 0xE0: length = 3; lowest = 0xA0
                case 0xE1...0xEC, 0xEE...0xEF: length = 3
                case 0xED: length = 3; highest = 0x9F
                case 0xF0: length = 4; lowest = 0x90
                case 0xF1...0xF3: length = 4
                case 0xF4: length = 4; highest = 0x8F
                default: return false
                }
                guard index + length <= range.upperBound, (lowest...highest).contains(bytes[index + 1]) else { return false }
                for next in index + 2..<index + length where !(0x80...0xBF).contains(bytes[next]) { return false }
                index += length
            }
            return true
        }

        /// The character of the escape after a backslash.
        mutating func escaped(at path: JSONPath, isName: Bool, escapeStart: Int) throws(JSONReadError) -> Unicode.Scalar {
            guard let letter = current else { throw syntax("a string is not closed", at: path) }
            position += 1
            switch letter {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                let unit = try hexUnit(at: path)
                if (0xDC00..<0xE000).contains(unit) {
                    throw JSONReadError(path: path, offset: escapeStart, problem: .loneSurrogate(unit), inName: isName)
                }
                if (0xD800..<0xDC00).contains(unit) {
                    let second = position
                    guard current == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") else {
                        throw JSONReadError(path: path, offset: escapeStart, problem: .loneSurrogate(unit), inName: isName)
                    }
                    position += 2
                    let low = try hexUnit(at: path)
                    guard (0xDC00..<0xE000).contains(low) else {
                        position = second
                        throw JSONReadError(path: path, offset: escapeStart, problem: .loneSurrogate(unit), inName: isName)
                    }
                    // Any pair of a high and a low surrogate is a scalar from U+10000 to U+10FFFF.
                    return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
                }
                // Below U+D800 or above U+DFFF: always a scalar.
                return Unicode.Scalar(unit)!
            default:
                throw syntax("an unknown escape \\\(Character(Unicode.Scalar(letter)))", at: path)
            }
        }

        mutating func hexUnit(at path: JSONPath) throws(JSONReadError) -> UInt32 {
            var unit: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = current, let digit = Self.hexValue(byte) else {
                    throw syntax("a \\u escape needs four hex digits", at: path)
                }
                unit = unit << 4 | digit
                position += 1
            }
            return unit
        }

        static func hexValue(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }
    }
}

/// One member of a JSON object: its name, decoded, and its value, with where both stand in
/// the text read (compared by name and value alone).
package struct JSONMember: Equatable, Sendable {
    package var name: String
    package var value: JSONNode
    /// The name's bytes as written, quotes and escapes included.
    package var nameRange: Range<Int>
    /// The value's bytes as written, from its first character to its last.
    package var valueRange: Range<Int>

    package static func == (lhs: JSONMember, rhs: JSONMember) -> Bool {
        lhs.name.hasSameBytes(as: rhs.name) && lhs.value == rhs.value
    }
}

extension JSONNode {
    package static func == (lhs: JSONNode, rhs: JSONNode) -> Bool {
        switch (lhs, rhs) {
        case (.object(let left), .object(let right)): left == right
        case (.array(let left), .array(let right)): left == right
        case (.string(let left), .string(let right)): left.hasSameBytes(as: right)
        case (.number(let left), .number(let right)): left == right
        case (.bool(let left), .bool(let right)): left == right
        case (.null, .null): true
        default: false
        }
    }
}

/// Where a value's bytes stand in the text it was read from (``JSONNode/read(_:spans:)``).
package struct JSONSpan: Equatable, Sendable {
    package var path: JSONPath
    /// From the value's first byte to just past its last.
    package var range: Range<Int>
}

/// Where a value stands in a JSON text: `operations[3].payload.id`.
package struct JSONPath: Equatable, Sendable, CustomStringConvertible {
    package enum Component: Equatable, Sendable {
        case member(String)
        case index(Int)
    }

    package var components: [Component]

    /// The whole text.
    package static let root = JSONPath(components: [])

    package init(components: [Component]) {
        self.components = components
    }

    package var isRoot: Bool { components.isEmpty }

    package func member(_ name: String) -> JSONPath {
        JSONPath(components: components + [.member(name)])
    }

    package func index(_ index: Int) -> JSONPath {
        JSONPath(components: components + [.index(index)])
    }

    /// `other`'s components after this path's: where a value read on its own (a batch
    /// operation's payload) stands in the text it came in.
    package func appending(_ other: JSONPath) -> JSONPath {
        JSONPath(components: components + other.components)
    }

    /// `operations[0].payload_version`; a name that is not letters, digits, `_` and `-` is
    /// quoted: `["a b"]`. Empty for the root.
    package var description: String {
        var text = ""
        for component in components {
            switch component {
            case .index(let index):
                text += "[\(index)]"
            case .member(let name) where Self.isPlain(name):
                text += text.isEmpty ? name : "." + name
            case .member(let name):
                // In quotes with `"`, `\` and control characters escaped: a path stays one line.
                text += "[" + name.debugDescription + "]"
            }
        }
        return text
    }

    private static func isPlain(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}

/// Why bytes are not the JSON a server reads: where (path and byte) and what.
package struct JSONReadError: Error, Equatable, Sendable, CustomStringConvertible {
    package enum Problem: Equatable, Sendable {
        /// Not JSON's grammar.
        case syntax(String)
        /// A `\u` escape of half a surrogate pair without its other half: not a character.
        case loneSurrogate(UInt32)
        /// Bytes in a string that are not UTF-8.
        case notUTF8
        /// Nested deeper than the read allowed (``levels``).
        case tooDeep
    }

    /// The value being read when the problem was found.
    package var path: JSONPath
    /// The byte where it was found, from 0.
    package var offset: Int
    package var problem: Problem
    /// Whether it is in a member name of the object at ``path`` rather than in its value.
    package var inName = false
    /// The most levels of nesting the read allowed: ``JSONNode/maxDepth`` unless told.
    package var levels = JSONNode.maxDepth

    /// The problem in words, `path` standing for the value read when it was given, so a
    /// payload read on its own is named where it stands in a batch. The root is `the body`.
    package func message(at prefix: JSONPath = .root) -> String {
        let full = prefix.appending(path)
        let place = full.isRoot ? "the body" : full.description
        let named = inName ? "a member name in \(full.isRoot ? "the body" : place)" : place
        switch problem {
        case .syntax(let reason):
            return "\(place) is not JSON: \(reason) at byte \(offset)"
        case .loneSurrogate(let unit):
            return "\(named) holds \\u\(String(unit, radix: 16, uppercase: true)) at byte \(offset), half of a UTF-16 surrogate pair "
                + "without its other half: not a character. Send the character itself, or both halves of its pair"
        case .notUTF8:
            return "\(named) holds bytes that are not UTF-8 at byte \(offset): JSON text is UTF-8"
        case .tooDeep:
            return "\(place) is nested deeper than \(levels) levels"
        }
    }

    /// What is wrong and at which byte, without the place: for a text that is checked whole
    /// (a payload: "must be JSON: expected a value at byte 3").
    package var reason: String {
        switch problem {
        case .syntax(let reason): "\(reason) at byte \(offset)"
        case .loneSurrogate(let unit):
            "\\u\(String(unit, radix: 16, uppercase: true)) at byte \(offset) is half of a UTF-16 surrogate pair without its other half"
        case .notUTF8: "bytes that are not UTF-8 at byte \(offset)"
        case .tooDeep: "nested deeper than \(levels) levels at byte \(offset)"
        }
    }

    /// Where the problem is, as the path of its value: `operations[0].idempotency_key`.
    package var field: String { path.isRoot ? "" : path.description }

    package var description: String { message() }
}
