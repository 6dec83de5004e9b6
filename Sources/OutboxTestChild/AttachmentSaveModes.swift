import Foundation
import Outbox
import OutboxAudit

// `attach`: a photo attached to a write with no signal, for the crash tests that kill between
// the durable steps of keeping its file and the enqueue's commit (AttachmentCrashTests).

/// The photo's bytes: `size` of them, the same for every run of a seed.
func photoBytes(_ size: Int, seed: Int) -> Data {
    Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ seed &* 7 &+ ($0 >> 8)) })
}

/// A transport with no network: every request meets none.
struct NoNetwork: OutboxTransport {
    func send(_ request: TransportRequest) async throws -> TransportResponse { throw URLError(.notConnectedToInternet) }
}

/// `attach <journal-dir> <bytes> <seed> <stop>`: saves a product whose payload names a photo of
/// `<bytes>` bytes, the photo attached, with no network; prints `saved <operation id>
/// <attachment id>` once the enqueue returned. The steps: `file-written`, `file-synced`,
/// `file-renamed`, `file-directory-synced` (keeping the file), `enqueue` (the write's commit).
func attachWithNoSignal(_ arguments: [String]) async {
    guard arguments.count == 5, let size = Int(arguments[2]), let seed = Int(arguments[3]) else {
        fail("usage: attach <journal-dir> <bytes> <seed> <stop>")
    }
    let steps = Steps(stop: StopPoint(arguments[4]))
    var configuration = OutboxConfiguration(
        account: "crash-member", defaultPolicy: .idempotent,
        logger: OutboxLogger(label: "attach", handler: StepLogHandler(steps: steps))
    )
    configuration.attachments.maxFileBytes = Int64(size)
    do {
        let outbox = try Outbox(directory: URL(fileURLWithPath: arguments[1]), transport: NoNetwork(), configuration: configuration,
                                fileSteps: { steps.pass($0, "-") })
        let photo = Attachment(bytes: photoBytes(size, seed: seed), contentType: "image/jpeg", name: "delivery-note.jpg")
        let request = OutboxRequest(
            businessID: "crash-records", operationType: "product.create", endpoint: "/products",
            payload: Data(#"{"id":"p-\#(seed)","delivery_note":"\#(photo.id)"}"#.utf8), category: "Products",
            entityLabel: "Product \(seed)", summary: "New product")
        let id = try await outbox.enqueue(request, attaching: [photo])
        say("saved \(id) \(photo.id)")
        outbox.close()
    } catch {
        fail("\(error)")
    }
}
