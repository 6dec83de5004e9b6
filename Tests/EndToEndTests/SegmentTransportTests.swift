import Foundation
import Outbox
import OutboxAudit
import OutboxCrypto
import Synchronization
import TestHarness
import Testing

/// The foreground transport's segment upload against the real Swift store: from a span of a
/// file, or from bytes opened in memory (a file sealed at rest), the store takes the segment and
/// names it; the bytes sent are told as they go, ending at the segment's length.
@Suite("A segment through URLSessionTransport to Swift", .timeLimit(.minutes(10)))
struct SegmentTransportTests {
    @Test func aSegmentFromAFileAndOneFromBytesLandAndTellTheirProgress() async throws {
        let server = try UploadServer()
        let id = AttachmentID()
        let bytes = seededBytes(700 << 10, seed: 21)
        let grant = try await server.server("POST", "/uploads", key: id.requestKey("grant-1-0"), UploadServer.grantBody(id: id, bytes: bytes))
        #expect(grant.status == 200, "\(grant.text)")
        let urls = AttachmentServerTests.urls(grant)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("segment-\(UUID().uuidString)")
        try bytes.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let transport = URLSessionTransport(baseURL: server.baseURL)
        let size = server.segmentBytes

        for (number, fromFile) in [(1, true), (2, false)] {
            let offset = Int64(number - 1) * size
            let told = Mutex<[Int64]>([])
            let body: SegmentUpload.Body = fromFile ? .file(file, offset: offset) : .bytes(bytes.subdata(in: Int(offset)..<Int(offset + size)))
            let segment = SegmentUpload(url: urls[number - 1], body: body, offset: offset, length: size) { sent in
                told.withLock { $0.append(sent) }
            }
            let response = try await transport.upload(segment)
            #expect(response.statusCode == 201, "segment \(number): \(response.statusCode)")
            #expect(response.headers.keys.contains { $0.lowercased() == "etag" })
            let progress = told.withLock { $0 }
            #expect(!progress.isEmpty, "segment \(number) told no progress")
            #expect(progress == progress.sorted(), "progress only grows: \(progress)")
            #expect(progress.last == size)
            let stored = try await server.storeRequest("GET", "\(id)/segments/\(number)")
            #expect(stored.body == bytes.subdata(in: Int(offset)..<Int(offset + size)))
        }
    }
}
