/// Checks that bytes are one JSON text (RFC 8259), without building any value.
///
/// The outbox sends payloads byte for byte, so it never parses them into objects; it only
/// refuses, at enqueue, a body the server could not read. Nesting is capped so a hostile
/// payload cannot exhaust the stack.
package struct JSONSyntax {
    /// Where and why the bytes are not JSON.
    package struct Problem: Error, Equatable, CustomStringConvertible {
        package var offset: Int
        package var reason: String
        package var description: String { "\(reason) at byte \(offset)" }
    }

    package static let maxDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    private init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Throws a ``Problem`` unless `data` holds exactly one JSON value, with optional white space
    /// around it.
    package static func validate(_ data: some Collection<UInt8>) throws(Problem) {
        let result: Problem? = data.withContiguousStorageIfAvailable { buffer in
            Self.check(UnsafeRawBufferPointer(buffer))
        } ?? Array(data).withUnsafeBytes { Self.check($0) }
        if let result { throw result }
    }

    private static func check(_ bytes: UnsafeRawBufferPointer) -> Problem? {
        var parser = JSONSyntax(bytes)
        do throws(Problem) {
            parser.skipWhitespace()
            try parser.value(depth: 0)
            parser.skipWhitespace()
            if parser.position != bytes.count { throw parser.problem("unexpected content after the JSON value") }
            return nil
        } catch {
            return error
        }
    }

    private func problem(_ reason: String) -> Problem {
        Problem(offset: position, reason: reason)
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
    }

    private mutating func expect(_ literal: StaticString) throws(Problem) {
        let expected = UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        guard position + expected.count <= bytes.count,
            bytes[position..<position + expected.count].elementsEqual(expected)
        else { throw problem("invalid literal, expected \(literal)") }
        position += expected.count
    }

    private mutating func value(depth: Int) throws(Problem) {
        guard depth < Self.maxDepth else { throw problem("nested deeper than \(Self.maxDepth) levels") }
        guard let byte = current else { throw problem("unexpected end, expected a value") }
        switch byte {
        case UInt8(ascii: "{"): try object(depth: depth)
        case UInt8(ascii: "["): try array(depth: depth)
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "t"): try expect("true")
        case UInt8(ascii: "f"): try expect("false")
        case UInt8(ascii: "n"): try expect("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw problem("unexpected character, expected a value")
        }
    }

    private mutating func object(depth: Int) throws(Problem) {
        position += 1
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            guard current == UInt8(ascii: "\"") else { throw problem("expected a string key") }
            try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw problem("expected ':' after a key") }
            position += 1
            skipWhitespace()
            try value(depth: depth + 1)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                position += 1
                return
            default:
                throw problem("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func array(depth: Int) throws(Problem) {
        position += 1
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            position += 1
            return
        }
        while true {
            try value(depth: depth + 1)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                position += 1
                return
            default:
                throw problem("expected ',' or ']' in an array")
            }
        }
    }

    private mutating func string() throws(Problem) {
        position += 1
        while let byte = current {
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return
            case UInt8(ascii: "\\"):
                position += 1
                guard let escaped = current else { throw problem("unterminated escape") }
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                    UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    position += 1
                case UInt8(ascii: "u"):
                    position += 1
                    for _ in 0..<4 {
                        guard let hex = current, hex.isHexDigit else { throw problem("invalid \\u escape") }
                        position += 1
                    }
                default:
                    throw problem("invalid escape")
                }
            case 0x00..<0x20:
                throw problem("unescaped control character in a string")
            case 0x80...:
                try utf8Sequence()
            default:
                position += 1
            }
        }
        throw problem("unterminated string")
    }

    /// One multi-byte UTF-8 sequence, checked strictly (no overlongs, no surrogates).
    private mutating func utf8Sequence() throws(Problem) {
        let lead = bytes[position]
        let length: Int
        var lowerBound: UInt8 = 0x80
        var upperBound: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lowerBound = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upperBound = 0x9F
        case 0xF0: length = 4; lowerBound = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upperBound = 0x8F
        default: throw problem("invalid UTF-8")
        }
        guard position + length <= bytes.count else { throw problem("truncated UTF-8") }
        let second = bytes[position + 1]
        guard second >= lowerBound && second <= upperBound else { throw problem("invalid UTF-8") }
        for index in 2..<max(length, 2) where !(0x80...0xBF).contains(bytes[position + index]) {
            throw problem("invalid UTF-8")
        }
        position += length
    }

    private mutating func number() throws(Problem) {
        if current == UInt8(ascii: "-") { position += 1 }
        guard let first = current, first.isDigit else { throw problem("expected a digit") }
        position += 1
        if first != UInt8(ascii: "0") {
            while let byte = current, byte.isDigit { position += 1 }
        }
        if current == UInt8(ascii: ".") {
            position += 1
            guard let byte = current, byte.isDigit else { throw problem("expected a digit after '.'") }
            while let byte = current, byte.isDigit { position += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard let byte = current, byte.isDigit else { throw problem("expected a digit in the exponent") }
            while let byte = current, byte.isDigit { position += 1 }
        }
    }
}

extension UInt8 {
    fileprivate var isDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
    fileprivate var isHexDigit: Bool {
        isDigit || (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "f"))
            || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "F"))
    }
}
