import Foundation
import Synchronization
@testable import Outbox
import OutboxAudit
import struct Outbox.Attachment
import OutboxCore
import OutboxTesting
import Testing

/// Answers a retry cannot mend are refusals the member and support read, never a loop of tries:
/// a grant that does not cover its file, a store that takes a segment without naming it.
@Suite("Answers an upload cannot go on from", .timeLimit(.minutes(10)))
struct AttachmentRefusalTests {
    /// Reaches `server`, but spoils its answers as `spoil` says.
    final class SpoilingTransport: OutboxTransport {
        let server: InMemoryServer
        let spoil: String

        init(server: InMemoryServer, spoil: String) {
            self.server = server
            self.spoil = spoil
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            var response = try await server.send(request)
            if spoil == "grant", request.endpoint == "/uploads",
                var grant = try JSONSerialization.jsonObject(with: response.body) as? [String: Any],
                let segments = grant["segments"] as? [Any]
            {
                // One URL short of the file's segments.
                grant["segments"] = Array(segments.dropLast())
                response.body = try JSONSerialization.data(withJSONObject: grant)
            }
            return response
        }

        func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
            var response = try await server.upload(segment)
            if spoil == "etag" { response.headers = response.headers.filter { $0.key.lowercased() != "etag" } }
            return response
        }
    }

    @Test(arguments: [("grant", "does not cover note.jpg"), ("etag", "without an ETag")])
    func theWriteIsHeldWithTheReasonAndNothingIsAskedAgainAlone(_ spoil: String, _ reason: String) async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.objectStore.segmentSize = 1_000
        let outbox = try journal.open(server: SpoilingTransport(server: server, spoil: spoil))
        defer { outbox.close() }
        let photo = Attachment(bytes: AttachmentTests.photoBytes(3_500), contentType: "image/jpeg", name: "note.jpg")
        let id = try await outbox.enqueue(AttachmentTests.request(naming: [photo]), attaching: [photo])
        await outbox.drain()
        let row = try #require(try outbox.operation(id))
        #expect(row.status == .failed)
        #expect(row.lastErrorCode == ErrorCode.attachmentRefused)
        #expect(row.lastErrorMessage?.contains(reason) == true, "\(row.lastErrorMessage ?? "")")
        let asked = server.requests.count
        journal.clock.advance(by: 3_600)
        await outbox.drain()
        #expect(server.requests.count == asked, "a held write's file is not tried again until a person retries it")
        #expect(server.requests.allSatisfy { $0.endpoint != "/products" })
    }
}

/// A run of the upload queue the app closes in the middle of: what it would send next could not
/// be recorded, so it sends nothing more.
@Suite("An upload run when the journal closes", .timeLimit(.minutes(10)))
struct UploadRunClosingTests {
    /// Closes the outbox while its first segment is out.
    final class ClosingTransport: OutboxTransport {
        let server: InMemoryServer
        let outbox = Mutex<Outbox?>(nil)
        let segments = Mutex(0)

        init(server: InMemoryServer) {
            self.server = server
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            try await server.send(request)
        }

        func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
            if segments.withLock({ count in count += 1; return count }) == 1 { outbox.withLock { $0 }?.close() }
            return try await server.upload(segment)
        }
    }

    @Test func noSegmentIsSentAfterTheJournalClosed() async throws {
        let journal = TestJournal()
        let server = InMemoryServer()
        server.objectStore.segmentSize = 1_000
        server.setOnline(false)
        let transport = ClosingTransport(server: server)
        let outbox = try journal.open(server: transport)
        let first = Attachment(bytes: AttachmentTests.photoBytes(3_000, seed: 1), contentType: "image/jpeg", name: "a.jpg")
        let second = Attachment(bytes: AttachmentTests.photoBytes(3_000, seed: 2), contentType: "image/jpeg", name: "b.jpg")
        _ = try await outbox.enqueue(AttachmentTests.request(naming: [first], number: 1), attaching: [first])
        _ = try await outbox.enqueue(AttachmentTests.request(naming: [second], number: 2), attaching: [second])
        server.setOnline(true)
        transport.outbox.withLock { $0 = outbox }
        await outbox.uploadFilesForTest(stoppingAfterSegments: 6)
        #expect(transport.segments.withLock { $0 } == 1, "the segment out when the journal closed, and nothing after")
        #expect(server.requests.filter { $0.endpoint == "/uploads" }.count == 1, "no grant asked for the next file")
    }
}
