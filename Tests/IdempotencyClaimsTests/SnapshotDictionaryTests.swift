import IdempotencyClaims
import Testing

/// A key whose hash is chosen, so tests can make keys collide at any level of the trie.
private struct ChosenHash: Hashable, Sendable {
    var name: Int
    var hash: Int

    static func == (lhs: ChosenHash, rhs: ChosenHash) -> Bool { lhs.name == rhs.name }
    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

/// SplitMix64: the same numbers for the same seed, printed on failure.
private struct Seeded: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("The snapshot dictionary")
struct SnapshotDictionaryTests {
    @Test(arguments: [1, 2, 3])
    func randomInsertsReplacementsAndRemovalsMatchADictionary(seed: UInt64) {
        var random = Seeded(state: seed)
        var model: [ChosenHash: Int] = [:]
        var map = SnapshotDictionary<ChosenHash, Int>()
        var snapshots: [(SnapshotDictionary<ChosenHash, Int>, [ChosenHash: Int])] = []
        for step in 0..<4_000 {
            // Few distinct hashes among many names: whole-hash collisions and shared prefixes.
            let name = Int.random(in: 0..<600, using: &random)
            let key = ChosenHash(name: name, hash: name % 7 == 0 ? 42 : name % 150)
            if Int.random(in: 0..<3, using: &random) == 0 {
                model[key] = nil
                map[key] = nil
            } else {
                model[key] = step
                map[key] = step
            }
            if step % 500 == 0 { snapshots.append((map, model)) }
        }
        #expect(map.count == model.count, "seed \(seed)")
        for (key, value) in model { #expect(map[key] == value, "seed \(seed)") }
        #expect(Dictionary(uniqueKeysWithValues: map.entries.map { ($0.key, $0.value) }) == model, "seed \(seed)")
        // A copy taken earlier saw none of the later changes.
        for (snapshot, expected) in snapshots {
            #expect(Dictionary(uniqueKeysWithValues: snapshot.entries.map { ($0.key, $0.value) }) == expected, "seed \(seed)")
        }
    }

    @Test func removingEveryKeyLeavesItEmpty() {
        var map = SnapshotDictionary<Int, Int>()
        for key in 0..<1_000 { map[key] = key }
        for key in 0..<1_000 { map[key] = nil }
        #expect(map.isEmpty && map.entries.isEmpty)
        map[5, default: 0] += 2
        #expect(map[5] == 2 && map.count == 1)
    }

    @Test func aWriteToACopyOfAHundredThousandEntriesCopiesOnlyItsPath() {
        var map = SnapshotDictionary<Int, Int>()
        for key in 0..<100_000 { map[key] = key }
        var copy = map
        let meter = SnapshotWork.Meter()
        SnapshotWork.$meter.withValue(meter) { copy[-1] = -1 }
        #expect(meter.slotsCopied <= 13 * 32)
        #expect(map[-1] == nil && copy[-1] == -1 && copy.count == map.count + 1)
    }
}
