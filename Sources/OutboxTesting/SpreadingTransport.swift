public import Outbox
import Synchronization

/// Spreads requests over several servers in turn, as a load balancer in front of several server
/// processes does; and, with `copies` above 1, sends each request to that many servers at once,
/// as a network that duplicates requests: copies of one key racing on different servers.
///
/// ```swift
/// let transport = SpreadingTransport(servers.map { URLSessionTransport(baseURL: $0.baseURL) }, copies: 2)
/// // request 1 goes to servers 0 and 1 at once, request 2 to servers 1 and 2, ...
/// ```
///
/// The answer (or failure) is the first server's of the turn; the other copies' are dropped, and
/// the call returns once every copy has ended.
public final class SpreadingTransport: OutboxTransport {
    public let backends: [any OutboxTransport]
    /// How many servers each request is sent to at once.
    public let copies: Int
    private let turn = Atomic<Int>(0)
    private let sent: Mutex<[Int]>

    /// - Parameters:
    ///   - backends: one transport per server, at least one.
    ///   - copies: servers each request is sent to at once, from 1 to `backends.count`.
    public init(_ backends: [any OutboxTransport], copies: Int = 1) {
        precondition(!backends.isEmpty, "a SpreadingTransport needs at least one backend")
        precondition((1...backends.count).contains(copies), "copies must be from 1 to the number of backends")
        self.backends = backends
        self.copies = copies
        sent = Mutex(Array(repeating: 0, count: backends.count))
    }

    /// How many requests each backend was sent, copies included.
    public var sentCounts: [Int] {
        sent.withLock { $0 }
    }

    /// A segment goes to the object store behind the first backend: the store is one, whatever
    /// server granted its URL.
    public func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
        try await backends[0].upload(segment)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let first = turn.wrappingAdd(1, ordering: .relaxed).oldValue
        let chosen = (0..<copies).map { (first + $0) % backends.count }
        sent.withLock { counts in for index in chosen { counts[index] += 1 } }
        guard copies > 1 else { return try await backends[chosen[0]].send(request) }
        let primary = backends[chosen[0]]
        let others = chosen.dropFirst().map { backends[$0] }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            for other in others {
                group.addTask { _ = try? await other.send(request) }
            }
            let answer = await Result(catching: { try await primary.send(request) })
            try await group.waitForAll()
            return try answer.get()
        }
    }
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing call, caught.
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
