// A second process for the tests: it opens a journal and does what the test tells it, until the
// test is done with it or kills it. Not shipped.
//
//   outbox-test-child snapshot <journal-dir>
//       Opens the journal read-only and, inside one read snapshot, prints "events <n>", waits
//       for a line on standard input, and prints "events <n>" again from the same snapshot.
//       Then prints "fresh <n>" from a new snapshot.
//
//   outbox-test-child crash-worker <journal-dir> <server-url> <first> <count> <full|processCrash>
//       Opens the journal as the engine, sends to the server, and enqueues products numbered
//       first ..< first+count, printing "enqueued <id> <n>" once each enqueue has returned (is
//       durable), draining after every second one. Prints "done" at the end. The test kills it
//       with SIGKILL at moments of its choosing.
//
//   outbox-test-child settle <journal-dir> <server-url>
//       Opens the journal as the engine and drains until nothing is queued or syncing, then
//       prints "settled <synced> <other>".
//
//   outbox-test-child hold <journal-dir> <account>
//   outbox-test-child fill-limited <journal-dir> <bytes>
//       See StorageModes.swift: a second writer process, and a file-size limit met mid-write.
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

/// The engine as the crash tests run it: short backoff, so retries happen within the test.
func openEngine(_ path: String, _ serverURL: String, durability: Durability) throws -> Outbox {
    guard let url = URL(string: serverURL) else { fail("not a URL: \(serverURL)") }
    return try Outbox(
        directory: URL(fileURLWithPath: path),
        transport: URLSessionTransport(baseURL: url, timeoutSeconds: 5),
        configuration: OutboxConfiguration(
            account: "crash-member",
            retryPolicy: RetryPolicy(initialDelaySeconds: 0.01, multiplier: 2, maxDelaySeconds: 0.05),
            maxConcurrentLanes: 2,
            durability: durability
        )
    )
}

func product(_ number: Int) -> OutboxRequest {
    OutboxRequest(
        businessID: "crash-pharmacy", operationType: "product.create", endpoint: "/products",
        payload: Data(#"{"id":"crash-\#(number)","name":"Product \#(number)"}"#.utf8),
        entityID: "shelf-\(number % 3)", category: "Products", entityLabel: "Product \(number)", summary: "New product"
    )
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first, arguments.count >= 2 else {
    fail("usage: outbox-test-child snapshot|crash-worker|settle <journal-dir> ...")
}
let path = arguments[1]

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

case "crash-worker":
    guard arguments.count == 6, let first = Int(arguments[3]), let count = Int(arguments[4]),
        let durability = Durability(rawValue: arguments[5])
    else { fail("usage: crash-worker <journal-dir> <server-url> <first> <count> <full|processCrash>") }
    do {
        let outbox = try openEngine(path, arguments[2], durability: durability)
        outbox.wake(.appLaunch)
        for number in first..<first + count {
            let id = try await outbox.enqueue(product(number))
            say("enqueued \(id) \(number)")
            if number % 2 == 0 { await outbox.drain() }
        }
        await outbox.drain()
        say("done")
        outbox.close()
    } catch {
        fail("\(error)")
    }

case "settle":
    guard arguments.count == 3 else { fail("usage: settle <journal-dir> <server-url>") }
    do {
        let outbox = try openEngine(path, arguments[2], durability: .full)
        for _ in 0..<500 {
            await outbox.drain()
            let depth = try outbox.metrics().queueDepth
            if depth[.queued, default: 0] + depth[.syncing, default: 0] == 0 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let depth = try outbox.metrics().queueDepth
        let synced = depth[.synced, default: 0]
        say("settled \(synced) \(depth.values.reduce(0, +) - synced)")
        outbox.close()
    } catch {
        fail("\(error)")
    }

case "hold":
    guard arguments.count == 3 else { fail("usage: hold <journal-dir> <account>") }
    holdJournal(path, account: arguments[2])

case "fill-limited":
    guard arguments.count == 3, let bytes = Int(arguments[2]) else { fail("usage: fill-limited <journal-dir> <bytes>") }
    await fillUnderFileSizeLimit(path, extraBytes: bytes)

default:
    fail("unknown command \(command)")
}
