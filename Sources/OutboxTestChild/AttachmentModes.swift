import Foundation
import Outbox
import OutboxAudit
import Synchronization

// `attach-worker`: a photo attached with no signal, then uploaded once the signal returns, for
// the end-to-end attachment test (AttachmentEndToEndTests), which kills it mid-upload.

/// The business and write type of `attach-worker`.
let attachmentBusiness = "photo-pharmacy"

/// The child's network: off until the test says the signal is back, then the loopback server
/// and the object store, with a step on each answer.
final class SignalTransport: OutboxTransport {
    let inner: URLSessionTransport
    let steps: Steps
    private let online = Atomic<Bool>(false)

    init(_ inner: URLSessionTransport, steps: Steps) {
        self.inner = inner
        self.steps = steps
    }

    func setOnline() {
        online.store(true, ordering: .releasing)
    }

    private func offline(_ what: String) -> any Error {
        steps.pass("offline", what)
        return URLError(.notConnectedToInternet)
    }

    /// A request to the server: `answer <endpoint> <status>` once its answer is back.
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard online.load(ordering: .acquiring) else { throw offline(request.endpoint) }
        let response = try await inner.send(request)
        steps.pass("answer", "\(request.endpoint) \(response.statusCode)")
        return response
    }

    /// A segment to the store: `put <segment object number> <status>` once the store answered,
    /// before the engine commits what it answered.
    func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
        guard online.load(ordering: .acquiring) else { throw offline("segment") }
        let response = try await inner.upload(segment)
        steps.pass("put", "\(segment.url.lastPathComponent) \(response.statusCode)")
        return response
    }
}

/// `attach-worker <journal-dir> <server-url> <photo-file> <none|step:n>`: opens the journal as
/// the engine with no signal ("opened"), saves a product whose payload names a photo attached
/// from the file ("enqueued <operation> <attachment>"), drains with no signal (each request the
/// engine tries is `step offline <endpoint>`; then "offline <status> <waiting-on>"), and waits
/// for a line "online" on standard input. Then the signal is back: it drains until the write
/// synced ("synced"), printing `step answer <endpoint> <status>` for each answer of the server
/// and `step put <segment> <status>` for each answer of the store; at `<step>:<n>` it prints
/// "stop <step> <n>" and kills itself with SIGKILL there. `put:3` lands the third segment in the
/// store and dies before the engine records it.
func attachWorker(_ arguments: [String]) async {
    guard arguments.count == 5, let url = URL(string: arguments[2]) else {
        fail("usage: attach-worker <journal-dir> <server-url> <photo-file> <none|step:n>")
    }
    let steps = Steps(stop: StopPoint(arguments[4]))
    let transport = SignalTransport(URLSessionTransport(baseURL: url, timeoutSeconds: 120), steps: steps)
    do {
        say("opening")
        let outbox = try Outbox(
            directory: URL(fileURLWithPath: arguments[1]),
            transport: transport,
            configuration: OutboxConfiguration(
                account: "photo-member",
                retryPolicy: OperationTypePolicy.RetryPolicy(initialDelaySeconds: 0.01, multiplier: 2, maxDelaySeconds: 0.05),
                operationPolicies: productPolicies,
                durability: .full
            )
        )
        say("opened")
        let photo = Attachment(file: URL(fileURLWithPath: arguments[3]), contentType: "image/jpeg", name: "delivery-note.jpg")
        let request = OutboxRequest(
            businessID: attachmentBusiness, operationType: "product.create", endpoint: "/products",
            payload: Data(#"{"id":"gauze-10","name":"Gauze 10 cm","delivery_note":"\#(photo.id)"}"#.utf8),
            category: "Products", entityLabel: "Gauze 10 cm", summary: "New product with its delivery note")
        let id = try await outbox.enqueue(request, attaching: [photo])
        say("enqueued \(id) \(photo.id)")
        outbox.wake(.appLaunch)
        await outbox.drain()
        guard let waiting = try outbox.operation(id) else { fail("the write \(id) is not in the journal") }
        // The status, then what it waits on (its words as the engine prints them).
        say("offline \(waiting.status) \(waiting.waitingOn.map { "\($0)" } ?? "nothing")")
        guard readLine() == "online" else { fail("expected the line \"online\"") }
        transport.setOnline()
        outbox.wake(.connectivityRegained)
        // A hang guard, never a timing: the retries' backoff is at most 50 ms.
        for _ in 0..<6_000 {
            await outbox.drain()
            if try outbox.operation(id)?.status == .synced { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        say(try outbox.operation(id)?.status == .synced ? "synced" : "not synced")
        outbox.close()
        say("closed")
    } catch {
        fail("\(error)")
    }
    say("done")
}
