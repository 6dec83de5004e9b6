import Foundation

/// The fold's transitions of one concept. The upload of a queued row's files: each grant, landed
/// segment, completion or refusal.
extension Fold {
    static func attachmentGranted(_ granted: AttachmentGranted, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        let index = try queuedAttachment(granted.attachment, of: next, step)
        guard granted.segmentSize > 0, granted.segmentCount == AttachmentUpload.segmentCount(
            size: next.attachments[index].manifest.size, segmentSize: granted.segmentSize)
        else { throw step.illegal("a grant of \(granted.segmentCount) segments of \(granted.segmentSize) bytes does not cover the file") }
        // Segments landed under another segment size cannot be completed with these.
        if next.attachments[index].segmentSize != granted.segmentSize { next.attachments[index].landed = [] }
        next.attachments[index].segmentSize = granted.segmentSize
        next.attachments[index].grants += 1
    }

    static func segmentLanded(_ landed: SegmentLanded, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        let index = try queuedAttachment(landed.attachment, of: next, step)
        let upload = next.attachments[index]
        guard let size = upload.segmentSize else { throw step.illegal("a segment landed before any grant") }
        let count = AttachmentUpload.segmentCount(size: upload.manifest.size, segmentSize: size)
        let number = landed.segment.number
        let expected = number == count ? upload.manifest.size - Int64(count - 1) * size : size
        guard (1...count).contains(number), landed.segment.size == expected else {
            throw step.illegal("segment \(number) of \(landed.segment.size) bytes is not one of the grant's \(count)")
        }
        next.attachments[index].landed.removeAll { $0.number == number }
        next.attachments[index].landed.append(landed.segment)
        next.attachments[index].landed.sort { $0.number < $1.number }
    }

    static func attachmentCompleted(_ completed: AttachmentCompleted, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        let index = try queuedAttachment(completed.attachment, of: next, step)
        let manifest = next.attachments[index].manifest
        guard completed.size == manifest.size, completed.sha256 == manifest.sha256 else {
            throw step.illegal("the completed object is not the file (\(completed.size) bytes, sha256 \(completed.sha256))")
        }
        next.attachments[index].completedObject = completed.object
    }

    static func attachmentRefused(_ refused: AttachmentRefused, _ next: inout OperationState, _ step: Step) throws(OutboxError) {
        let index = try queuedAttachment(refused.attachment, of: next, step)
        next.status = .failed
        next.nextAttemptAt = nil
        next.attachments[index].refusedCode = refused.errorCode
        next.attachments[index].refusals += 1
        next.lastErrorCode = refused.errorCode
        next.lastErrorMessage = refused.message
    }

    /// The index of a queued row's attachment that is still being uploaded.
    private static func queuedAttachment(_ id: AttachmentID, of state: OperationState, _ step: Step) throws(OutboxError) -> Int {
        guard state.status == .queued else { throw step.illegal("only a queued row's attachment is uploaded") }
        guard let index = state.attachmentIndex(id) else { throw step.illegal("the write carries no attachment \(id)") }
        guard !state.attachments[index].isCompleted else { throw step.illegal("attachment \(id) was completed") }
        return index
    }
}
