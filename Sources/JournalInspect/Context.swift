package import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where text goes: standard output or error, or a buffer in tests.
package protocol TextOutput: Sendable {
    func write(_ text: String)
}

/// A file descriptor written at once, unbuffered: `events --follow` lines appear as they come.
package struct FileDescriptorOutput: TextOutput {
    let handle: FileHandle

    package static let standardOutput = FileDescriptorOutput(handle: .standardOutput)
    package static let standardError = FileDescriptorOutput(handle: .standardError)

    package func write(_ text: String) {
        handle.write(Data(text.utf8))
    }
}

/// What a run depends on besides its arguments, so tests can run commands in-process.
package struct InspectContext: Sendable {
    /// The moment ages are measured against.
    package var now: Date
    package var standardOutput: any TextOutput
    package var standardError: any TextOutput
    /// Whether to colour the output.
    package var style: Style
    /// How long `events --follow` waits between looks at the journal.
    package var followPollSeconds: Double
    /// The calls that write a file (`report --html`): a test makes one fail as a full disk would.
    var fileWriteCalls = FileWriteCalls.system

    package init(now: Date, standardOutput: any TextOutput, standardError: any TextOutput, style: Style = .plain,
                followPollSeconds: Double = 0.2) {
        self.now = now
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.style = style
        self.followPollSeconds = followPollSeconds
    }

    /// The real process: its clock, its standard output and error, colour on a terminal unless
    /// `NO_COLOR` is set.
    package static func process() -> InspectContext {
        InspectContext(
            now: Date(),
            standardOutput: FileDescriptorOutput.standardOutput,
            standardError: FileDescriptorOutput.standardError,
            style: Style(enabled: Style.isColorWanted(stdoutIsTerminal: isatty(STDOUT_FILENO) == 1,
                                                      environment: ProcessInfo.processInfo.environment))
        )
    }
}
