// outbox-demo: the engine's main job, end to end, in one command.
//
//   swift run outbox-demo [--journal <dir>] [--speed <n>] [--json]
//
// Runs a pharmacy's afternoon against a loopback server and narrates it; exits 1 if a promise
// it prints did not hold, 64 on a usage error.
import Foundation
import OutboxDemo

let usage = """
    usage: outbox-demo [--journal <dir>] [--speed <n>] [--json]

      --journal <dir>   keep the journal in <dir>, to open it with journal-inspect afterwards
      --speed <n>       virtual seconds per real second (default 60): the afternoon's retries come sooner
      --json            one JSON object per line instead of text

    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("outbox-demo: \(message)\n\(usage)".utf8))
    exit(64)
}

var options = DemoOptions()
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--journal":
        guard let path = arguments.popFirst() else { fail("--journal needs a directory") }
        options.journal = URL(fileURLWithPath: path)
    case "--speed":
        guard let text = arguments.popFirst(), let speed = Double(text), speed > 0 else { fail("--speed needs a positive number") }
        options.speed = speed
    case "--json":
        options.json = true
    case "-h", "--help":
        print(usage, terminator: "")
        exit(0)
    default:
        fail("unknown option \(argument)")
    }
}

do {
    let outcome = try await PharmacyAfternoon.run(options) { line in
        FileHandle.standardOutput.write(Data(line.utf8))
    }
    if options.journal != nil, !options.json {
        print("\nThe journal is kept: swift run journal-inspect \(outcome.journal.path) timeline <id>")
    }
    exit(outcome.allHeld ? 0 : 1)
} catch {
    FileHandle.standardError.write(Data("outbox-demo: \(error)\n".utf8))
    exit(1)
}
