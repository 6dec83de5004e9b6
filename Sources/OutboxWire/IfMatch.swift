/// An `If-Match` header (RFC 9110, 13.1.1): the revisions an update may apply to.
///
/// `*` matches any record that exists; otherwise a list of entity tags, compared strongly: a
/// weak tag (`W/"3"`) never matches, since an update needs the exact revision. What both
/// servers of the package read: the loopback test server and the in-memory one.
package struct IfMatch: Equatable, Sendable {
    /// `true` for `*`.
    package var any: Bool
    /// The tags listed, without quotes; weak ones left out (they match nothing).
    package var strongTags: [String]
    /// The weak tags listed (`W/"3"` as `3`): kept only to say why they did not match.
    package var weakTags: [String] = []

    /// Why a header is not an `If-Match` the server can read: answered 400, nothing written.
    package struct Invalid: Error, Equatable {
        package var message: String
    }

    /// The header parsed; `nil` when it is absent (the update applies whatever the revision).
    /// - Throws: ``Invalid`` for anything but `*` or a list of quoted entity tags.
    package static func parse(_ header: String?) throws(Invalid) -> IfMatch? {
        guard let header else { return nil }
        let text = Array(header.utf8)
        let blank: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t")]
        if text.filter({ !blank.contains($0) }) == [UInt8(ascii: "*")] { return IfMatch(any: true, strongTags: []) }
        var tags: [String] = []
        var weakTags: [String] = []
        var listed = 0
        var index = 0
        func skipSeparators() {
            while index < text.count, blank.contains(text[index]) || text[index] == UInt8(ascii: ",") { index += 1 }
        }
        skipSeparators()
        while index < text.count {
            var weak = false
            if text[index] == UInt8(ascii: "W"), index + 1 < text.count, text[index + 1] == UInt8(ascii: "/") {
                weak = true
                index += 2
            }
            guard index < text.count, text[index] == UInt8(ascii: "\"") else { throw invalid(header) }
            index += 1
            let start = index
            // etagc: any visible byte but the quote, and bytes past ASCII.
            while index < text.count, text[index] != UInt8(ascii: "\""), text[index] == 0x21 || text[index] >= 0x23 && text[index] != 0x7F {
                index += 1
            }
            guard index < text.count, text[index] == UInt8(ascii: "\"") else { throw invalid(header) }
            let tag = String(decoding: text[start..<index], as: UTF8.self)
            index += 1
            listed += 1
            if weak { weakTags.append(tag) } else { tags.append(tag) }
            let before = index
            skipSeparators()
            guard index == text.count || text[before..<index].contains(UInt8(ascii: ",")) else { throw invalid(header) }
        }
        guard listed > 0 else { throw invalid(header) }
        return IfMatch(any: false, strongTags: tags, weakTags: weakTags)
    }

    /// Whether an update of the record at `revision` may apply.
    package func matches(revision: Int) -> Bool {
        any || strongTags.contains(String(revision))
    }

    private static func invalid(_ header: String) -> Invalid {
        Invalid(message: #"If-Match must be * or entity tags in quotes, like "3" (the record's revision), not "# + header)
    }
}
