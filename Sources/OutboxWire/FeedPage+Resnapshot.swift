public import Foundation

/// A 409 `resnapshot_required`: the feed cannot go on from the cursor sent, so the client
/// fetches the current records and starts again from the snapshot's position.
///
/// ```json
/// {"code":"resnapshot_required","reason":"expired","message":"...","epoch":4}
/// ```
public struct FeedResnapshot: Error, Equatable, Sendable, CustomStringConvertible {
    /// Why the cursor cannot be served.
    public enum Reason: String, CaseIterable, Sendable {
        /// Older than the tombstone retention floor: deletes it would need are forgotten.
        case expired
        /// Not a position (malformed text), so it names no place in any feed.
        case unknown
        /// Of another epoch: the server was restored or reset since.
        case foreignEpoch = "foreign_epoch"
        /// Ahead of the feed's end: the server was restored from an older backup.
        case ahead
    }

    /// The status the contract answers it with.
    public static let status = 409

    public var reason: Reason
    /// What happened, for people.
    public var message: String
    /// The server's epoch now: the snapshot's positions are of it.
    public var epoch: UInt64

    public init(reason: Reason, message: String, epoch: UInt64) {
        self.reason = reason
        self.message = message
        self.epoch = epoch
    }

    public var description: String { "409 \(WireErrorCode.resnapshotRequired) (\(reason.rawValue)): \(message)" }

    /// `{"code":"resnapshot_required","reason":...,"message":...,"epoch":n}`.
    public var body: Data {
        Data(("{" + JSONNode.quoted(WireBodyField.code) + ":" + JSONNode.quoted(WireErrorCode.resnapshotRequired)
            + "," + JSONNode.quoted(WireBodyField.reason) + ":" + JSONNode.quoted(reason.rawValue)
            + "," + JSONNode.quoted(WireBodyField.message) + ":" + JSONNode.quoted(message)
            + "," + JSONNode.quoted(WireBodyField.epoch) + ":" + String(epoch) + "}").utf8)
    }

    /// Reads a 409 body: its `code` must be `resnapshot_required`, its `reason` one of
    /// ``Reason``, its `epoch` a whole number; `message` may be absent.
    /// - Throws: ``FeedPage/Invalid`` naming the field at fault.
    public static func decoded(from body: Data) throws(FeedPage.Invalid) -> FeedResnapshot {
        let root: JSONNode
        do {
            root = try JSONNode.read(Array(body))
        } catch {
            throw FeedPage.Invalid(field: error.field, message: error.message())
        }
        guard case .object = root else {
            throw FeedReading.invalid(.root, "a 409 resnapshot_required body must be an object, not \(root.kind)")
        }
        let reading = FeedReading(bytes: [], spans: [])
        let code = try reading.string(WireBodyField.code, of: root, at: .root)
        guard code == WireErrorCode.resnapshotRequired else {
            throw FeedReading.invalid(JSONPath.root.member(WireBodyField.code), "code is \(JSONNode.quoted(code)), not \(WireErrorCode.resnapshotRequired)")
        }
        let reasonText = try reading.string(WireBodyField.reason, of: root, at: .root)
        guard let reason = Reason(rawValue: reasonText) else {
            throw FeedReading.invalid(JSONPath.root.member(WireBodyField.reason), "reason is \(JSONNode.quoted(reasonText)), not one of "
                + Reason.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let epoch = try reading.whole(WireBodyField.epoch, of: root, at: .root, upTo: UInt64.max)
        let message: String
        switch try reading.optional(WireBodyField.message, of: root, at: .root) {
        case nil: message = ""
        case .string(let text)?: message = text
        case let other?: throw FeedReading.invalid(JSONPath.root.member(WireBodyField.message), "message must be a string, not \(other.kind)")
        }
        return FeedResnapshot(reason: reason, message: message, epoch: epoch)
    }
}
