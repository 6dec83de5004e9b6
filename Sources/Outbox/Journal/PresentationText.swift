import Foundation
import OutboxCore
import OutboxCrypto

/// An entity label and a summary, as one sealed value: two length-prefixed UTF-8 strings.
struct PresentationText: Equatable {
    var label: String
    var summary: String

    init(label: String, summary: String) {
        self.label = label
        self.summary = summary
    }

    init?(bytes: [UInt8]) {
        func take(_ offset: inout Int) -> String? {
            guard offset + 4 <= bytes.count else { return nil }
            let count = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard offset + count <= bytes.count else { return nil }
            defer { offset += count }
            return String(validating: bytes[offset..<offset + count], as: UTF8.self)
        }
        var offset = 0
        guard let label = take(&offset), let summary = take(&offset), offset == bytes.count else { return nil }
        self.init(label: label, summary: summary)
    }

    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        for text in [label, summary] {
            let utf8 = Array(text.utf8)
            bytes += UInt32(utf8.count).bigEndianBytes + utf8
        }
        return bytes
    }
}
