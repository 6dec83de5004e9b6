public import OutboxCore
import Synchronization

/// Operation ids from the seed, so a replayed seed names its operations the same.
public final class SeededIDs: Sendable {
    private let generator: Mutex<SeededRandom>

    public init(seed: UInt64) {
        generator = Mutex(SeededRandom(seed: seed))
    }

    public func next() -> OperationID {
        OperationID(uuid: generator.withLock { $0.uuid() })
    }
}
