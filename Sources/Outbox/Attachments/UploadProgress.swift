import OutboxCore
import OutboxStorage
import Synchronization

/// The bytes of each segment in flight, known in memory only: a commit per chunk sent would
/// cost a journal write per 64 KiB. Reads add them to a file's landed segments ("uploading
/// note.jpg, 3.1 of 8 MB"), and observations watch them as they watch a table of the journal:
/// a read records the attachment's key in ``database``, and a step of progress hands the
/// observations a region naming it, as a commit hands its own.
final class UploadProgress: Sendable {
    /// The database handle reads and notices name: no LMDB database has it.
    static let database = UInt32.max
    /// How far a segment goes between two notices: progress moves in steps of this, not with
    /// every packet.
    static let stepBytes: Int64 = 256 << 10

    private struct InFlight {
        var segment: Int
        var sent: Int64
        var noticed: Int64
    }

    private let inFlight = Mutex<[AttachmentID: InFlight]>([:])
    private let notice = Mutex<(@Sendable (LMDBRegion) -> Void)?>(nil)

    /// Sets what hears each step (the engine's observations).
    func onStep(_ body: @escaping @Sendable (LMDBRegion) -> Void) {
        notice.withLock { $0 = body }
    }

    /// Segment `segment` of `attachment` sent `bytes` of its `length` so far.
    func sent(_ bytes: Int64, of segment: Int, length: Int64, attachment: AttachmentID) {
        let step = inFlight.withLock { inFlight -> Bool in
            var entry = inFlight[attachment].flatMap { $0.segment == segment ? $0 : nil } ?? InFlight(segment: segment, sent: 0, noticed: 0)
            entry.sent = max(entry.sent, min(bytes, length))
            let step = entry.sent - entry.noticed >= Self.stepBytes || (entry.sent == length && entry.noticed < length)
            if step { entry.noticed = entry.sent }
            inFlight[attachment] = entry
            return step
        }
        if step { tell(attachment) }
    }

    /// The segment in flight of `attachment` ended (landed, and journaled; or failed).
    func ended(_ attachment: AttachmentID) {
        let had = inFlight.withLock { $0.removeValue(forKey: attachment) }
        if had != nil { tell(attachment) }
    }

    /// The bytes of `upload`'s segment in flight not yet among its landed ones (a segment whose
    /// `segmentLanded` is committed counts there, not here).
    func sending(_ upload: AttachmentUpload) -> Int64 {
        LMDBRegionRecorder.current?.recordRead(Self.key(upload.id), in: Self.database)
        guard !upload.isCompleted, let entry = inFlight.withLock({ $0[upload.id] }) else { return 0 }
        return upload.landed.contains { $0.number == entry.segment } ? 0 : entry.sent
    }

    private static func key(_ id: AttachmentID) -> [UInt8] { Array(id.description.utf8) }

    private func tell(_ attachment: AttachmentID) {
        var region = LMDBRegion()
        region.insert(Self.key(attachment), in: Self.database)
        notice.withLock { $0 }?(region)
    }
}
