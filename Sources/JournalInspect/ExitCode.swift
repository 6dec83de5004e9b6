/// The tool's exit codes, from sysexits.h where one fits.
package enum ExitCode: Int32, Sendable {
    case success = 0
    /// `verify` found something.
    case findings = 1
    /// The command line does not parse, or an id matches no operation or several.
    case usage = 64
    /// The journal is damaged where the command had to read.
    case damaged = 65
    /// The journal cannot be opened: missing, not a journal, a newer format.
    case cannotOpen = 66
    /// A bug: something the tool did not expect.
    case internalError = 70
    /// The output file cannot be written.
    case cannotCreate = 73
    /// Reading failed (an I/O error).
    case ioError = 74
}
