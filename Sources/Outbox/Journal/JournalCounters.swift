import Foundation
import OutboxCore
import OutboxStorage
import OutboxWire

/// Every counter the journal keeps, as one value: the `counters` singleton of `state`.
///
/// The writer reads it once per commit, adds every event's changes to it and writes it once, so
/// a commit of many events writes one value, not one per counter. The counters the engine names
/// itself (events, their bytes, attempts, each status and outcome) sit in fixed slots; those
/// named by the app's own words (operation types, Sync tab categories) in a short list.
package struct JournalCounters: Equatable, Sendable {
    /// A counter named by the app's words.
    enum Named: Hashable, Sendable {
        /// Operations of a type whose last answer was a key conflict.
        case conflicts(operationType: ExactString)
        /// Operations of a type whose latest outcome was a revision conflict.
        case revisionConflicts(operationType: ExactString)
        /// Rows of one Sync tab card.
        case tab(JournalSchema.TabGroup, category: ExactString)
    }

    var events: Int64 = 0
    var eventBytes: Int64 = 0
    /// The sum of every operation's attempt count.
    var attempts: Int64 = 0
    /// Attempts abandoned at an open, and attempts an expiry cancelled, over the live operations.
    package var abandonedAttempts: Int64 = 0
    package var cancelledAttempts: Int64 = 0
    /// Live operations acknowledged, by their connected age then (``OutboxMetrics.AcknowledgementObjective/bucket(of:)``).
    private(set) var acknowledged = [Int64](repeating: 0, count: OutboxMetrics.AcknowledgementObjective.bucketCount)
    /// Operations by status, by the status's code (unused slots stay zero).
    private(set) var statuses = [Int64](repeating: 0, count: Self.codeSlots)
    /// Operations by latest outcome, by the outcome's code.
    private(set) var outcomes = [Int64](repeating: 0, count: Self.codeSlots)
    /// The named counters; zeros are dropped when stored.
    private(set) var named: [(counter: Named, count: Int64)] = []

    /// One more than the largest status or outcome code.
    private static let codeSlots = 16

    package static func == (left: JournalCounters, right: JournalCounters) -> Bool {
        left.byName == right.byName
    }

    // MARK: Reading

    func count(of status: OutboxStatus) -> Int64 { statuses[Int(status.code)] }
    func count(of outcome: OutcomeCategory) -> Int64 { outcomes[Int(outcome.code)] }

    func count(of counter: Named) -> Int64 {
        named.first { $0.counter == counter }?.count ?? 0
    }

    /// Each card's row count in one Sync tab group, by category (non-zero only).
    func tabCounts(_ group: JournalSchema.TabGroup) -> [ExactString: Int64] {
        var counts: [ExactString: Int64] = [:]
        for (counter, count) in named where count != 0 {
            if case .tab(group, let category) = counter { counts[category, default: 0] += count }
        }
        return counts
    }

    /// The service objective at `interval` (one of the bucket bounds), with `pendingPast` writes
    /// waiting already past it.
    package func acknowledgement(within interval: Double, pendingPast: Int) -> OutboxMetrics.AcknowledgementObjective {
        let within = OutboxMetrics.AcknowledgementObjective.bucket(of: interval)
        return OutboxMetrics.AcknowledgementObjective(
            intervalSeconds: interval, acknowledged: Int(acknowledged.reduce(0, +)),
            withinInterval: Int(acknowledged.prefix(within + 1).reduce(0, +)), pendingPastInterval: pendingPast
        )
    }

    /// Operations by type whose last answer was a key conflict (non-zero only).
    var conflictsByOperationType: [ExactString: Int64] {
        var counts: [ExactString: Int64] = [:]
        for (counter, count) in named where count != 0 {
            if case .conflicts(let type) = counter { counts[type, default: 0] += count }
        }
        return counts
    }

    /// Operations by type whose latest outcome was a revision conflict (non-zero only).
    var revisionConflictsByOperationType: [ExactString: Int64] {
        var counts: [ExactString: Int64] = [:]
        for (counter, count) in named where count != 0 {
            if case .revisionConflicts(let type) = counter { counts[type, default: 0] += count }
        }
        return counts
    }

    /// Every non-zero counter by its name (``CounterName``): how `verify` reports a difference.
    var byName: [ExactString: Int64] {
        var names: [ExactString: Int64] = [
            ExactString(CounterName.events): events, ExactString(CounterName.eventBytes): eventBytes, ExactString(CounterName.attempts): attempts,
        ]
        names[ExactString(CounterName.abandonedAttempts)] = abandonedAttempts
        names[ExactString(CounterName.cancelledAttempts)] = cancelledAttempts
        for (bucket, count) in acknowledged.enumerated() { names[ExactString(CounterName.acknowledged(bucket: bucket)), default: 0] += count }
        for status in OutboxStatus.allCases { names[ExactString(CounterName.status(status))] = count(of: status) }
        for outcome in OutcomeCategory.allCases { names[ExactString(CounterName.outcome(outcome))] = count(of: outcome) }
        for (counter, count) in named {
            let name = switch counter {
            case .conflicts(let type): CounterName.conflicts(type.string)
            case .revisionConflicts(let type): CounterName.revisionConflicts(type.string)
            case .tab(let group, let category): CounterName.tab(group, category: category.string)
            }
            names[ExactString(name), default: 0] += count
        }
        return names.filter { $0.value != 0 }
    }

    // MARK: Changing

    mutating func add(_ count: Int64, to counter: Named) {
        guard count != 0 else { return }
        if let index = named.firstIndex(where: { $0.counter == counter }) {
            named[index].count += count
        } else {
            named.append((counter, count))
        }
    }

    mutating func add(_ count: Int64, to status: OutboxStatus) { statuses[Int(status.code)] += count }
    mutating func add(_ count: Int64, to outcome: OutcomeCategory) { outcomes[Int(outcome.code)] += count }

    /// Adds every counter of `other`.
    mutating func add(_ other: JournalCounters) {
        events += other.events
        eventBytes += other.eventBytes
        attempts += other.attempts
        abandonedAttempts += other.abandonedAttempts
        cancelledAttempts += other.cancelledAttempts
        for bucket in acknowledged.indices { acknowledged[bucket] += other.acknowledged[bucket] }
        for slot in 0..<Self.codeSlots {
            statuses[slot] += other.statuses[slot]
            outcomes[slot] += other.outcomes[slot]
        }
        for (counter, count) in other.named { add(count, to: counter) }
    }

    /// Moves an operation's contribution from its state `before` (none for a new operation) to
    /// its state `after`: what each of its events changes. A counter both count alike is left alone.
    mutating func move(from before: OperationState?, to after: OperationState) {
        if let before {
            if before.status != after.status {
                add(-1, to: before.status)
                add(1, to: after.status)
            }
            attempts += Int64(after.attemptCount - before.attemptCount)
            abandonedAttempts += Int64(after.abandonedAttempts - before.abandonedAttempts)
            cancelledAttempts += Int64(after.cancelledAttempts - before.cancelledAttempts)
            let (oldBucket, newBucket) = (Self.acknowledgedBucket(before), Self.acknowledgedBucket(after))
            if oldBucket != newBucket {
                if let bucket = oldBucket { acknowledged[bucket] -= 1 }
                if let bucket = newBucket { acknowledged[bucket] += 1 }
            }
            if before.latestOutcome != after.latestOutcome {
                if let outcome = before.latestOutcome { add(-1, to: outcome) }
                if let outcome = after.latestOutcome { add(1, to: outcome) }
            }
            let (oldConflict, newConflict) = (Self.keyConflict(before), Self.keyConflict(after))
            if oldConflict != newConflict {
                if let counter = oldConflict { add(-1, to: counter) }
                if let counter = newConflict { add(1, to: counter) }
            }
            let (oldRevision, newRevision) = (Self.revisionConflict(before), Self.revisionConflict(after))
            if oldRevision != newRevision {
                if let counter = oldRevision { add(-1, to: counter) }
                if let counter = newRevision { add(1, to: counter) }
            }
            let (oldTab, newTab) = (Self.tab(before), Self.tab(after))
            if oldTab != newTab {
                if let counter = oldTab { add(-1, to: counter) }
                if let counter = newTab { add(1, to: counter) }
            }
        } else {
            add(after, sign: 1)
        }
    }

    /// Adds (`sign` 1) or takes away (-1) everything `state` counts for.
    mutating func add(_ state: OperationState, sign: Int64) {
        add(sign, to: state.status)
        attempts += sign * Int64(state.attemptCount)
        abandonedAttempts += sign * Int64(state.abandonedAttempts)
        cancelledAttempts += sign * Int64(state.cancelledAttempts)
        if let bucket = Self.acknowledgedBucket(state) { acknowledged[bucket] += sign }
        if let outcome = state.latestOutcome { add(sign, to: outcome) }
        if let counter = Self.keyConflict(state) { add(sign, to: counter) }
        if let counter = Self.revisionConflict(state) { add(sign, to: counter) }
        if let counter = Self.tab(state) { add(sign, to: counter) }
    }

    /// The bucket of a live operation's connected age when acknowledged; `nil` when it was not,
    /// or was made before the journal kept the connected clock. A compacted operation keeps none.
    private static func acknowledgedBucket(_ state: OperationState) -> Int? {
        guard state.compactedAt == nil, let age = state.acknowledgedConnectedAge else { return nil }
        return OutboxMetrics.AcknowledgementObjective.bucket(of: age)
    }

    /// Counters from states survive compaction: attempts, the latest outcome, a conflict met.
    private static func keyConflict(_ state: OperationState) -> Named? {
        state.lastErrorCode == ErrorCode.idempotencyConflict ? .conflicts(operationType: ExactString(state.operationType)) : nil
    }

    private static func revisionConflict(_ state: OperationState) -> Named? {
        state.latestOutcome == .conflicted ? .revisionConflicts(operationType: ExactString(state.operationType)) : nil
    }

    private static func tab(_ state: OperationState) -> Named? {
        Projection.tabGroup(of: state.status).map { .tab($0, category: ExactString(state.category)) }
    }
}

// MARK: The stored form

extension JournalCounters {
    /// What each stored entry counts, its first byte.
    private enum Kind: UInt8 {
        case events = 1
        case eventBytes = 2
        case attempts = 3
        /// Then the status's code.
        case status = 4
        /// Then the outcome's code.
        case outcome = 5
        /// Then the operation type (`string`).
        case conflicts = 6
        /// Then the operation type (`string`).
        case revisionConflicts = 7
        /// Then the group (1 byte) and the category (`string`).
        case tab = 8
        case abandonedAttempts = 9
        case cancelledAttempts = 10
        /// Then the bucket (1 byte).
        case acknowledged = 11
    }

    private static let form: UInt8 = 1

    /// The stored value: a form byte (1), a u32 count, then each non-zero counter in order (its
    /// kind, what names it, a signed 64-bit count), so equal counters always store equal bytes.
    func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 128 + 32 * named.count)
        encode(into: &writer)
        return writer.bytes
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(Self.form)
        let countOffset = writer.bytes.count
        writer.write(UInt32(0))
        var entries: UInt32 = 0
        func entry(_ kind: Kind, _ count: Int64, _ name: (inout ByteWriter) -> Void = { _ in }) {
            guard count != 0 else { return }
            writer.write(kind.rawValue)
            name(&writer)
            writer.write(UInt64(bitPattern: count))
            entries += 1
        }
        entry(.events, events)
        entry(.eventBytes, eventBytes)
        entry(.attempts, attempts)
        entry(.abandonedAttempts, abandonedAttempts)
        entry(.cancelledAttempts, cancelledAttempts)
        for (bucket, count) in acknowledged.enumerated() { entry(.acknowledged, count) { $0.write(UInt8(bucket)) } }
        for slot in 0..<Self.codeSlots { entry(.status, statuses[slot]) { $0.write(UInt8(slot)) } }
        for slot in 0..<Self.codeSlots { entry(.outcome, outcomes[slot]) { $0.write(UInt8(slot)) } }
        for (counter, count) in named.sorted(by: { Self.order($0.counter, $1.counter) }) {
            switch counter {
            case .conflicts(let type): entry(.conflicts, count) { $0.write(type.string) }
            case .revisionConflicts(let type): entry(.revisionConflicts, count) { $0.write(type.string) }
            case .tab(let group, let category): entry(.tab, count) { $0.write(group.rawValue); $0.write(category.string) }
            }
        }
        writer.patch(entries, at: countOffset)
    }

    private static func order(_ left: Named, _ right: Named) -> Bool {
        func key(_ counter: Named) -> (UInt8, UInt8, ExactString) {
            switch counter {
            case .conflicts(let type): (Kind.conflicts.rawValue, 0, type)
            case .revisionConflicts(let type): (Kind.revisionConflicts.rawValue, 0, type)
            case .tab(let group, let category): (Kind.tab.rawValue, group.rawValue, category)
            }
        }
        let (l, r) = (key(left), key(right))
        if l.0 != r.0 { return l.0 < r.0 }
        if l.1 != r.1 { return l.1 < r.1 }
        return Array(l.2.utf8).lexicographicallyPrecedes(Array(r.2.utf8))
    }

    /// The operations of the statuses `include` accepts, read straight from the stored value
    /// without decoding the rest: the badge, read at every commit by a view that shows it.
    /// - Throws: ``DecodingProblem`` for bytes that are not a counters value.
    static func count(ofStatuses include: (OutboxStatus) -> Bool, in bytes: UnsafeRawBufferPointer) throws(DecodingProblem) -> Int64 {
        var position = 0
        func take(_ count: Int) throws(DecodingProblem) -> Int {
            guard count >= 0, position + count <= bytes.count else { throw DecodingProblem("truncated counters") }
            defer { position += count }
            return position
        }
        func u32() throws(DecodingProblem) -> Int { Int(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: try take(4), as: UInt32.self))) }
        guard bytes[try take(1)] == Self.form else { throw DecodingProblem("unknown counters form") }
        let entries = try u32()
        var total: Int64 = 0
        for _ in 0..<entries {
            var status: OutboxStatus?
            switch Kind(rawValue: bytes[try take(1)]) {
            case .events?, .eventBytes?, .attempts?, .abandonedAttempts?, .cancelledAttempts?: break
            case .acknowledged?: _ = try take(1)
            case .status?:
                guard let counted = OutboxStatus(code: bytes[try take(1)]) else { throw DecodingProblem("unknown counted status") }
                status = counted
            case .outcome?: _ = try take(1)
            case .conflicts?, .revisionConflicts?: _ = try take(try u32())
            case .tab?:
                _ = try take(1)
                _ = try take(try u32())
            case nil: throw DecodingProblem("unknown counter kind")
            }
            let count = Int64(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: try take(8), as: UInt64.self)))
            if let status, include(status) { total += count }
        }
        guard position == bytes.count else { throw DecodingProblem("\(bytes.count - position) unexpected bytes after the counters") }
        return total
    }

    /// Reads the stored value.
    /// - Throws: ``DecodingProblem`` for bytes that are not one.
    init(decoding bytes: [UInt8]) throws(DecodingProblem) {
        var reader = ByteReader(bytes)
        let form = try reader.readUInt8("counters form")
        guard form == Self.form else { throw DecodingProblem("unknown counters form \(form)") }
        let entries = Int(try reader.readUInt32("counter count"))
        // Each entry takes at least nine bytes: a bound before anything is reserved.
        guard entries <= reader.remaining / 9 else { throw DecodingProblem("\(entries) counters cannot fit") }
        for _ in 0..<entries {
            let code = try reader.readUInt8("counter kind")
            guard let kind = Kind(rawValue: code) else { throw DecodingProblem("unknown counter kind \(code)") }
            func readCount() throws(DecodingProblem) -> Int64 { Int64(bitPattern: try reader.readUInt64("count")) }
            switch kind {
            case .events:
                events = try readCount()
            case .eventBytes:
                eventBytes = try readCount()
            case .attempts:
                attempts = try readCount()
            case .abandonedAttempts:
                abandonedAttempts = try readCount()
            case .cancelledAttempts:
                cancelledAttempts = try readCount()
            case .acknowledged:
                let bucket = Int(try reader.readUInt8("acknowledged bucket"))
                guard bucket < acknowledged.count else { throw DecodingProblem("unknown acknowledged bucket \(bucket)") }
                acknowledged[bucket] = try readCount()
            case .status:
                let status = try reader.readCode(OutboxStatus.self, "counted status")
                add(try readCount(), to: status)
            case .outcome:
                let outcome = try reader.readCode(OutcomeCategory.self, "counted outcome")
                add(try readCount(), to: outcome)
            case .conflicts:
                let type = try reader.readString("operation type")
                add(try readCount(), to: .conflicts(operationType: ExactString(type)))
            case .revisionConflicts:
                let type = try reader.readString("operation type")
                add(try readCount(), to: .revisionConflicts(operationType: ExactString(type)))
            case .tab:
                let groupCode = try reader.readUInt8("Sync tab group")
                guard let group = JournalSchema.TabGroup(rawValue: groupCode) else {
                    throw DecodingProblem("unknown Sync tab group \(groupCode)")
                }
                let category = try reader.readString("category")
                add(try readCount(), to: .tab(group, category: ExactString(category)))
            }
        }
        try reader.expectEnd("the counters")
    }
}
