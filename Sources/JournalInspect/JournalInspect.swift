import Foundation
import Outbox

/// `journal-inspect`: the support engineer's tool, as a library the thin executable calls.
///
/// ```swift
/// exit(JournalInspect.main(Array(CommandLine.arguments.dropFirst())))
/// ```
public enum JournalInspect {
    /// The tool's version; the journal format it reads is `RecordCodec.formatVersion`.
    public static let version = "1.0.0"

    /// Runs one command line in the real process; answers the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        run(arguments, context: .process()).rawValue
    }

    /// Runs one command line: parses it, opens the journal read-only, runs the command, writes
    /// to the context's outputs.
    public static func run(_ arguments: [String], context: InspectContext) -> ExitCode {
        switch CommandLineParser.parse(arguments) {
        case .failure(let error):
            return usage(error, context: context)
        case .success(.help(let topic)):
            context.standardOutput.write(HelpText.text(for: topic))
            return .success
        case .success(.version):
            context.standardOutput.write("journal-inspect \(version) (engine \(Outbox.engineVersion), reads journal format \(RecordCodec.formatVersion))\n")
            return .success
        case .success(.run(let journal, let command, let json, let keyFile)):
            let reader: JournalReader
            do {
                let key = try keyFile.map(readKey)
                reader = try open(journal, key: key)
            } catch let error as UsageError {
                return usage(error, context: context)
            } catch {
                context.standardError.write("journal-inspect: error: \(OpenFailure.message(for: error, path: journal))\n")
                return OpenFailure.exitCode(for: error)
            }
            defer { reader.close() }
            let runner = Runner(reader: reader, context: context, json: json, journalArgument: journal)
            do {
                return try runner.run(command)
            } catch let error as UsageError {
                return usage(error, context: context)
            } catch let failure as RunFailure {
                context.standardError.write("journal-inspect: error: \(failure.message)\n")
                return failure.code
            } catch let error as OutboxError {
                context.standardError.write("journal-inspect: error: \(error.description)\n")
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

    /// Reads an encryption key: 32 raw bytes, or 64 hexadecimal digits (white space ignored).
    static func readKey(_ path: String) throws -> SealingKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read the key file \(path)")
        }
        let text = String(decoding: data, as: UTF8.self).filter { !$0.isWhitespace }
        var bytes = Array(data)
        if text.count == 64, text.allSatisfy(\.isHexDigit) {
            let digits = Array(text)
            bytes = stride(from: 0, to: 64, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
        }
        do {
            return try SealingKey(bytes: bytes)
        } catch {
            throw UsageError("the key file \(path) holds \(data.count) bytes: give 32 bytes, or 64 hex digits")
        }
    }

    /// Opens the journal read-only; `data.mdb` itself stands for its directory.
    static func open(_ path: String, key: SealingKey? = nil) throws -> JournalReader {
        var url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        if url.lastPathComponent == "data.mdb", FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory),
            !isDirectory.boolValue
        {
            url.deleteLastPathComponent()
        }
        return try JournalReader(directory: url, encryptionKey: key)
    }
}

/// A command that could not finish, with its exit code.
struct RunFailure: Error {
    var code: ExitCode
    var message: String
}

/// Why a journal could not be opened, each case in its own words.
enum OpenFailure {
    static func message(for error: any Error, path: String) -> String {
        switch error {
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
            return "\(path) is not an outbox journal: \(reason)."
        case OutboxError.newerFormat(let found, let supported):
            return "\(path) was written in journal format \(found), newer than this tool reads (up to format \(supported)): use a newer journal-inspect."
        case let error as OutboxError:
            return "cannot open \(path): \(error.description)"
        default:
            return "cannot open \(path): \(error)"
        }
    }

    static func exitCode(for error: any Error) -> ExitCode {
        switch error {
        case OutboxError.journalCorrupt, OutboxError.projectionCorrupt: .damaged
        default: .cannotOpen
        }
    }

    /// The exit code for an error met while reading an open journal.
    static func exitCode(forReading error: OutboxError) -> ExitCode {
        switch error {
        case .journalCorrupt, .projectionCorrupt: .damaged
        case .storage: .ioError
        case .operationNotFound: .usage
        default: .internalError
        }
    }
}
