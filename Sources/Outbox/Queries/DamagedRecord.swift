public import OutboxCore

extension Outbox {
    /// A record of the journal that could not be read: it failed its checksum, did not decode, or
    /// was written by a newer format. Readers report it and carry on with the rest.
    public struct DamagedRecord: Sendable, Equatable, Codable {
        public var seq: JournalSequence
        /// What is wrong with it, e.g. `checksum mismatch (stored 1a2b3c4d, computed 5e6f7a8b)`.
        public var reason: String
        /// The operation the record's header names. Unverified: the bytes failed their check, so
        /// this is a lead, not a fact.
        public var claimedOperationID: OperationID?

        public init(seq: JournalSequence, reason: String, claimedOperationID: OperationID?) {
            self.seq = seq
            self.reason = reason
            self.claimedOperationID = claimedOperationID
        }

        /// Describes a record `RecordCodec.decode` refused.
        package init(seq: JournalSequence, error: any Error, record: [UInt8]) {
            self.seq = seq
            if case OutboxError.journalCorrupt(_, let reason) = error {
                self.reason = reason
            } else {
                self.reason = "\(error)"
            }
            self.claimedOperationID = Self.claimedOperation(in: record)
        }

        /// The operation id at the record format's offset 12, when the flags byte (offset 3) says
        /// the record belongs to an operation (see `Docs/journal-format.md`).
        static func claimedOperation(in record: [UInt8]) -> OperationID? {
            let flagsOffset = 3
            let idRange = 12..<28
            guard record.count >= idRange.upperBound, record[flagsOffset] & 0x01 != 0 else { return nil }
            return OperationID(bytes: record[idRange])
        }
    }
}
