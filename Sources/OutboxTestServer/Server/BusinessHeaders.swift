import Foundation
import OutboxWire

/// The headers a business request is claimed and written by, checked before anything else:
/// each sent at most once, in UTF-8, and (for the business id) free of control characters and
/// short enough for every store's keys. A request that fails is refused 400 naming the header,
/// and meets no fault, claim or store.
///
/// Keys are never read from replacement characters: `Idempotency-Key: op-\xff` and `op-\xfe`
/// would both decode to `op-\u{FFFD}`, two writes claimed as one.
struct BusinessHeaders {
    /// The `Idempotency-Key` value as sent (the claims check it further); `nil` when absent.
    var key: String?
    /// `X-Business-ID`, or `default` when absent or empty.
    var businessID: String
    /// `If-Match` as sent; `nil` when absent.
    var ifMatch: String?

    /// The longest business id, in UTF-8 bytes: with the longest operation type (21 bytes) and
    /// key (255), a claim's key stays within LMDB's 511 bytes, and with the longest record id
    /// (``RecordBody/maxIDBytes``) so does a record's.
    static let maxBusinessIDBytes = 200

    static let defaultBusinessID = "default"

    /// The checked headers of `request`.
    /// - Parameter field: how messages name the business id: the header for a request of its
    ///   own, `operations[i].business_id` for an operation of a batch.
    static func read(_ request: HTTPRequest, businessField: String = "the \(WireHeader.businessID) header") -> Result<BusinessHeaders, Refusal> {
        if let problem = once(request, WireHeader.idempotencyKey, code: WireErrorCode.idempotencyKeyInvalid,
                              why: "a request carries one key") {
            return .failure(problem)
        }
        if let problem = once(request, WireHeader.businessID, code: WireErrorCode.businessIDInvalid,
                              why: "a request belongs to one business") {
            return .failure(problem)
        }
        if let problem = once(request, WireHeader.ifMatch, code: WireErrorCode.ifMatchInvalid,
                              why: #"send one, listing every tag in it: If-Match: "1", "2""#) {
            return .failure(problem)
        }
        let business = request.header(WireHeader.businessID).flatMap { $0.isEmpty ? nil : $0 } ?? defaultBusinessID
        if let problem = businessIDProblem(business) {
            return .failure(Refusal(response: .problem(400, code: WireErrorCode.businessIDInvalid, message: "\(businessField) \(problem)")))
        }
        return .success(BusinessHeaders(
            key: request.header(WireHeader.idempotencyKey), businessID: business, ifMatch: request.header(WireHeader.ifMatch)))
    }

    /// Why `businessID` cannot be one, completing "the X-Business-ID header ..."; `nil` when it can.
    static func businessIDProblem(_ businessID: String) -> String? {
        if let control = businessID.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            return "holds the control character U+\(String(format: "%04X", control.value)): a business id is text without control characters"
        }
        if businessID.utf8.count > maxBusinessIDBytes {
            return "is \(businessID.utf8.count) bytes long; the most accepted is \(maxBusinessIDBytes)"
        }
        return nil
    }

    /// 400 `code` when the header `name` is sent more than once or its bytes are not UTF-8.
    private static func once(_ request: HTTPRequest, _ name: String, code: String, why: String) -> Refusal? {
        let count = request.headerValues(name).count
        if count > 1 {
            return Refusal(response: .problem(400, code: code, message: "the \(name) header is sent \(count) times; \(why)"))
        }
        if request.headerIsNotUTF8(name) {
            return Refusal(response: .problem(400, code: code, message: "the \(name) header holds bytes that are not UTF-8; send it as UTF-8 text"))
        }
        return nil
    }

    /// The 400 a request's headers are refused with.
    struct Refusal: Error {
        var response: HTTPResponse
    }
}
