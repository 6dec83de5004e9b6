import Foundation
import TestHarness
import Synchronization

/// The store's processes and the shell that keeps them (see ``TemporarySwiftStore``).
final class StoreProcesses: Sendable {
    /// The store's directory, which the keeper removes.
    let directory: String
    /// The keeping shell; its standard input is the lifeline, on which each pid is sent.
    private let keeper: SpawnedProcess
    private let state = Mutex(State())

    private struct State {
        var processes: [(name: String, process: SpawnedProcess)] = []
        var stopped = false
    }

    /// Starts the keeper of `directory`; from here on the directory goes when the store stops or
    /// this process ends.
    init(directory: String) throws {
        do {
            // Like every pipe of SpawnedProcess, this process's end of the lifeline is
            // close-on-exec: no server started later holds it and keeps the store alive.
            keeper = try SpawnedProcess(
                "/bin/sh", ["-c", TemporarySwiftStore.keeperScript, "outbox-swift-keeper", directory],
                environment: TemporarySwiftStore.environment(), input: .pipe, output: .null, errors: .null)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        self.directory = directory
    }

    /// Starts `program` in the store's directory, its standard output and error in
    /// `logs/<name>.out` and `logs/<name>.err`, and tells the keeper its pid.
    func launch(_ name: String, _ program: String, _ arguments: [String]) throws {
        let process = try SpawnedProcess(
            program, arguments, environment: TemporarySwiftStore.environment(), workingDirectory: directory,
            input: .null, output: .file("\(directory)/logs/\(name).out"), errors: .file("\(directory)/logs/\(name).err"))
        state.withLock { $0.processes.append((name, process)) }
        // The keeper reads until this process closes the pipe: a write fails only once it is gone.
        try keeper.input!.write("\(process.pid)\n")
    }

    /// The first process that has ended, how, and the end of what it wrote; `nil` while all run.
    func firstEnded() -> String? {
        let processes = state.withLock { $0.processes }
        for (name, process) in processes {
            if let termination = process.poll() {
                return "\(name) ended (\(termination)): \(logs(of: name))"
            }
        }
        return nil
    }

    /// The end of what `name` wrote to its standard error and output.
    func logs(of name: String) -> String {
        let text = ["err", "out"].compactMap { try? String(contentsOfFile: "\(directory)/logs/\(name).\($0)", encoding: .utf8) }.joined()
        return text.isEmpty ? "(nothing written)" : String(text.suffix(1500))
    }

    /// The end of what every process wrote.
    func allLogs() -> String {
        state.withLock { $0.processes.map(\.name) }.map { "\($0): \(logs(of: $0))" }.joined(separator: "; ")
    }

    /// Kills every process and waits for each, then closes the lifeline and waits for the keeper
    /// to remove the directory. Stopping twice does nothing.
    func stop() {
        let processes: [(name: String, process: SpawnedProcess)]? = state.withLock { state in
            if state.stopped { return nil }
            state.stopped = true
            return state.processes
        }
        guard let processes else { return }
        for (_, process) in processes { process.kill() }
        for (_, process) in processes { _ = process.wait() }
        keeper.input!.close()
        _ = keeper.wait()
    }
}
