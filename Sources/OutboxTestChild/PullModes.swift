import Foundation
import Outbox

// `pull-worker`: a phone pulling its business's feed page by page (and fetching the base again
// whole when the server asks), for the crash tests that kill it inside pulls and resnapshots
// (PullCrashTests).

/// The business the pull modes pull.
let pullBusiness = "crash-pull"

/// `pull-worker <journal-dir> <server-url> <page-size>`: pulls until a pull reaches the end,
/// printing `pulled <pages applied> <pages staged> <resnapshots> <reached end>` after each.
func pullWorker(_ arguments: [String]) async {
    guard arguments.count == 4, let url = URL(string: arguments[2]), let pageSize = Int(arguments[3]) else {
        fail("usage: pull-worker <journal-dir> <server-url> <page-size>")
    }
    do {
        var configuration = OutboxConfiguration(account: "crash-member", durability: .processCrash)
        configuration.pull = PullConfiguration(pageSize: pageSize, businesses: [pullBusiness], summaryIntervalSeconds: nil)
        say("opening")
        let outbox = try Outbox(directory: URL(fileURLWithPath: arguments[1]),
                                transport: URLSessionTransport(baseURL: url, timeoutSeconds: 5), configuration: configuration)
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
