public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where text goes: standard output or error, or a buffer in tests.
public protocol TextOutput: Sendable {
    func write(_ text: String)
}

/// A file descriptor written at once, unbuffered: `events --follow` lines appear as they come.
public struct FileDescriptorOutput: TextOutput {
    let handle: FileHandle

    public static let standardOutput = FileDescriptorOutput(handle: .standardOutput)
    public static let standardError = FileDescriptorOutput(handle: .standardError)

    public func write(_ text: String) {
        handle.write(Data(text.utf8))
    }
}

/// What a run depends on besides its arguments, so tests can run commands in-process.
public struct InspectContext: Sendable {
    /// The moment ages are measured against.
    public var now: Date
    public var standardOutput: any TextOutput
    public var standardError: any TextOutput
    /// Whether to colour the output.
    public var style: Style
    /// How long `events --follow` waits between looks at the journal.
    public var followPollSeconds: Double
    /// The calls that write a file (`report --html`): a test makes one fail as a full disk would.
    var fileWriteCalls = FileWriteCalls.system

    public init(now: Date, standardOutput: any TextOutput, standardError: any TextOutput, style: Style = .plain,
                followPollSeconds: Double = 0.2) {
        self.now = now
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.style = style
        self.followPollSeconds = followPollSeconds
    }

    /// The real process: its clock, its standard output and error, colour on a terminal unless
    /// `NO_COLOR` is set.
    public static func process() -> InspectContext {
        InspectContext(
            now: Date(),
            standardOutput: FileDescriptorOutput.standardOutput,
            standardError: FileDescriptorOutput.standardError,
            style: Style(enabled: Style.isColorWanted(stdoutIsTerminal: isatty(STDOUT_FILENO) == 1,
                                                      environment: ProcessInfo.processInfo.environment))
        )
    }
}
