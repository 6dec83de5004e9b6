// outbox-bench: the engine against a mutable SQLite outbox and the disk's own limits, side by side
// in one run. See Docs/benchmarks.md.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let command: Command
do {
    command = try CommandLineParser.parse(arguments)
} catch {
    FileHandle.standardError.write(Data("outbox-bench: \(error)\n\n\(CommandLineParser.usage)\n".utf8))
    exit(64)
}

switch command {
case .help:
    print(CommandLineParser.usage)
case .probe(let kind, let path):
    exit(Probe.run(kind, path: path))
case .run(let options):
    exit(await BenchmarkRun(options: options, arguments: arguments).run())
}
