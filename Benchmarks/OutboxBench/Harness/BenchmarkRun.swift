import Foundation

/// One invocation: makes the directory, runs the scenarios, prints the report, cleans up.
struct BenchmarkRun {
    let options: Options
    let arguments: [String]

    /// Answers the exit status: 0, or 1 when a scenario failed.
    func run() async -> Int32 {
        let root: URL
        do {
            root = try RunDirectory.create(under: options.directory)
        } catch {
            FileHandle.standardError.write(Data("outbox-bench: \(error)\n".utf8))
            return 1
        }
        defer { try? FileManager.default.removeItem(at: root) }
        let date = Date()
        var machine = Machine.describe(directory: root)
        if machine.filesystem == "tmpfs" {
            FileHandle.standardError.write(Data("outbox-bench: warning: \(root.path) is on tmpfs; the floors mean nothing there\n".utf8))
        }
        let context = Context(options: options, root: root)
        defer { context.stopServices() }
        let results: [ScenarioResult]
        do {
            results = try await Harness(context: context).run(Scenario.all)
        } catch {
            FileHandle.standardError.write(Data("outbox-bench: a scenario failed: \(error)\n".utf8))
            return 1
        }
        machine.loadAverageAtEnd = Machine.loadAverage()
        let command = (["outbox-bench"] + arguments).joined(separator: " ")
        if options.json {
            do {
                print(try JSONReport(results, machine: machine, options: options, command: command, date: date).encoded(), terminator: "")
            } catch {
                FileHandle.standardError.write(Data("outbox-bench: cannot encode the report: \(error)\n".utf8))
                return 1
            }
        } else {
            print(TextReport.render(results, machine: machine, options: options, command: command), terminator: "")
        }
        return 0
    }
}
