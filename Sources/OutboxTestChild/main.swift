// A second process for the tests: it opens a journal and does what the test tells it, until the
// test is done with it or kills it. Not shipped.
//
//   outbox-test-child snapshot <journal-dir>
//       Opens the journal read-only and, inside one read snapshot, prints "events <n>", waits
//       for a line on standard input, and prints "events <n>" again from the same snapshot.
//       Then prints "fresh <n>" from a new snapshot.
//
//   outbox-test-child crash-worker <journal-dir> <server-url> <first> <writers> <per-writer>
//                                  <full|processCrash> <write|compact> <none|step:n>
//       Opens the journal as the engine (printing "opening" before and "opened" after), sends to
//       the server, and runs <writers> tasks at once, each enqueueing <per-writer> products
//       numbered from <first> up, so their enqueues share the writer's commits. Each enqueue
//       that returned (is durable) is printed at once as "enqueued <id> <n>"; each writer drains
//       after every second one. In `compact` mode it compacts every settled operation before the
//       writers start, after each of their drains (one compaction at a time) and once after the
//       last drain, printing "compacting" before each and "compacted <operations> <events>"
//       after; the journal also compacts on its own past 300 events. Once every writer is done
//       it prints "written", drains ("drained"), closes ("closed") and prints "done". At
//       <step>:<n> it prints "stop <step> <n>" and kills itself with SIGKILL at the n-th pass of
//       that step (Steps.swift): "opening" (before the engine opens the journal), "opened" (the
//       opening's commit), "enqueue" (an enqueue's commit, before it returns), "start"
//       (attemptStarted durable, the request not yet sent), "answer" (the server's answer back,
//       its outcome not yet committed), "outcome" (the outcome's commit), "compact" (a
//       compaction's last commit, before it returns), "written" (after the last enqueue) and
//       "closed" (after close). With `none` it runs to its end, unless the test kills it.
//
//   outbox-test-child settle <journal-dir> <server-url>
//       Opens the journal as the engine and drains until nothing is queued or syncing, then
//       prints "settled <synced> <other>".
//
//   outbox-test-child record-worker <journal-dir> <server-url> <tag> <first> <script>
//                                   <full|processCrash> <none|step:n>
//       The member's records (RecordModes.swift): opens the journal as the engine ("opening",
//       "opened"), sends to the server, and runs the script's actions one after another
//       (comma-separated: e<k> edits product <tag>-k<k> with its write, l<k> writes the local
//       draft <tag>-d<k>, v/V revises a failed, blocked or conflicted write, moving its change
//       (the same value sent again) or with a new value and its change, m/M/t resolves a
//       conflicted one, r retries, x discards, a acknowledges a rollback, d drains). Prints what returned: "enqueued <id> <record-id> <sha256>",
//       "revised <old> <new> <record-id> <sha256|moved>", "resolved <old> theirs <record-id>",
//       "retried <id>", "discarded <id>", "skipped <action>", "refused <action>", "drained"; and
//       each durable step as it passes it: "step enqueue <id>" (the enqueue's commit), "step
//       start <key> <if-match|->" (attemptStarted durable, the request not yet sent), "step
//       answer <key> <status|none>" (the answer back, its outcome not yet committed), "step
//       outcome <id> <disposition>" (the outcome's commit), "step supersede <old>", "step
//       abandon <id|- count>" (interrupted attempts abandoned, at open or in a pass), "step local <record-id> <n> <sha256>", "step acknowledge <record-id>".
//       At <step>:<n> it prints "stop <step> <n>" and kills itself with SIGKILL inside that
//       step. Then "written", "drained", "closed", "done".
//
//   outbox-test-child record-settle <journal-dir> <server-url>
//       Drains, discarding what failed or was blocked and keeping the server's version of what
//       conflicted, until every write has ended; prints "settled <synced> <not ended>".
//
//   outbox-test-child attach-worker <journal-dir> <server-url> <photo-file> <none|step:n>
//       A photo attached with no signal, uploaded once the test sends "online", killed at a
//       step of its upload: see AttachmentModes.swift.
//
//   outbox-test-child hold <journal-dir> <account>
//   outbox-test-child fill-limited <journal-dir> <bytes>
//       See StorageModes.swift: a second writer process, and a file-size limit met mid-write.
import Foundation
import Outbox
import OutboxAudit
import OutboxStorage

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("outbox-test-child: \(message)\n".utf8))
    exit(1)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The engine as the crash tests run it: short backoff, so retries happen within the test.
/// With `steps`, its durable steps are passed (see Steps.swift): the opening's commit, each
/// enqueue's, `attemptStarted`, the answer, each outcome's, each compaction's.
func openEngine(
    _ path: String, _ serverURL: String, durability: OutboxConfiguration.Durability, compaction: OutboxConfiguration.CompactionPolicy? = nil, steps: Steps? = nil
) throws -> Outbox {
    guard let url = URL(string: serverURL) else { fail("not a URL: \(serverURL)") }
    let http = URLSessionTransport(baseURL: url, timeoutSeconds: 5)
    return try Outbox(
        directory: URL(fileURLWithPath: path),
        transport: steps.map { SteppingTransport(inner: http, steps: $0) } ?? http,
        configuration: OutboxConfiguration(
            account: "crash-member",
            retryPolicy: OperationTypePolicy.RetryPolicy(initialDelaySeconds: 0.01, multiplier: 2, maxDelaySeconds: 0.05),
            maxConcurrentLanes: 2,
            operationPolicies: productPolicies,
            durability: durability,
            compaction: compaction,
            logger: steps.map { OutboxLogger(label: "crash-worker", handler: StepLogHandler(steps: $0, openingAndCompaction: true)) }
                ?? OutboxLogger()
        )
    )
}

/// The one type the child writes, listed as an app lists its types.
let productPolicies: [String: OperationTypePolicy] = ["product.create": .idempotent]

func product(_ number: Int) -> OutboxRequest {
    OutboxRequest(
        businessID: "crash-pharmacy", operationType: "product.create", endpoint: "/products",
        payload: Data(#"{"id":"crash-\#(number)","name":"Product \#(number)"}"#.utf8),
        entityID: "shelf-\(number % 3)", category: "Products", entityLabel: "Product \(number)", summary: "New product"
    )
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first, arguments.count >= 2 else {
    fail("usage: outbox-test-child snapshot|crash-worker|settle|record-worker|record-settle|pull-worker|attach-worker|hold|fill-limited|open-reader <journal-dir> ...")
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
    guard arguments.count == 9, let first = Int(arguments[3]), let writers = Int(arguments[4]), writers > 0,
        let perWriter = Int(arguments[5]), perWriter > 0, let durability = OutboxConfiguration.Durability(rawValue: arguments[6]),
        ["write", "compact"].contains(arguments[7])
    else {
        fail("usage: crash-worker <journal-dir> <server-url> <first> <writers> <per-writer> <full|processCrash> <write|compact> <none|step:n>")
    }
    let compacting = arguments[7] == "compact"
    let steps = Steps(stop: StopPoint(arguments[8]), printing: false)
    do {
        say("opening")
        steps.pass("opening", "-")
        let outbox = try openEngine(
            path, arguments[2], durability: durability,
            compaction: compacting ? OutboxConfiguration.CompactionPolicy(maxEvents: 300, keepSettledSeconds: 0) : nil, steps: steps
        )
        say("opened")
        outbox.wake(.appLaunch)
        /// Compacts every operation settled so far, saying when it starts and ends.
        @Sendable func compactSettled() async throws {
            say("compacting")
            let result = try await outbox.compact(before: Date())
            say("compacted \(result.operations) \(result.eventsRemoved)")
        }
        // What earlier children left settled, before anything more is written.
        if compacting { try await compactSettled() }
        // While the writers write, a compaction after each of their drains (one at a time, the
        // drains meanwhile collapsed into one), of what has settled since the last.
        let (drains, drained) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let compactor = Task {
            for await _ in drains where compacting { try await compactSettled() }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for index in 0..<perWriter {
                        let number = first + writer * perWriter + index
                        let id = try await outbox.enqueue(product(number))
                        say("enqueued \(id) \(number)")
                        if index % 2 == 1 {
                            await outbox.drain()
                            drained.yield()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        drained.finish()
        try await compactor.value
        say("written")
        steps.pass("written", "-")
        await outbox.drain()
        say("drained")
        if compacting { try await compactSettled() }
        outbox.close()
        say("closed")
        steps.pass("closed", "-")
    } catch {
        fail("\(error)")
    }
    say("done")

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

case "record-worker":
    await recordWorker(arguments)

case "record-settle":
    await recordSettle(arguments)

case "pull-worker":
    await pullWorker(arguments)

case "attach":
    await attachWithNoSignal(arguments)

case "attach-worker":
    await attachWorker(arguments)

case "hold":
    guard arguments.count == 3 else { fail("usage: hold <journal-dir> <account>") }
    holdJournal(path, account: arguments[2])

case "fill-limited":
    guard arguments.count == 3, let bytes = Int(arguments[2]) else { fail("usage: fill-limited <journal-dir> <bytes>") }
    await fillUnderFileSizeLimit(path, extraBytes: bytes)

case "open-reader":
    // Opens the journal read-only and says what came of it: `opened`, or the engine's error.
    do {
        let reader = try JournalReader(directory: URL(fileURLWithPath: path))
        say("opened")
        reader.close()
    } catch let error as OutboxError {
        say("refused: \(error)")
    } catch {
        fail("\(error)")
    }

default:
    fail("unknown command \(command)")
}
