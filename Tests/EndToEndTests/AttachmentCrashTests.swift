import Foundation
@testable import Outbox
import OutboxAudit
import OutboxCore
import OutboxCrypto
import TestHarness
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A photo attached with no signal, the process killed by itself (SIGKILL) at each durable step
/// of keeping the file and saving the write: afterwards there is no write and no file under any
/// hash (a half-made copy and an unnamed file collected at the next open), or the write and its
/// whole file, which hashes to its manifest.
@Suite("An attachment through kills at each durable step", .timeLimit(.minutes(10)))
struct AttachmentCrashTests {
    /// The steps, in the order the child passes them, and whether the write is saved when the
    /// kill lands inside each (the enqueue's step is passed after its commit).
    static let steps: [(step: String, saved: Bool)] = [
        ("file-written", false), ("file-synced", false), ("file-renamed", false), ("file-directory-synced", false), ("enqueue", true),
    ]

    /// A no-network transport: the parent opens the journal only to look at it.
    struct NoNetwork: OutboxTransport {
        func send(_ request: TransportRequest) async throws -> TransportResponse { throw URLError(.notConnectedToInternet) }
    }

    @Test(arguments: steps.map(\.step))
    func aKillAtEachStepLeavesNoWriteOrTheWriteAndItsWholeFile(_ step: String) throws {
        let saved = Self.steps.first { $0.step == step }!.saved
        let directory = TemporaryDirectory("attach-crash")
        let size = 700_000
        let child = try ChildProcess("outbox-test-child", ["attach", directory.url.path, "\(size)", "44", "\(step):1"])
        child.kill(after: SoakSize.hangGuardSeconds)
        let lines = child.readToEnd().map(\.text)
        #expect(child.waitForEnding() == .signalled(SIGKILL), "\(lines) \(child.errorOutput)")
        #expect(lines.last == "stop \(step) 1", "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("saved") })
        let files = AttachmentFiles(journal: directory.url)
        let left = files.listing()
        if step == "file-written" || step == "file-synced" {
            #expect(left.files.isEmpty && left.incoming.count == 1, "a half-made copy, under no hash: \(left)")
        }

        var configuration = OutboxConfiguration(account: "crash-member", defaultPolicy: .idempotent)
        configuration.attachments.maxFileBytes = Int64(size)
        let outbox = try Outbox(directory: directory.url, transport: NoNetwork(), configuration: configuration)
        defer { outbox.close() }
        #expect(try outbox.verify().isClean)
        let rows = try outbox.operations(matching: OperationQuery()).operations
        let after = outbox.files.listing()
        #expect(after.incoming.isEmpty, "the open collects a half-made copy")
        if saved {
            let row = try #require(rows.first)
            #expect(rows.count == 1)
            let manifest = try #require(row.state.attachments.first?.manifest)
            #expect(manifest.size == Int64(size))
            #expect(outbox.files.check(manifest) == nil, "its whole file, hashing to its manifest")
            #expect(Set(after.files.keys) == [manifest.sha256])
        } else {
            #expect(rows.isEmpty)
            #expect(after.files.isEmpty, "a file no write names is collected at the open")
        }
    }
}
