extension JSONNode {
    /// The value written again as JSON text with every object's members in the order of their
    /// names' UTF-8 bytes, without white space: the same value read from two texts that differ
    /// only in spacing or member order is the same bytes, so it is stored and hashed once.
    ///
    /// Strings are written by ``quoted(_:)`` (RFC 8259's escapes, `/` left as it is), numbers
    /// exactly as they were written (never rounded through a `Double`: `12.50` stays `12.50`).
    /// `nil` when an object names a member twice: which of the two the text meant is not
    /// guessed, so no one order of them is the value's.
    ///
    /// ```swift
    /// try JSONNode.read(Array(#"{ "b": 1, "a": [true, "x/y"] }"#.utf8)).sortedText()
    /// // {"a":[true,"x/y"],"b":1}
    /// ```
    package func sortedText() -> [UInt8]? {
        var out: [UInt8] = []
        return write(into: &out) ? out : nil
    }

    /// Appends the value's sorted text to `out`; `false` when a name repeats.
    private func write(into out: inout [UInt8]) -> Bool {
        switch self {
        case .object(let members):
            let sorted = members.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            out.append(UInt8(ascii: "{"))
            for (index, member) in sorted.enumerated() {
                if index > 0 {
                    // Sorted, a name written twice stands beside its twin.
                    if member.name.hasSameBytes(as: sorted[index - 1].name) { return false }
                    out.append(UInt8(ascii: ","))
                }
                out += Self.quoted(member.name).utf8
                out.append(UInt8(ascii: ":"))
                guard member.value.write(into: &out) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard element.write(into: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case .string(let text):
            out += Self.quoted(text).utf8
        case .number(let text):
            out += text.utf8
        case .bool(let value):
            out += (value ? "true" : "false").utf8
        case .null:
            out += "null".utf8
        }
        return true
    }
}
