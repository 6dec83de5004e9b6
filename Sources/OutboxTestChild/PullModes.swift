import Foundation
import Outbox
import OutboxAudit
import Synchronization

// `pull-worker`: a phone pulling its business's feed page by page (and fetching the base again
// whole when the server asks), for the crash tests that kill it inside pulls and resnapshots
// (PullCrashTests).

/// The business the pull modes pull.
let pullBusiness = "crash-pull"

/// `pull-worker <journal-dir> <server-url> <page-size> <none|step:n>`: pulls until a pull
/// reaches the end, printing `pulled <pages applied> <pages staged> <resnapshots> <reached end>`
/// after each. At `<step>:<n>` it prints `stop <step> <n>` and kills itself at the n-th pass of
/// that step (see ``PullSteppingTransport``).
func pullWorker(_ arguments: [String]) async {
    guard arguments.count == 5, let url = URL(string: arguments[2]), let pageSize = Int(arguments[3]) else {
        fail("usage: pull-worker <journal-dir> <server-url> <page-size> <none|step:n>")
    }
    do {
        let pull = PullConfiguration(pageSize: pageSize, businesses: [pullBusiness], summaryIntervalSeconds: nil)
        var configuration = OutboxConfiguration(account: "crash-member", durability: .processCrash)
        configuration.pull = pull
        let transport = PullSteppingTransport(
            inner: URLSessionTransport(baseURL: url, timeoutSeconds: 5), steps: Steps(stop: StopPoint(arguments[4]), printing: false),
            snapshotEndpoint: pull.snapshotEndpoint)
        say("opening")
        let outbox = try Outbox(directory: URL(fileURLWithPath: arguments[1]), transport: transport, configuration: configuration)
        say("opened")
        for _ in 0..<100 {
            guard let feed = try await outbox.pull().feed(pullBusiness) else { break }
            say("pulled \(feed.pagesApplied) \(feed.pagesStaged) \(feed.resnapshots) \(feed.reachedEnd)")
            if feed.reachedEnd { break }
        }
        outbox.close()
    } catch {
        fail("\(error)")
    }
    say("done")
}

/// The loopback transport with the pull's steps on each side of the wire. A pull sends one page
/// request at a time and commits each page before asking the next, so: `feed-request` and
/// `snapshot-request` pass before a page's request leaves (every earlier page committed or
/// staged), `feed-answer` and `snapshot-answer` once its answer is back and before it is
/// committed or staged, and `swapped` before the first feed request after snapshot pages (the
/// staged snapshot swapped in and the old base swept).
final class PullSteppingTransport: OutboxTransport {
    let inner: URLSessionTransport
    let steps: Steps
    let snapshotEndpoint: String
    /// Whether the last request was for a snapshot page.
    private let afterSnapshot = Mutex(false)

    init(inner: URLSessionTransport, steps: Steps, snapshotEndpoint: String) {
        self.inner = inner
        self.steps = steps
        self.snapshotEndpoint = snapshotEndpoint
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let kind = request.endpoint.hasPrefix(snapshotEndpoint) ? "snapshot" : "feed"
        if afterSnapshot.withLock({ was in defer { was = kind == "snapshot" }; return was }) && kind == "feed" {
            steps.pass("swapped", "-")
        }
        steps.pass("\(kind)-request", "-")
        let response = try await inner.send(request)
        steps.pass("\(kind)-answer", "\(response.statusCode)")
        return response
    }
}
