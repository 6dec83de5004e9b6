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

/// A file descriptor written at once, unbuffered: `events --follow` lines appear as they come,
/// and a follower ended by a signal has nothing left unwritten.
package struct FileDescriptorOutput: TextOutput {
    let descriptor: Int32

    package static let standardOutput = FileDescriptorOutput(descriptor: STDOUT_FILENO)
    package static let standardError = FileDescriptorOutput(descriptor: STDERR_FILENO)

    /// Writes all of `text`. A reader that has gone (`journal-inspect ... | head`, with SIGPIPE
    /// ignored by whoever started the tool) ends the tool quietly, as the signal would have; a
    /// failed write (a full disk under a redirection) ends it with 74, saying so on standard
    /// error when that is not the stream that failed.
    package func write(_ text: String) {
        var bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeMutableBytes { systemWrite(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count >= 0 {
                written += count
                continue
            }
            let failure = errno
            if failure == EINTR { continue }
            if failure == EPIPE { _exit(128 + SIGPIPE) }
            if descriptor != STDERR_FILENO {
                FileDescriptorOutput.standardError.write(
                    "journal-inspect: error: writing the output failed (\(String(cString: strerror(failure)))); it is incomplete\n")
            }
            _exit(ExitCode.ioError.rawValue)
        }
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

/// `write(2)`, under a name the output's own `write` does not shadow.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
