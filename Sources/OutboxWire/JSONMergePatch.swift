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
/// Both inputs must be JSON texts (the servers check with a parser first); what is not is
/// refused with ``Invalid``, never guessed at.
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
        let patchValue = try Scanner.value(of: patch)
        let targetValue = try Scanner.value(of: target)
        return try merge(patchValue, into: targetValue)
    }

    /// RFC 7396's MergePatch(Target, Patch), on texts; `target` is `nil` when the member is absent.
    private static func merge(_ patch: ArraySlice<UInt8>, into target: ArraySlice<UInt8>?) throws(Invalid) -> [UInt8] {
        guard patch.first == UInt8(ascii: "{") else { return Array(patch) }
        var merged: [Scanner.Member] = []
        if let target, target.first == UInt8(ascii: "{") { merged = try Scanner.members(of: target) }
        for change in try Scanner.members(of: patch) {
            // A name written twice is read as its last value (as parsers do); once the patch
            // touches it, one member of that name is left, where the first stood.
            // Names are compared byte for byte, as JSON compares them: never by Unicode equivalence.
            let positions = merged.indices.filter { merged[$0].name.hasSameBytes(as: change.name) }
            if Scanner.isNull(change.value) {
                merged.removeAll { $0.name.hasSameBytes(as: change.name) }
                continue
            }
            let value = ArraySlice(try merge(change.value, into: positions.last.map { merged[$0].value }))
            if let first = positions.first {
                merged[first].value = value
                for index in positions.dropFirst().reversed() { merged.remove(at: index) }
            } else {
                merged.append(Scanner.Member(rawName: change.rawName, name: change.name, value: value))
            }
        }
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in merged.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += member.rawName
            out.append(UInt8(ascii: ":"))
            out += member.value
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Finds values in JSON text without building them: enough structure to split an object
    /// into members and to read their names.
    private struct Scanner {
        struct Member {
            /// The name as written, quotes included.
            var rawName: ArraySlice<UInt8>
            /// The name decoded, for comparing.
            var name: String
            var value: ArraySlice<UInt8>
        }

        private let bytes: ArraySlice<UInt8>
        private var position: Int

        private init(_ bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            position = bytes.startIndex
        }

        /// The one value of `text`, without the white space around it.
        static func value(of text: [UInt8]) throws(Invalid) -> ArraySlice<UInt8> {
            var scanner = Scanner(text[...])
            scanner.skipWhitespace()
            let value = try scanner.value(depth: 0)
            scanner.skipWhitespace()
            guard scanner.position == text.endIndex else { throw scanner.invalid("unexpected content after the JSON value") }
            return value
        }

        /// The members of an object's text (`{` to `}`), in order.
        static func members(of object: ArraySlice<UInt8>) throws(Invalid) -> [Member] {
            var scanner = Scanner(object)
            return try scanner.objectMembers(depth: 0)
        }

        static func isNull(_ value: ArraySlice<UInt8>) -> Bool {
            value.elementsEqual("null".utf8)
        }

        /// Deep enough for any record; a hostile patch cannot exhaust the stack.
        private static let maxDepth = 256

        private mutating func objectMembers(depth: Int) throws(Invalid) -> [Member] {
            try expect(UInt8(ascii: "{"))
            var members: [Member] = []
            skipWhitespace()
            if peek == UInt8(ascii: "}") {
                position += 1
                return members
            }
            while true {
                skipWhitespace()
                let nameStart = position
                let name = try string()
                let rawName = bytes[nameStart..<position]
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                let value = try value(depth: depth + 1)
                members.append(Member(rawName: rawName, name: name, value: value))
                skipWhitespace()
                if peek == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                return members
            }
        }

        /// Skips one value and answers its text.
        private mutating func value(depth: Int) throws(Invalid) -> ArraySlice<UInt8> {
            guard depth < Self.maxDepth else { throw invalid("nested deeper than \(Self.maxDepth)") }
            let start = position
            switch peek {
            case UInt8(ascii: "{"):
                _ = try objectMembers(depth: depth)
            case UInt8(ascii: "["):
                position += 1
                skipWhitespace()
                if peek == UInt8(ascii: "]") {
                    position += 1
                } else {
                    while true {
                        skipWhitespace()
                        _ = try value(depth: depth + 1)
                        skipWhitespace()
                        if peek == UInt8(ascii: ",") {
                            position += 1
                            continue
                        }
                        try expect(UInt8(ascii: "]"))
                        break
                    }
                }
            case UInt8(ascii: "\""):
                _ = try string()
            case nil:
                throw invalid("a value is missing")
            default:
                // A number or a literal: up to the next delimiter.
                while let byte = peek, !Self.delimiters.contains(byte) { position += 1 }
                let text = bytes[start..<position]
                guard !text.isEmpty, Self.isScalar(text) else { throw invalid("not a JSON value") }
            }
            return bytes[start..<position]
        }

        private static let delimiters: Set<UInt8> = Set(",]} \t\r\n".utf8)

        private static func isScalar(_ text: ArraySlice<UInt8>) -> Bool {
            if text.elementsEqual("true".utf8) || text.elementsEqual("false".utf8) || text.elementsEqual("null".utf8) { return true }
            // -? digits [. digits] [e|E [+|-] digits]
            var index = text.startIndex
            func digits() -> Bool {
                let start = index
                while index < text.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[index]) { index += 1 }
                return index > start
            }
            if text[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() else { return false }
            if index < text.endIndex, text[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() else { return false }
            }
            if index < text.endIndex, text[index] == UInt8(ascii: "e") || text[index] == UInt8(ascii: "E") {
                index += 1
                if index < text.endIndex, text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() else { return false }
            }
            return index == text.endIndex
        }

        /// Reads a string and answers it decoded.
        private mutating func string() throws(Invalid) -> String {
            try expect(UInt8(ascii: "\""))
            var scalars = String.UnicodeScalarView()
            var utf8: [UInt8] = []
            func flush() {
                scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
                utf8.removeAll()
            }
            while true {
                guard let byte = peek else { throw invalid("a string is not closed") }
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush()
                    guard let escaped = peek else { throw invalid("a string is not closed") }
                    position += 1
                    switch escaped {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        var unit = try hexUnit()
                        if (0xD800..<0xDC00).contains(unit), peek == UInt8(ascii: "\\") {
                            let mark = position
                            position += 1
                            if peek == UInt8(ascii: "u") {
                                position += 1
                                let low = try hexUnit()
                                if (0xDC00..<0xE000).contains(low) {
                                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                                } else {
                                    position = mark
                                }
                            } else {
                                position = mark
                            }
                        }
                        scalars.append(Unicode.Scalar(unit) ?? "\u{FFFD}")
                    default:
                        throw invalid("an unknown escape")
                    }
                case 0..<0x20:
                    throw invalid("a control character in a string")
                default:
                    utf8.append(byte)
                }
            }
        }

        private mutating func hexUnit() throws(Invalid) -> UInt32 {
            var unit: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = peek, let digit = Self.hexValue(byte) else { throw invalid("a \\u escape needs four hex digits") }
                unit = unit << 4 | digit
                position += 1
            }
            return unit
        }

        private static func hexValue(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }

        private var peek: UInt8? {
            position < bytes.endIndex ? bytes[position] : nil
        }

        private mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
        }

        private mutating func expect(_ byte: UInt8) throws(Invalid) {
            guard peek == byte else { throw invalid("expected '\(Character(Unicode.Scalar(byte)))'") }
            position += 1
        }

        private func invalid(_ reason: String) -> Invalid {
            Invalid(offset: position - bytes.startIndex, reason: reason)
        }
    }
}
