// A second process for the tests: it opens a journal the test process is writing, and does
// what the test tells it on standard input. Not shipped.
//
//   outbox-test-child snapshot <journal-dir>
//       Opens the journal read-only and, inside one read snapshot, prints "events <n>", waits
//       for a line on standard input, and prints "events <n>" again from the same snapshot.
//       Then prints "fresh <n>" from a new snapshot.
import Foundation
import Outbox
import OutboxStorage

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("outbox-test-child: \(message)\n".utf8))
    exit(1)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments.dropFirst()
guard let command = arguments.first, let path = arguments.dropFirst().first else {
    fail("usage: outbox-test-child snapshot <journal-dir>")
}

switch command {
case "snapshot":
    do {
        let reader = try JournalReader(directory: URL(fileURLWithPath: path))
        try reader.withSnapshot { txn in
            let first = try reader.eventCount(in: txn)
            say("events \(first)")
            _ = readLine()
            say("events \(try reader.eventCount(in: txn))")
        }
        say("fresh \(try reader.withSnapshot { txn in try reader.eventCount(in: txn) })")
        reader.close()
    } catch {
        fail("\(error)")
    }
default:
    fail("unknown command \(command)")
}
