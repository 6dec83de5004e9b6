import Foundation
import Outbox
import OutboxAudit
import OutboxTesting
import TestHarness
import Synchronization

/// The network of the storm of uploads (``AttachmentSimulation``): between the phone and the
/// in-memory server, its grants and completions, and its object store. It is where the app ends.
///
/// Each engine the storm opens reaches it through an ``EngineLife`` of its own. A fault is drawn
/// from the seed and the request's identity (a write's key, a grant's or completion's key, a
/// segment's attachment and number) and how often that identity came before, never from the order
/// requests arrive in: a pass uploads beside its sends, and which of the two comes first is the
/// thread scheduler's. Faults: no response, the answer lost after the server or store took it, a
/// 503, every grant expiring just before a segment's `PUT`, and the app ending: killed as a
/// request was to leave or with its answer in hand, or closing the engine (`close()`) while a
/// segment is out with the process living on. An ending closes the engine from inside the request;
/// a killed engine's life reaches nothing from that moment, a closed one's until the next engine
/// opens (once the old one's pass ended): a request of an ended life after that is a pass that
/// went on beside the next engine, a broken promise.
///
/// What the storm's invariants need is kept here: every request under a write's key for
/// ``HistoryAudit``, a write that reached the server before one of its files was completed, and
/// per segment how many stored copies the engine did not learn of (the answer lost, or the app
/// ended before the landing was journaled): each allows one more `PUT` of it.
final class UploadNetwork: Sendable {
    /// What a request meets while the network is not healed.
    enum Fault: String, Sendable, CaseIterable {
        /// Lost before reaching the server: nothing taken.
        case lostBeforeServer
        /// 503 from the server or the store: nothing taken.
        case serverError
        /// The server or store took it; the answer was lost on the way back.
        case answerLost
        /// The app ended as the request was to leave: nothing taken.
        case endedBefore
        /// The server or store took it; the app ended with the answer in hand.
        case endedWithAnswer
        /// Every grant expired just before a segment's `PUT`: the store answers 401.
        case grantsExpired
        /// The app closes the engine (`close()`) while a segment's `PUT` is out, and the process
        /// lives on: what the closed engine still sends reaches the store.
        case closedMidUpload
    }

    /// One segment of one attachment.
    struct SegmentKey: Hashable, Sendable, CustomStringConvertible {
        var attachment: AttachmentID
        var number: Int

        var description: String { "segment \(number) of \(attachment)" }
    }

    /// The faults each kind of request may meet, as often as each is listed.
    static let sendFaults: [Fault] = [.lostBeforeServer, .serverError, .answerLost, .endedWithAnswer]
    static let askFaults: [Fault] = [.serverError, .answerLost, .endedWithAnswer]
    static let putFaults: [Fault] = [.serverError, .serverError, .grantsExpired, .grantsExpired, .endedBefore, .endedWithAnswer,
                                     .endedWithAnswer, .answerLost, .closedMidUpload]
    /// Requests in one step of the storm past which the engine is taken to spin: its life is
    /// ended, and the storm fails naming it (rather than waiting on a pass that never ends).
    static let requestsPerStepLimit = 3_000

    private struct State {
        var occurrences: [String: Int] = [:]
        var lives = 0
        var ended: Set<Int> = []
        /// Requests under each write's key not yet taken by the audit, each with its life.
        var exchanges: [String: [(life: Int, exchange: WireExchange)]] = [:]
        var files: [AttachmentID: SHA256Digest] = [:]
        /// Per segment: stored copies the engine did not learn of, and whether the latest is one.
        var resendsAllowed: [SegmentKey: Int] = [:]
        var unlearned: Set<SegmentKey> = []
        var problems: [String] = []
        var faults: [Fault: Int] = [:]
        var endings = 0
        var events: [String] = []
        var requests = 0
        var stepRequests = 0
    }

    let seed: UInt64
    let faultPercent: Int
    let server: InMemoryServer
    /// Whether the network is up, and whether it healed: from then on every request reaches the
    /// server and store and its answer comes back.
    let signal = NetworkSignal()
    private let state = Mutex(State())

    init(seed: UInt64, faultPercent: Int, server: InMemoryServer) {
        self.seed = seed
        self.faultPercent = faultPercent
        self.server = server
    }

    // MARK: The storm's controls

    /// A transport for the next engine. Every earlier life ended by now: the storm opens an
    /// engine only once the last one's pass ended.
    func life() -> EngineLife {
        EngineLife(network: self, number: state.withLock { state in
            state.ended.formUnion(0..<state.lives)
            defer { state.lives += 1 }
            return state.lives
        })
    }

    /// The file `id` is the bytes of `sha256`: a write naming it may reach the server only once
    /// the store completed it as those bytes.
    func carries(_ id: AttachmentID, sha256: SHA256Digest) {
        state.withLock { $0.files[id] = sha256 }
    }

    /// A step of the storm begins: its requests are counted from here.
    func beginStep() {
        state.withLock { $0.stepRequests = 0 }
    }

    /// Ends `life` (the app killed or closed): the engine is closed, and nothing of it reaches
    /// the network from now on.
    func end(_ life: EngineLife, _ why: String) {
        state.withLock { state in
            guard state.ended.insert(life.number).inserted else { return }
            state.endings += 1
            state.events.append("  the app ends \(why)")
            // Closed under the lock: a request of this life that finds it ended finds its engine
            // closed, so whatever it is answered is never recorded (as in a killed process).
            life.ending?()
        }
    }

    /// Closes `life`'s engine from inside a request while the process lives on: its life goes on
    /// until the next engine opens.
    func close(_ life: EngineLife, _ why: String) {
        state.withLock { $0.events.append("  the app closes the engine \(why)") }
        life.ending?()
    }

    /// After an ending, the segments the store holds and the journal does not say landed: each
    /// copy the engine did not learn of allows one more `PUT` of the segment (once per copy).
    /// - Returns: those not noted before (by a lost answer, or an earlier ending).
    @discardableResult
    func unlearned(_ keys: [SegmentKey]) -> [SegmentKey] {
        state.withLock { state in
            keys.filter { key in
                guard state.unlearned.insert(key).inserted else { return false }
                state.resendsAllowed[key, default: 0] += 1
                return true
            }
        }
    }

    /// How many more `PUT`s of `key` than one the interruptions allow.
    func resendsAllowed(_ key: SegmentKey) -> Int {
        state.withLock { $0.resendsAllowed[key] ?? 0 }
    }

    /// The requests under writes' keys since the last call, per key, in order, for the audit.
    /// Each key in `abandoned` (an attempt the last open abandoned) has its last request, when an
    /// ended life sent it, as lost with the process: whatever answer came, that process never
    /// recorded it.
    func takeExchanges(abandoned: Set<String>) -> [String: [WireExchange]] {
        state.withLock { state in
            defer { state.exchanges = [:] }
            var taken: [String: [WireExchange]] = [:]
            for (key, sent) in state.exchanges {
                var exchanges = sent.map(\.exchange)
                if abandoned.contains(key), let last = sent.last, state.ended.contains(last.life) {
                    exchanges[exchanges.count - 1].answer = .lostWithTheProcess
                }
                taken[key] = exchanges
            }
            return taken
        }
    }

    /// What happened on the network since the last call, for the trace.
    func takeEvents() -> [String] {
        state.withLock { state in
            defer { state.events = [] }
            return state.events
        }
    }

    /// Broken promises seen on the wire, in order.
    var problems: [String] { state.withLock { $0.problems } }
    var faultsInjected: [Fault: Int] { state.withLock { $0.faults } }
    var endings: Int { state.withLock { $0.endings } }
    /// Engines opened so far.
    var lives: Int { state.withLock { $0.lives } }
    var requestCount: Int { state.withLock { $0.requests } }

    // MARK: Requests

    /// How a request goes, decided as it arrives.
    private enum Verdict {
        case through
        case fault(Fault)
        /// Its life ended: it never leaves the process.
        case ended
        case offline
        /// Past the step's limit: the engine spins.
        case runaway
    }

    /// The verdict on a request of `life` whose identity is `identity`, drawn from `faults`.
    private func verdict(_ identity: String, of life: EngineLife, faults: [Fault]) -> Verdict {
        let (online, healed) = (signal.isOnline, signal.isHealed)
        return state.withLock { state in
            if life.number < state.lives - 1 {
                // Its pass was awaited before the next engine opened: nothing of it may come now.
                state.problems.append("the \(identity) of an ended engine came after the next engine opened: its pass went on beside it")
                return .ended
            }
            guard !state.ended.contains(life.number) else { return .ended }
            state.requests += 1
            state.stepRequests += 1
            guard state.stepRequests <= Self.requestsPerStepLimit else {
                state.problems.append("more than \(Self.requestsPerStepLimit) requests in one step: the engine spins (the last \(identity))")
                return .runaway
            }
            guard online else { return .offline }
            guard !healed else { return .through }
            let seen = state.occurrences[identity, default: 0]
            state.occurrences[identity] = seen + 1
            var draw = SeededRandom(seed: seed ^ Self.hash(identity) ^ (UInt64(seen) &* 0x9E37_79B9_7F4A_7C15))
            guard draw.chance(faultPercent), let fault = draw.pick(faults) else { return .through }
            state.faults[fault, default: 0] += 1
            return .fault(fault)
        }
    }

    /// A write's request, or a grant's or completion's.
    func send(_ request: TransportRequest, from life: EngineLife) async throws -> TransportResponse {
        let key = request.headers[OutboxHeader.idempotencyKey] ?? ""
        let isUpload = request.endpoint.hasPrefix(OutboxConfiguration.AttachmentSettings().uploadsEndpoint)
        let what = isUpload ? (request.endpoint.hasSuffix("/complete") ? "completion" : "grant") : "write"
        let identity = "\(what) \(key)"
        // A write's requests are the audit's; a grant's or completion's are the server's alone.
        func record(_ answer: WireExchange.Answer) {
            guard !isUpload else { return }
            let exchange = WireExchange(ifMatch: request.headers[OutboxHeader.ifMatch], answer: answer)
            state.withLock { $0.exchanges[key, default: []].append((life.number, exchange)) }
        }
        func delivered() async throws -> TransportResponse {
            if !isUpload { checkFilesCompleted(request) }
            return try await server.send(request)
        }
        switch verdict(identity, of: life, faults: isUpload ? Self.askFaults : Self.sendFaults) {
        case .ended:
            // Its start was recorded before the process died: the request went down with it.
            record(.lostWithTheProcess)
            throw URLError(.cancelled)
        case .runaway:
            end(life, "spinning")
            record(.lostWithTheProcess)
            throw URLError(.cancelled)
        case .offline:
            record(.noResponse)
            throw URLError(.notConnectedToInternet)
        case .through:
            let response = try await delivered()
            record(WireExchange.Answer(response))
            return response
        case .fault(.lostBeforeServer), .fault(.grantsExpired), .fault(.closedMidUpload):
            record(.noResponse)
            throw URLError(.timedOut)
        case .fault(.endedBefore):
            record(.lostWithTheProcess)
            end(life, "as its \(what) was to be sent")
            throw URLError(.cancelled)
        case .fault(.serverError):
            let response = TransportResponse.error(503, code: "maintenance", message: "Back soon")
            record(WireExchange.Answer(response))
            return response
        case .fault(.answerLost):
            _ = try await delivered()
            record(.noResponse)
            throw URLError(.networkConnectionLost)
        case .fault(.endedWithAnswer):
            let response = try await delivered()
            record(.lostWithTheProcess)
            end(life, "holding the answer to its \(what)")
            return response
        }
    }

    /// A segment's `PUT` to the store.
    func upload(_ segment: SegmentUpload, from life: EngineLife) async throws -> TransportResponse {
        guard let (attachment, number) = InMemoryObjectStore.segment(of: segment.url) else {
            state.withLock { $0.problems.append("a segment was sent to \(segment.url), which is no URL the store granted") }
            throw URLError(.badURL)
        }
        let key = SegmentKey(attachment: attachment, number: number)
        switch verdict("put \(attachment)/\(number)", of: life, faults: Self.putFaults) {
        case .ended:
            throw URLError(.cancelled)
        case .runaway:
            end(life, "spinning")
            throw URLError(.cancelled)
        case .offline, .fault(.lostBeforeServer):
            throw URLError(.notConnectedToInternet)
        case .through:
            return try await stored(segment, key)
        case .fault(.serverError):
            return TransportResponse(statusCode: 503)
        case .fault(.grantsExpired):
            server.objectStore.expireGrants()
            state.withLock { $0.events.append("  every grant expires before \(key) is sent") }
            return try await stored(segment, key)
        case .fault(.endedBefore):
            end(life, "as \(key) was to be sent")
            throw URLError(.cancelled)
        case .fault(.endedWithAnswer):
            let response = try await stored(segment, key)
            end(life, "holding the store's answer to \(key)")
            return response
        case .fault(.answerLost):
            let response = try await stored(segment, key)
            if (200..<300).contains(response.statusCode) { unlearned([key]) }
            throw URLError(.networkConnectionLost)
        case .fault(.closedMidUpload):
            let response = try await stored(segment, key)
            close(life, "while \(key) is on its way; the process lives on")
            return response
        }
    }

    /// Hands the segment to the store; a copy it keeps replaces the one the engine did not learn of.
    private func stored(_ segment: SegmentUpload, _ key: SegmentKey) async throws -> TransportResponse {
        let response = try await server.upload(segment)
        if (200..<300).contains(response.statusCode) { state.withLock { _ = $0.unlearned.remove(key) } }
        return response
    }

    /// A write reaching the server names its files in its payload (`"photos"`): each must be
    /// completed by now, as its bytes.
    private func checkFilesCompleted(_ request: TransportRequest) {
        guard let body = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any], let photos = body["photos"] as? [String] else { return }
        for text in photos {
            guard let id = AttachmentID(text) else { continue }
            let expected = state.withLock { $0.files[id] }
            let object = server.objectStore.object(id)
            guard let object, SHA256Digest(of: object) == expected else {
                let problem = "the write \(request.headers[OutboxHeader.idempotencyKey] ?? "?") reached the server before its file \(id) was completed as its bytes (\(object.map { "\($0.count) bytes" } ?? "no object"))"
                state.withLock { $0.problems.append(problem) }
                return
            }
        }
    }

    /// FNV-1a of `text`'s UTF-8: the same on every platform and run.
    static func hash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xCBF2_9CE4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }
}

/// One engine's transport in the storm: its requests go through ``UploadNetwork`` until the
/// network ends its life.
final class EngineLife: OutboxTransport {
    let network: UploadNetwork
    let number: Int
    private let onEnd = Mutex<(@Sendable () -> Void)?>(nil)

    init(network: UploadNetwork, number: Int) {
        self.network = network
        self.number = number
    }

    /// What ending this life does: closes its engine.
    func onEnd(_ close: @escaping @Sendable () -> Void) {
        onEnd.withLock { $0 = close }
    }

    var ending: (@Sendable () -> Void)? { onEnd.withLock { $0 } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await network.send(request, from: self)
    }

    func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
        try await network.upload(segment, from: self)
    }
}
