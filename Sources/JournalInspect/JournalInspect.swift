import Foundation
import Outbox
import OutboxAudit

/// `journal-inspect`: the support engineer's tool, as a library the thin executable calls.
///
/// ```swift
/// exit(JournalInspect.main(Array(CommandLine.arguments.dropFirst())))
/// ```
package enum JournalInspect {
    /// The tool's version; the journal format it reads is `RecordCodec.formatVersion`.
    package static let version = "1.0.0"

    /// Runs one command line in the real process; answers the exit status.
    ///
    /// A command that reads a journal runs in a child process (``ReadingProcess``): a read that
    /// faults on a damaged file ends the child, and this process reports it as damage (exit 65)
    /// instead of dying of the signal. Help, version and usage errors need no child.
    package static func main(_ arguments: [String]) -> Int32 {
        if !ReadingProcess.isChild, case .success(.run(let journal, _, _, _, _)) = CommandLineParser.parse(arguments),
            let status = ReadingProcess.run(arguments, journal: journal)
        {
            return status
        }
        // The reading child itself, or no child could be started: read in this process.
        if ReadingProcess.isChild { Lifeline.hold(parentDeathSignal: !StepHook.pipeOnly) }
        return run(arguments, context: .process()).rawValue
    }

    /// Runs one command line: parses it, opens the journal read-only, runs the command, writes
    /// to the context's outputs.
    package static func run(_ arguments: [String], context: InspectContext) -> ExitCode {
        switch CommandLineParser.parse(arguments) {
        case .failure(let error):
            return usage(error, context: context)
        case .success(.help(let topic)):
            context.standardOutput.write(HelpText.text(for: topic))
            return .success
        case .success(.version):
            context.standardOutput.write("journal-inspect \(version) (engine \(Outbox.engineVersion), reads journal format \(RecordCodec.formatVersion))\n")
            return .success
        case .success(.run(let journal, let command, let json, let keyFile, let view)):
            let reader: JournalReader
            do {
                let key = try keyFile.map(KeyFile.read)
                if let refusal = JournalAccess.refusal(journal: journal, directory: journalDirectory(journal).path) {
                    context.standardError.write("journal-inspect: error: \(refusal)\n")
                    return .cannotOpen
                }
                reader = try open(journal, key: key)
            } catch let error as UsageError {
                return usage(error, context: context)
            } catch {
                let directory = journalDirectory(journal).path
                context.standardError.write("journal-inspect: error: \(OpenFailure.message(for: error, path: directory))\n")
                return OpenFailure.exitCode(for: error)
            }
            defer { reader.close() }
            if reader.isReadWithoutLockFile {
                context.standardError.write(
                    "journal-inspect: warning: \(journal): read without LMDB's lock file, because "
                        + "\(JournalAccess.lockFileNote(directory: reader.path)); a writer's changes made meanwhile may not "
                        + "show consistently\n")
            }
            do {
                let moments = try view.moments(reader: reader, clock: context.now)
                let runner = Runner(reader: reader, context: context, json: json, journalArgument: journal, moments: moments)
                return try runner.run(command)
            } catch let error as UsageError {
                return usage(error, context: context)
            } catch let failure as RunFailure {
                context.standardError.write("journal-inspect: error: \(failure.message)\n")
                return failure.code
            } catch let error as OutboxError {
                context.standardError.write("journal-inspect: error: \(OpenFailure.message(forReading: error, path: journal))\n")
                return OpenFailure.exitCode(forReading: error)
            } catch {
                context.standardError.write("journal-inspect: error: \(error)\n")
                return .internalError
            }
        }
    }

    private static func usage(_ error: UsageError, context: InspectContext) -> ExitCode {
        let help = error.command.map { "journal-inspect \($0.rawValue) --help" } ?? "journal-inspect --help"
        context.standardError.write("journal-inspect: error: \(error.message)\nRun '\(help)' for usage.\n")
        return .usage
    }

    /// Opens the journal read-only; `data.mdb` itself stands for its directory.
    static func open(_ path: String, key: SealingKey? = nil) throws -> JournalReader {
        try JournalReader(directory: journalDirectory(path), encryptionKey: key)
    }

    /// The journal's directory: `path`, or the directory of `path` when it names `data.mdb`.
    /// Asks `stat` only: nothing is opened (a FIFO named data.mdb must not block).
    static func journalDirectory(_ path: String) -> URL {
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        if url.lastPathComponent == "data.mdb", FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory),
            !isDirectory.boolValue
        {
            return url.deletingLastPathComponent()
        }
        return url
    }
}

/// A command that could not finish, with its exit code.
struct RunFailure: Error {
    var code: ExitCode
    var message: String
}

/// Why a journal could not be opened or read, each case in its own words.
enum OpenFailure {
    /// What to do about a journal damaged in its structure, for every message that says so.
    static let damageAdvice =
        "Keep a copy of the journal's directory, as it is, for engineering. On the device, "
            + "Outbox.moveAsideDamagedJournal(at:) moves the journal aside, reporting the writes still waiting, and the app "
            + "starts an empty one"

    static func message(for error: any Error, path: String) -> String {
        switch error {
        case OutboxError.journalDamaged(_, let reason):
            return "\(path): the journal is damaged: \(reason). journal-inspect reads nothing of it, as the app would not. "
                + damageAdvice + "."
        case OutboxError.permissionDenied(let denied):
            return "permission denied for \(denied) (uid \(getuid())): ask for read access to the journal's directory and its "
                + "data.mdb, or work on a copy this user can read."
        case OutboxError.notAJournal(_, let reason):
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            if !exists {
                return "no journal at \(path): nothing exists at this path. Give the journal's directory (the one holding data.mdb)."
            }
            if isDirectory.boolValue,
                !FileManager.default.fileExists(atPath: URL(fileURLWithPath: path).appendingPathComponent("data.mdb").path)
            {
                return "no journal at \(path): the directory holds no data.mdb. Give the journal's directory (the one holding data.mdb)."
            }
            if !isDirectory.boolValue {
                return "\(path) is a file, not a journal: give the journal's directory (the one holding data.mdb)."
            }
            if let empty = emptyDataFile(path) {
                return "\(path) holds no journal: \(empty) is empty (0 bytes), so nothing was ever saved in it. An app "
                    + "stopped while creating its journal leaves this, and creates the journal anew at its next open; if this "
                    + "is a copy, copy the journal's directory again."
            }
            return "\(path) is not an outbox journal: \(reason)."
        case OutboxError.newerFormat(let found, let supported):
            return "\(path) was written in journal format \(found), newer than this tool reads (up to format \(supported)): use a newer journal-inspect."
        case let error as OutboxError:
            return "cannot open \(path): \(error.description)"
        default:
            return "cannot open \(path): \(error)"
        }
    }

    /// The path of `data.mdb` when it is an empty regular file, for the message that says so.
    private static func emptyDataFile(_ path: String) -> String? {
        let data = URL(fileURLWithPath: path).appendingPathComponent("data.mdb").path
        var info = stat()
        guard stat(data, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size == 0 else { return nil }
        return data
    }

    static func exitCode(for error: any Error) -> ExitCode {
        switch error {
        case OutboxError.journalCorrupt, OutboxError.projectionCorrupt, OutboxError.journalDamaged: .damaged
        case let error as OutboxError where error.isStructuralDamage: .damaged
        default: .cannotOpen
        }
    }

    /// The message for an error met while reading an open journal.
    static func message(forReading error: OutboxError, path: String) -> String {
        guard case .storage(let code, _) = error, error.isStructuralDamage else { return error.description }
        return "\(path): the journal is damaged: LMDB met a page it cannot follow (\(OutboxError.storageCodeName(code))) while "
            + "reading; what was printed before this still stands. " + damageAdvice + "."
    }

    /// The exit code for an error met while reading an open journal.
    static func exitCode(forReading error: OutboxError) -> ExitCode {
        switch error {
        case .journalCorrupt, .projectionCorrupt, .journalDamaged: .damaged
        case let error where error.isStructuralDamage: .damaged
        case .storage: .ioError
        case .operationNotFound: .usage
        default: .internalError
        }
    }
}
