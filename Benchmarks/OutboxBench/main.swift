// outbox-bench: the engine against a mutable SQLite outbox and the disk's own limits, side by side
// in one run. See Docs/benchmarks.md.
import Dispatch
import Foundation

let command: Command
do {
    command = try CommandLineParser.parse(Array(CommandLine.arguments.dropFirst()))
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
    // The main thread waits instead of running `dispatch_main`, which ends it with `pthread_exit`:
    // valgrind (callgrind, for profiles) cannot follow a process whose main thread has exited.
    // Detached: a task inheriting the main actor would wait for the blocked main thread forever.
    let finished = DispatchSemaphore(value: 0)
    Task.detached {
        let status = await BenchmarkRun(options: options, arguments: Array(CommandLine.arguments.dropFirst())).run()
        exit(status)
    }
    finished.wait()
}
