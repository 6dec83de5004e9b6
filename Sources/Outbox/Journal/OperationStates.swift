package import OutboxCore

/// The operations' states of a fold, by id: kept one after another in an array and found
/// through a dictionary of positions.
///
/// A dictionary of the states themselves moves a whole state out of its storage and back at
/// every event folded into it; here an event modifies its state where it lies, and a reader
/// walks them without copying any.
package struct OperationStates: Sendable {
    /// Every state, in the order their operations first came.
    package private(set) var values: [OperationState] = []
    private var positions: [OperationID: Int] = [:]

    package var count: Int { values.count }

    /// Every operation's id, in the order of ``values``.
    package var keys: LazyMapSequence<[OperationState], OperationID> { values.lazy.map(\.id) }

    /// The state of `id`; `nil` when it has none.
    package subscript(id: OperationID) -> OperationState? {
        positions[id].map { values[$0] }
    }

    /// Puts `state` in the place of its operation's state, or adds it.
    package mutating func update(_ state: OperationState) {
        if let position = positions[state.id] {
            values[position] = state
        } else {
            append(state)
        }
    }

    /// Hands over every state, leaving none: what a reader that is done with the fold uses to
    /// move the states out rather than copy them.
    package mutating func removeAll() -> [OperationState] {
        positions = [:]
        defer { values = [] }
        return values
    }

    /// Lends `id`'s state (`nil` when it has none) to `body`, which may change it in place or
    /// create it; a state, once there, stays.
    package mutating func modify<Failure: Error>(
        _ id: OperationID,
        _ body: (inout OperationState) throws(Failure) -> Void,
        creating create: () throws(Failure) -> OperationState
    ) throws(Failure) {
        if let position = positions[id] {
            try body(&values[position])
        } else {
            append(try create())
        }
    }

    private mutating func append(_ state: OperationState) {
        positions[state.id] = values.count
        values.append(state)
    }
}

extension OperationStates: Sequence {
    package func makeIterator() -> some IteratorProtocol<(key: OperationID, value: OperationState)> {
        values.lazy.map { (key: $0.id, value: $0) }.makeIterator()
    }
}

extension OperationStates: Equatable {
    /// The same operations with equal states, in whatever order they came.
    package static func == (left: OperationStates, right: OperationStates) -> Bool {
        left.count == right.count && left.values.allSatisfy { right[$0.id] == $0 }
    }

    /// The same operations as a dictionary of states, with equal states.
    package static func == (left: [OperationID: OperationState], right: OperationStates) -> Bool {
        left.count == right.count && right.values.allSatisfy { left[$0.id] == $0 }
    }
}
