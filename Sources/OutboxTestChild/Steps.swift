import Foundation
import Outbox
import OutboxAudit
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The fault hook the crash tests aim their kills with: each worker mode passes named durable
// steps (read from the engine's log lines, from its transport, or from its own code), and, told
// by its last argument `<step>:<n>`, kills itself with SIGKILL at the n-th pass of one of them.
// A kill so placed lands at the same step whatever the machine's load.

/// Where a child stops itself: the `occurrence`th time it passes `step`.
struct StopPoint: Sendable {
    var step: String
    var occurrence: Int

    /// `none`, or `<step>:<occurrence>`.
    init?(_ text: String) {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let occurrence = Int(parts[1]), occurrence > 0 else { return nil }
        step = String(parts[0])
        self.occurrence = occurrence
    }
}

/// Prints each durable step as the child passes it (`step <name> <detail>`), and at the stop
/// point prints `stop <name> <n>` and ends the process with SIGKILL from inside the step:
/// nothing runs after it, not even the code that called the engine.
final class Steps: Sendable {
    let stop: StopPoint?
    /// Whether each step is printed.
    let printing: Bool
    private let passed = Mutex<[String: Int]>([:])

    init(stop: StopPoint?, printing: Bool = true) {
        self.stop = stop
        self.printing = printing
    }

    func pass(_ step: String, _ detail: String) {
        if printing { say("step \(step) \(detail)") }
        let count = passed.withLock { counts in
            counts[step, default: 0] += 1
            return counts[step]!
        }
        if let stop, stop.step == step, stop.occurrence == count {
            say("stop \(step) \(count)")
            kill(getpid(), SIGKILL)
        }
    }
}

/// The engine's log read for the commits it follows: a write's enqueue, an outcome, a
/// supersession, the abandonments at open (or in a pass); with `openingAndCompaction`, also the
/// opening's commit (`opened`) and each compaction's last commit (`compact`). Each is logged
/// right after its commit returned.
struct StepLogHandler: OutboxLogHandler {
    var logLevel: OutboxLogger.Level = .debug
    var metadata: OutboxLogger.Metadata = [:]
    let steps: Steps
    /// Whether the opening and compactions are steps too (crash-worker's, not record-worker's).
    var openingAndCompaction = false

    func log(level: OutboxLogger.Level, message: OutboxLogger.Message, metadata: OutboxLogger.Metadata?,
             source: String, file: String, function: String, line: UInt) {
        let operation = metadata?["outbox.operation"]?.description ?? "-"
        let count = metadata?["outbox.count"]?.description ?? "-"
        let text = message.description
        if text == "enqueued" {
            steps.pass("enqueue", operation)
        } else if text == "attempt finished" {
            steps.pass("outcome", "\(operation) \(metadata?["outbox.disposition"]?.description ?? "-")")
        } else if text == "row superseded" {
            steps.pass("supersede", operation)
        } else if text == "journal opened" {
            if openingAndCompaction { steps.pass("opened", count) }
            // The attempts the last process left without an outcome, abandoned in the opening's commit.
            if count != "0", count != "-" { steps.pass("abandon", "- \(count)") }
        } else if text.hasPrefix("interrupted attempt abandoned") {
            steps.pass("abandon", operation)
        } else if text == "compaction finished", openingAndCompaction {
            steps.pass("compact", count)
        }
    }
}

/// The loopback transport with a step on each side of the wire: `start` once the attempt's
/// `attemptStarted` is durable and before the request leaves, `answer` once the server's answer
/// is back and before its outcome is committed.
struct SteppingTransport: OutboxTransport {
    let inner: URLSessionTransport
    let steps: Steps

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        func header(_ name: String) -> String? { request.headers.first { $0.key.lowercased() == name.lowercased() }?.value }
        let key = header("Idempotency-Key") ?? "-"
        let ifMatch = header("If-Match").map { $0.replacingOccurrences(of: "\"", with: "") } ?? "-"
        steps.pass("start", "\(key) \(ifMatch)")
        do {
            let response = try await inner.send(request)
            steps.pass("answer", "\(key) \(response.statusCode)")
            return response
        } catch {
            steps.pass("answer", "\(key) none")
            throw error
        }
    }

    /// A segment to the store: `segment` once its answer is back, before its event is committed.
    func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
        let response = try await inner.upload(segment)
        steps.pass("segment", "\(segment.offset) \(response.statusCode)")
        return response
    }
}
