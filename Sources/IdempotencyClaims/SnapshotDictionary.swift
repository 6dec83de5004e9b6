import Synchronization

/// A dictionary whose copies share everything they have not changed: a hash trie (HAMT) whose
/// nodes are immutable, so a copy costs one reference and a change copies only the nodes on its
/// key's path, at most 32 slots (one reference each) for each of at most 13 levels.
///
/// The in-memory stores give each transaction a copy of what was committed and commit the copy
/// whole. With `Dictionary` the first change of a transaction copied every entry (the committed
/// state still held the storage), so a create cost as much as the store held; with this, it
/// costs the same on an empty store and on one of a million entries.
///
/// Equality of keys is `Key`'s own: keys that are text must be byte-keyed (`ExactString`, `ClaimID`).
package struct SnapshotDictionary<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private var root: Node?
    /// How many entries it holds.
    package private(set) var count = 0

    package init() {}

    package var isEmpty: Bool { count == 0 }

    package subscript(key: Key) -> Value? {
        get { root?.value(for: key, hash: Self.hash(key), shift: 0) }
        set {
            let hash = Self.hash(key)
            if let newValue {
                let (node, added) = Node.inserting(key, newValue, hash: hash, shift: 0, into: root)
                root = node
                if added { count += 1 }
            } else if let root {
                let (node, removed) = root.removing(key, hash: hash, shift: 0)
                self.root = node
                if removed { count -= 1 }
            }
        }
    }

    package subscript(key: Key, default defaultValue: @autoclosure () -> Value) -> Value {
        get { self[key] ?? defaultValue() }
        set { self[key] = newValue }
    }

    /// Every entry, in no particular order.
    package var entries: [(key: Key, value: Value)] {
        var all: [(key: Key, value: Value)] = []
        all.reserveCapacity(count)
        root?.collect(into: &all)
        return all
    }

    package var values: [Value] { entries.map(\.value) }

    private static func hash(_ key: Key) -> UInt64 {
        UInt64(bitPattern: Int64(key.hashValue))
    }

    // MARK: Nodes

    /// 5 bits of the hash per level: 32 slots a node.
    private static var bitsPerLevel: UInt64 { 5 }

    /// One entry, boxed: a slot is one reference, so copying a node copies 32 references at most,
    /// whatever the size of the values.
    private final class Leaf: Sendable {
        let key: Key
        let value: Value

        init(_ key: Key, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    private enum Slot: Sendable {
        case entry(Leaf)
        case child(Node)
        /// Keys whose whole hashes are equal, past the last level.
        case collision([(key: Key, value: Value)])
    }

    private final class Node: Sendable {
        /// Bit `i` set: slot `i` of the 32 is used, stored at its rank among the set bits.
        let bitmap: UInt32
        let slots: [Slot]

        init(bitmap: UInt32, slots: [Slot]) {
            self.bitmap = bitmap
            self.slots = slots
            SnapshotWork.count(slots.count)
        }

        static func index(_ hash: UInt64, shift: UInt64) -> UInt32 {
            UInt32(truncatingIfNeeded: (hash >> shift) & 31)
        }

        func position(of bit: UInt32) -> Int {
            (bitmap & (bit &- 1)).nonzeroBitCount
        }

        func value(for key: Key, hash: UInt64, shift: UInt64) -> Value? {
            let bit = UInt32(1) << Self.index(hash, shift: shift)
            guard bitmap & bit != 0 else { return nil }
            switch slots[position(of: bit)] {
            case .entry(let leaf):
                return leaf.key == key ? leaf.value : nil
            case .child(let child):
                return child.value(for: key, hash: hash, shift: shift + bitsPerLevel)
            case .collision(let entries):
                return entries.first { $0.key == key }?.value
            }
        }

        /// The node (or a new one, for `nil`) with `key` set to `value`, and whether the key is new.
        static func inserting(_ key: Key, _ value: Value, hash: UInt64, shift: UInt64, into node: Node?) -> (Node, Bool) {
            let bit = UInt32(1) << index(hash, shift: shift)
            guard let node else { return (Node(bitmap: bit, slots: [.entry(Leaf(key, value))]), true) }
            let position = node.position(of: bit)
            guard node.bitmap & bit != 0 else {
                var slots = node.slots
                slots.insert(.entry(Leaf(key, value)), at: position)
                return (Node(bitmap: node.bitmap | bit, slots: slots), true)
            }
            let replacement: Slot
            let added: Bool
            switch node.slots[position] {
            case .entry(let leaf):
                if leaf.key == key {
                    (replacement, added) = (.entry(Leaf(key, value)), false)
                } else {
                    let storedHash = SnapshotDictionary.hash(leaf.key)
                    (replacement, added) = (split((leaf, storedHash), (Leaf(key, value), hash), shift: shift + bitsPerLevel), true)
                }
            case .child(let child):
                let (updated, isNew) = inserting(key, value, hash: hash, shift: shift + bitsPerLevel, into: child)
                (replacement, added) = (.child(updated), isNew)
            case .collision(var entries):
                if let existing = entries.firstIndex(where: { $0.key == key }) {
                    entries[existing].value = value
                    (replacement, added) = (.collision(entries), false)
                } else {
                    entries.append((key, value))
                    (replacement, added) = (.collision(entries), true)
                }
                SnapshotWork.count(entries.count)
            }
            var slots = node.slots
            slots[position] = replacement
            return (Node(bitmap: node.bitmap, slots: slots), added)
        }

        /// Two entries that share a slot at this level, pushed down until their hashes part.
        private static func split(_ first: (Leaf, UInt64), _ second: (Leaf, UInt64), shift: UInt64) -> Slot {
            guard shift < 64 else { return .collision([(first.0.key, first.0.value), (second.0.key, second.0.value)]) }
            let firstIndex = index(first.1, shift: shift)
            let secondIndex = index(second.1, shift: shift)
            if firstIndex == secondIndex {
                return .child(Node(bitmap: UInt32(1) << firstIndex, slots: [split(first, second, shift: shift + bitsPerLevel)]))
            }
            let firstSlot = Slot.entry(first.0)
            let secondSlot = Slot.entry(second.0)
            return .child(Node(
                bitmap: (UInt32(1) << firstIndex) | (UInt32(1) << secondIndex),
                slots: firstIndex < secondIndex ? [firstSlot, secondSlot] : [secondSlot, firstSlot]))
        }

        /// The node without `key` (`nil` once empty), and whether it was there.
        func removing(_ key: Key, hash: UInt64, shift: UInt64) -> (Node?, Bool) {
            let bit = UInt32(1) << Self.index(hash, shift: shift)
            guard bitmap & bit != 0 else { return (self, false) }
            let position = position(of: bit)
            var replacement: Slot?
            switch slots[position] {
            case .entry(let leaf):
                guard leaf.key == key else { return (self, false) }
                replacement = nil
            case .child(let child):
                let (updated, removed) = child.removing(key, hash: hash, shift: shift + bitsPerLevel)
                guard removed else { return (self, false) }
                if let updated {
                    // A child left with one entry is pulled up, so the trie stays as shallow as it can.
                    if updated.slots.count == 1, case .entry = updated.slots[0] {
                        replacement = updated.slots[0]
                    } else {
                        replacement = .child(updated)
                    }
                }
            case .collision(var entries):
                guard let existing = entries.firstIndex(where: { $0.key == key }) else { return (self, false) }
                entries.remove(at: existing)
                replacement = entries.count == 1 ? .entry(Leaf(entries[0].key, entries[0].value)) : .collision(entries)
            }
            var slots = self.slots
            if let replacement {
                slots[position] = replacement
                return (Node(bitmap: bitmap, slots: slots), true)
            }
            slots.remove(at: position)
            return (slots.isEmpty ? nil : Node(bitmap: bitmap & ~bit, slots: slots), true)
        }

        func collect(into all: inout [(key: Key, value: Value)]) {
            for slot in slots {
                switch slot {
                case .entry(let leaf): all.append((leaf.key, leaf.value))
                case .child(let child): child.collect(into: &all)
                case .collision(let entries): all += entries
                }
            }
        }
    }
}

/// Counts the slots ``SnapshotDictionary`` copies on the current task or thread, for tests that
/// check a write's cost by counting work rather than by timing it.
///
/// ```swift
/// let meter = SnapshotWork.Meter()
/// SnapshotWork.$meter.withValue(meter) { _ = server.respond(to: create) }
/// meter.slotsCopied   // the same on an empty store and on a full one
/// ```
package enum SnapshotWork {
    package final class Meter: Sendable {
        private let copied = Atomic<Int>(0)

        package init() {}

        /// Slots written into new nodes while this meter was current.
        package var slotsCopied: Int { copied.load(ordering: .relaxed) }

        fileprivate func add(_ slots: Int) {
            copied.add(slots, ordering: .relaxed)
        }
    }

    /// The meter counting now; `nil` (counting nothing) unless a test sets one.
    @TaskLocal package static var meter: Meter?

    fileprivate static func count(_ slots: Int) {
        meter?.add(slots)
    }
}
