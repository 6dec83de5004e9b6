import Foundation
import TestHarness
import JournalInspect
import Testing

/// The support runbook (Docs/support-runbook.md), run: each ticket's journal is written through
/// the engine as `Ticket` writes it, every command the runbook shows is run on it, and what it
/// prints must be what the runbook prints under it, line for line (a line `...` stands for
/// lines left out). The moments are the commands' own (`--now`, `--tz`), so the text holds on
/// any day, in any zone.
@Suite("The support runbook's tickets, from the member's words to the answer", .hangGuard)
struct RunbookTests {
    /// Where the runbook's journals are shown to live.
    static let shownDirectory = "/tmp/runbook"

    @Test(arguments: Ticket.allCases)
    func eachCommandPrintsWhatTheRunbookShows(_ ticket: Ticket) async throws {
        let examples = try RunbookExample.all().filter { $0.journal == ticket.rawValue }
        #expect(examples.count >= 2, "the runbook walks \(ticket.rawValue) in at least two commands")
        let root = TemporaryDirectory("runbook")
        let journal = root.path(ticket.rawValue)
        try await ticket.write(into: journal)
        for example in examples {
            let before = try dataFileDigest(journal)
            // A clock far from every ticket: an age printed without --now would show.
            let result = inspect([journal.path] + example.arguments, now: Date(timeIntervalSince1970: 0))
            #expect(try dataFileDigest(journal) == before, "\(example.command) changed data.mdb")
            #expect(result.code == .success && result.errors.isEmpty, "\(example.command): \(result.code) \(result.errors)")
            let output = result.output.replacingOccurrences(of: root.url.path, with: Self.shownDirectory)
            let printed = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).dropLast()
            #expect(RunbookExample.matches(expected: example.output, printed: Array(printed)),
                    "\(example.command) printed:\n\(output)\nThe runbook shows:\n\(example.output.joined(separator: "\n"))")
        }
    }

    @Test func everyTicketOfTheRunbookIsWrittenAndEveryKindOfTicketHasOne() throws {
        let examples = try RunbookExample.all()
        #expect(Set(examples.map(\.journal)) == Set(Ticket.allCases.map(\.rawValue)))
        let headings = try RunbookExample.text().split(separator: "\n").filter { $0.hasPrefix("## Ticket ") }
        #expect(headings.count == Ticket.allCases.count && headings.count >= 8)
        for example in examples {
            #expect(!example.output.isEmpty, "\(example.command) shows no output")
            let ages = example.output.contains { $0.contains(" ago") || $0.contains("(in ") }
            #expect(!ages || example.arguments.contains("--now"), "\(example.command) prints ages: it needs --now")
        }
    }
}

/// One command of the runbook, with the output it shows.
struct RunbookExample {
    /// The command line as shown, `$ journal-inspect ...`.
    var command: String
    var journal: String
    /// The arguments after the journal.
    var arguments: [String]
    var output: [String]

    static func text() throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Docs/support-runbook.md")
        return try String(contentsOf: url, encoding: .utf8)
    }

    /// Every ```text block of the runbook that starts with a command.
    static func all() throws -> [RunbookExample] {
        let lines = try text().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var examples: [RunbookExample] = []
        var index = 0
        while index < lines.count {
            defer { index += 1 }
            guard lines[index] == "```text", index + 1 < lines.count, lines[index + 1].hasPrefix("$ journal-inspect ") else { continue }
            let command = lines[index + 1]
            var output: [String] = []
            index += 2
            while index < lines.count, lines[index] != "```" {
                output.append(lines[index])
                index += 1
            }
            let words = try split(String(command.dropFirst("$ journal-inspect ".count)))
            guard let journal = words.first else { throw FixtureError.unexpected("\(command) names no journal") }
            examples.append(RunbookExample(command: command, journal: journal, arguments: Array(words.dropFirst()), output: output))
        }
        return examples
    }

    /// A command line's words, as a shell splits them: on spaces, double quotes kept together.
    static func split(_ line: String) throws -> [String] {
        var words: [String] = []
        var word = ""
        var quoted = false
        var started = false
        for character in line {
            switch character {
            case "\"":
                quoted.toggle()
                started = true
            case " " where !quoted:
                if started { words.append(word) }
                word = ""
                started = false
            default:
                word.append(character)
                started = true
            }
        }
        guard !quoted else { throw FixtureError.unexpected("an unclosed quote in \(line)") }
        if started { words.append(word) }
        return words
    }

    /// Whether `printed` is `expected`, each `...` line of it standing for any lines (none too).
    static func matches(expected: [String], printed: [String]) -> Bool {
        guard let first = expected.first else { return printed.isEmpty }
        if first == "..." {
            return (0...printed.count).contains { matches(expected: Array(expected.dropFirst()), printed: Array(printed.dropFirst($0))) }
        }
        guard let line = printed.first, same(first, line) else { return false }
        return matches(expected: Array(expected.dropFirst()), printed: Array(printed.dropFirst()))
    }

    /// The summary's lines that measure the file, not the ticket: they change with the journal's
    /// layout and the engine's version, so they are compared by their label.
    static let measuredLabels = ["Format ", "Events ", "On disk "]

    /// Whether a printed line is the line the runbook shows: the same text, with any engine
    /// version, or a measured line of the summary under the same label.
    static func same(_ expected: String, _ printed: String) -> Bool {
        if expected == printed { return true }
        if let label = measuredLabels.first(where: expected.hasPrefix) { return printed.hasPrefix(label) }
        return anyEngineVersion(expected) == anyEngineVersion(printed)
    }

    private static func anyEngineVersion(_ line: String) -> String {
        line.replacingOccurrences(of: #"engine [0-9]+(\.[0-9]+)*"#, with: "engine *", options: .regularExpression)
    }
}
