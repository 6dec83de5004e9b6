import Foundation
import OutboxCore

/// The rows one pass may send, and the order it sends them in: a pure structure.
///
/// Rows are sent in journal order, one lane at a time per entity: a lane's next row waits until
/// the one before it is done. Different lanes never wait on each other. The plan always offers the
/// row with the lowest first seq among lanes that are not busy.
struct PassPlan {
    struct Candidate: Equatable {
        var id: OperationID
        var lane: Lane
        var firstSeq: JournalSequence
    }

    /// Each lane's rows still to send, in journal order.
    private var lanes: [Lane: [Candidate]] = [:]
    /// The lanes that are not busy and have rows, ordered by their first row's seq.
    private var ready = MinHeap<LaneHead>()
    private var busy = Set<Lane>()
    /// Every row ever added, so a row is sent at most once per pass.
    private(set) var seen = Set<OperationID>()

    private struct LaneHead: Comparable {
        var firstSeq: JournalSequence
        var lane: Lane
        static func < (lhs: LaneHead, rhs: LaneHead) -> Bool { lhs.firstSeq < rhs.firstSeq }
    }

    var isEmpty: Bool { lanes.isEmpty }

    /// Adds rows found due (any order); rows already seen this pass are ignored.
    mutating func add(_ candidates: [Candidate]) {
        for candidate in candidates.sorted(by: { $0.firstSeq < $1.firstSeq }) where seen.insert(candidate.id).inserted {
            let hadRows = lanes[candidate.lane] != nil
            lanes[candidate.lane, default: []].append(candidate)
            if !hadRows && !busy.contains(candidate.lane) {
                ready.insert(LaneHead(firstSeq: candidate.firstSeq, lane: candidate.lane))
            }
        }
    }

    /// The next row to send, its lane marked busy; `nil` when every lane with rows is busy.
    mutating func next() -> Candidate? {
        guard let head = ready.popMin(), var rows = lanes[head.lane], !rows.isEmpty else { return nil }
        let candidate = rows.removeFirst()
        lanes[head.lane] = rows.isEmpty ? nil : rows
        busy.insert(head.lane)
        return candidate
    }

    /// The row sent in `lane` is done; its lane may offer its next row.
    mutating func finished(lane: Lane) {
        busy.remove(lane)
        if let first = lanes[lane]?.first {
            ready.insert(LaneHead(firstSeq: first.firstSeq, lane: lane))
        }
    }

    /// Offers a row again that the pass set aside (its dependency was not synced yet, and now
    /// may be), even though it was seen.
    mutating func readd(_ candidate: Candidate) {
        seen.insert(candidate.id)
        let hadRows = lanes[candidate.lane] != nil
        lanes[candidate.lane, default: []].insert(candidate, at: 0)
        if !busy.contains(candidate.lane) {
            if hadRows { ready.removeAll { $0.lane == candidate.lane } }
            ready.insert(LaneHead(firstSeq: candidate.firstSeq, lane: candidate.lane))
        }
    }

    /// Drops a lane's remaining rows: its head waits on something this pass cannot send (a
    /// failed row, a row waiting for approval, a retry scheduled later).
    mutating func dropLane(_ lane: Lane) {
        lanes[lane] = nil
        busy.remove(lane)
        ready.removeAll { $0.lane == lane }
    }
}

/// A binary min-heap.
struct MinHeap<Element: Comparable> {
    private var storage: [Element] = []

    var isEmpty: Bool { storage.isEmpty }
    var count: Int { storage.count }

    mutating func insert(_ element: Element) {
        storage.append(element)
        var child = storage.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard storage[child] < storage[parent] else { break }
            storage.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popMin() -> Element? {
        guard !storage.isEmpty else { return nil }
        storage.swapAt(0, storage.count - 1)
        let minimum = storage.removeLast()
        siftDown(from: 0)
        return minimum
    }

    mutating func removeAll(where shouldRemove: (Element) -> Bool) {
        storage.removeAll(where: shouldRemove)
        for index in stride(from: storage.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < storage.count && storage[left] < storage[smallest] { smallest = left }
            if right < storage.count && storage[right] < storage[smallest] { smallest = right }
            guard smallest != parent else { return }
            storage.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
