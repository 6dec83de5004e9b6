import Foundation
import IdempotencyClaims

/// The bodies the server answers a write of a record with: the record's type and id, its
/// revision after the write, and the record as the server now shows it (or that it is deleted),
/// the shape `Docs/records.md`'s "The wire" describes.
extension RecordBody {
    /// A create's or an update's answer:
    /// `{"type":"product","id":"p-1","revision":2,"record":{"id":"p-1",...,"revision":2}}`.
    /// `record` is the stored body byte for byte with its revision added, as a 412's `current`.
    static func answer(type: String, id: String, revision: Int, body: Data) -> Data {
        var answer = Data((naming(type: type, id: id, revision: revision) + #","record":"#).utf8)
        answer += withRevision(body, revision)
        answer += Data("}".utf8)
        return answer
    }

    /// A delete's answer: `{"type":"product","id":"p-1","revision":3,"deleted":true}`.
    static func deletedAnswer(type: String, id: String, revision: Int) -> Data {
        Data((naming(type: type, id: id, revision: revision) + #","deleted":true}"#).utf8)
    }

    /// `{"type":...,"id":...,"revision":n`, the members every answer for a record opens with.
    private static func naming(type: String, id: String, revision: Int) -> String {
        "{" + JSONText.quoted("type") + ":" + JSONText.quoted(type) + "," + JSONText.quoted("id") + ":" + JSONText.quoted(id)
            + "," + JSONText.quoted("revision") + ":" + String(revision)
    }
}
