import Foundation
import OutboxWire
import OutboxCrypto

// The fields several bodies share: tags, outcomes, and the readers and writers of the record format's field types.

/// The tag before the server's current record in an `attemptFinished` (format 2).
enum ServerCurrentTag: UInt8 {
    case none = 0
    case plaintext = 1
    case sealed = 2
}

/// The tag before an attempt's outcome, in records and in stored states.
enum OutcomeTag: UInt8 {
    /// No attempt has an outcome yet (stored states only).
    case none = 0
    case response = 1
    case noResponse = 2
    case notSent = 3
}

extension OutcomeCategory {
    /// The byte stored for "no outcome yet": the codes themselves start at 1.
    static let noCode: UInt8 = 0
}

extension ByteWriter {
    mutating func write(_ key: RecordKey) {
        write(key.business)
        write(key.type)
        write(key.id)
    }

    mutating func write(_ attempt: AttemptNumber) {
        write(UInt32(attempt.rawValue))
    }

    mutating func write(outcome: AttemptOutcome?) {
        switch outcome {
        case nil:
            write(OutcomeTag.none.rawValue)
        case .response(let statusCode)?:
            write(OutcomeTag.response.rawValue)
            write(UInt16(clamping: statusCode))
        case .noResponse(let failure)?:
            write(OutcomeTag.noResponse.rawValue)
            write(failure.code)
        case .notSent?:
            write(OutcomeTag.notSent.rawValue)
        }
    }
}

extension ByteReader {
    mutating func readRecordKey() throws(DecodingProblem) -> RecordKey {
        RecordKey(business: try readString("record business"), type: try readString("record type"), id: try readString("record id"))
    }

    mutating func readAttempt() throws(DecodingProblem) -> AttemptNumber {
        let value = try readUInt32("attempt number")
        guard value >= 1 else { throw DecodingProblem("attempt number 0") }
        return AttemptNumber(rawValue: Int(value))
    }

    /// An outcome; in a record it is always there.
    mutating func readOutcome() throws(DecodingProblem) -> AttemptOutcome {
        guard let outcome = try readOptionalOutcome() else { throw DecodingProblem("an attempt's outcome is missing") }
        return outcome
    }

    /// An outcome, or none (tag 0) in a stored state.
    mutating func readOptionalOutcome() throws(DecodingProblem) -> AttemptOutcome? {
        let tag = try readUInt8("outcome")
        switch OutcomeTag(rawValue: tag) {
        case .none?: return nil
        case .response?: return .response(statusCode: Int(try readUInt16("status code")))
        case .noResponse?: return .noResponse(try readCode(TransportRequest.Failure.self, "transport failure"))
        case .notSent?: return .notSent
        case nil: throw DecodingProblem("unknown outcome tag \(tag)")
        }
    }

    /// A code that may be absent, stored as 0.
    mutating func readOptionalCode<T: JournalCode>(_ type: T.Type, _ what: StaticString) throws(DecodingProblem) -> T? {
        let code = try readUInt8(what)
        guard code != 0 else { return nil }
        guard let value = T(code: code) else { throw DecodingProblem("unknown \(what) code \(code)") }
        return value
    }
}

extension UUID {
    /// The all-zero UUID.
    static let zero: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
}
