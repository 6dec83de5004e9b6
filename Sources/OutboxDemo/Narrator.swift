public import Foundation
import Synchronization

/// Where the demo's lines go: text for a person, or one JSON object per line for a machine.
public final class Narrator: Sendable {
    /// Who said it.
    public enum Source: String, Sendable {
        /// The demo setting the scene (the signal dropping, the member saving).
        case scene
        /// The engine: its answers, its events as they committed, its views.
        case engine
        /// The loopback server, as it handled each request.
        case server
        /// A promise the demo checks.
        case check
    }

    /// One line, as the JSON output carries it.
    public struct Line: Sendable, Codable, Equatable {
        public var moment: Date
        public var source: String
        public var text: String
        public var fields: [String: String]
    }

    private let json: Bool
    private let write: @Sendable (String) -> Void
    private let recorded = Mutex<[Line]>([])
    private let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - json: one JSON object per line instead of text.
    ///   - clock: the demo's clock, for each line's moment.
    ///   - write: where each finished line goes (standard output, or a test's buffer).
    public init(json: Bool, clock: @escaping @Sendable () -> Date, write: @escaping @Sendable (String) -> Void) {
        self.json = json
        self.clock = clock
        self.write = write
    }

    /// Every line said so far.
    public var lines: [Line] { recorded.withLock { $0 } }

    public func say(_ source: Source, _ text: String, _ fields: [String: String] = [:]) {
        let line = Line(moment: clock(), source: source.rawValue, text: text, fields: fields)
        recorded.withLock { $0.append(line) }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            if let data = try? encoder.encode(line) { write(String(decoding: data, as: UTF8.self) + "\n") }
        } else {
            let time = Self.timeFormatter.string(from: line.moment)
            let prefix = "\(time)  \(source.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0))  "
            let indent = String(repeating: " ", count: prefix.count)
            write(prefix + text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + indent) + "\n")
        }
    }

    private static var timeFormatter: DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "HH:mm:ss"
        return formatter
    }
}
