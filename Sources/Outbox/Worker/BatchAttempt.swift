import Foundation
import OutboxCore
import OutboxWire

/// Several queued rows sent in one request to the batch endpoint (``OutboxConfiguration.Batching``), each still its
/// own attempt: prepared and checked as ``ReplayAttempt`` prepares a single row, its
/// `attemptStarted` durable before the batch leaves, its answer classified by the disposition
/// table as a single response would be, its outcome recorded on its own. The starts share
/// commits, and so do the outcomes.
///
/// The batch's answer names each operation; one it leaves out got no response. A whole-batch
/// 413 is split in halves and each half sent again (a single row is then answered 413); any
/// other whole-batch status (401, 429, 5xx, ...) is every row's answer, as if each had been sent
/// alone, and a 401 pauses the worker once.
struct BatchAttempt: Sendable {
    let attempts: ReplayAttempt
    let batching: OutboxConfiguration.Batching

    private var configuration: OutboxConfiguration { attempts.configuration }
    private var log: EngineLog { attempts.log }

    /// Sends `ids` (lane heads, at most one per lane) in batches and records what happened to each.
    /// - Returns: each id's report, in the order given.
    func send(_ ids: [OperationID], trigger: WakeReason) async -> [(OperationID, ReplayAttempt.Report)] {
        guard !attempts.isStopped else { return ids.map { ($0, .halted) } }
        let account = await configuration.session.currentAccount()
        var reports: [OperationID: ReplayAttempt.Report] = [:]
        var ready: [ReplayAttempt.Prepared] = []
        for id in ids {
            // A change of who is signed in is recorded once, with the batch's first start.
            switch await attempts.prepare(id, trigger: trigger, account: account, recordsSessionChange: ready.isEmpty) {
            case .ready(let prepared):
                ready.append(prepared)
            case .done(let report):
                reports[id] = report
            }
            // Signed out, another account or paused: nothing more is started.
            if case .halted? = reports[id] { break }
        }
        if case .halted? = reports.values.first(where: { if case .halted = $0 { true } else { false } }) {
            for prepared in ready { reports[prepared.state.id] = .skipped }
            return ids.map { ($0, reports[$0] ?? .skipped) }
        }
        let held = ready.map(\.state.id)
        let sent = await attempts.inFlight.holding(held) { () async -> [OperationID: ReplayAttempt.Report] in
            let startedAt = attempts.moment()
            // Every start is durable before the batch leaves; a row whose start fails stays out.
            let results = await attempts.room.appendEach(ready.map(\.started))
            var started: [ReplayAttempt.Prepared] = []
            var reports: [OperationID: ReplayAttempt.Report] = [:]
            for (prepared, result) in zip(ready, results) {
                if case .failure(let error) = result {
                    attempts.notStarted(prepared, error: error)
                    reports[prepared.state.id] = .skipped
                } else {
                    started.append(prepared)
                }
            }
            var pausePending = true
            for chunk in Self.chunks(started, maxBytes: batching.maxBytes) {
                let answers = await answer(chunk)
                reports.merge(await record(chunk, answers: answers, startedAt: startedAt, pausePending: &pausePending)) { $1 }
            }
            return reports
        }
        reports.merge(sent) { $1 }
        return ids.map { ($0, reports[$0] ?? .skipped) }
    }

    /// Splits rows into batches of at most `maxBytes` of payload, in order; a row larger than
    /// that goes alone.
    static func chunks(_ rows: [ReplayAttempt.Prepared], maxBytes: Int) -> [[ReplayAttempt.Prepared]] {
        var chunks: [[ReplayAttempt.Prepared]] = []
        var current: [ReplayAttempt.Prepared] = []
        var bytes = 0
        for row in rows {
            if !current.isEmpty, bytes + row.payload.count > maxBytes {
                chunks.append(current)
                current = []
                bytes = 0
            }
            current.append(row)
            bytes += row.payload.count
        }
        if !current.isEmpty { chunks.append(current) }
        return chunks
    }

    /// Sends one batch and answers what each of its rows got, splitting it on a 413.
    private func answer(_ chunk: [ReplayAttempt.Prepared]) async -> [OperationID: TransportResult] {
        let request = BatchRequest(operations: chunk.map(BatchOperation.init(prepared:)))
        let response: TransportResponse
        do {
            response = try await attempts.transport.send(TransportRequest(
                method: "POST", endpoint: batching.endpoint,
                headers: [OutboxHeader.contentType: "application/json"], body: try request.encoded()
            ))
        } catch {
            let failure = TransportRequest.Failure(error)
            return Dictionary(uniqueKeysWithValues: chunk.map { ($0.state.id, TransportResult.noResponse(failure)) })
        }
        // The envelope says how long the server keeps claims; its per-write answers may not.
        attempts.learnClaimRetention(from: response)
        if response.statusCode == 413, chunk.count > 1 {
            // Too large for the server: each half again, down to single rows if need be.
            let half = chunk.count / 2
            let first = await answer(Array(chunk[..<half]))
            return first.merging(await answer(Array(chunk[half...]))) { $1 }
        }
        guard response.statusCode == 200 else {
            // The batch as a whole was answered: every row gets that answer, as if sent alone.
            return Dictionary(uniqueKeysWithValues: chunk.map { ($0.state.id, TransportResult.response(response)) })
        }
        let decoded: BatchResponse
        do {
            decoded = try JSONDecoder().decode(BatchResponse.self, from: response.body)
        } catch {
            // Applied or not, nothing can be told of any row: each is replayed under its key.
            log.problem(.batchAnswerUnreadable, "a batch was answered 200 with a body that is not a batch answer; its rows count as unanswered",
                        error: error, operation: chunk.first?.state.id)
            return Dictionary(uniqueKeysWithValues: chunk.map { ($0.state.id, TransportResult.noResponse(.missingFromBatch)) })
        }
        var byID: [String: BatchResult] = [:]
        for result in decoded.results { byID[result.operationID] = result }
        return Dictionary(uniqueKeysWithValues: chunk.map { prepared in
            guard let result = byID[prepared.state.id.idempotencyKey] else {
                return (prepared.state.id, TransportResult.noResponse(.missingFromBatch))
            }
            return (prepared.state.id, TransportResult.response(
                TransportResponse(statusCode: result.status, headers: result.headers, body: result.body)
            ))
        })
    }

    /// Records every row's outcome, together so that they share commits; a 401 pauses the worker
    /// once for the whole batch.
    private func record(_ chunk: [ReplayAttempt.Prepared], answers: [OperationID: TransportResult], startedAt: DeviceMoment,
                        pausePending: inout Bool) async -> [OperationID: ReplayAttempt.Report] {
        var pauser: OperationID?
        if pausePending, let first = chunk.first(where: { answers[$0.state.id].map(Self.isUnauthorized) ?? false }) {
            pauser = first.state.id
            pausePending = false
        }
        let attempts = self.attempts
        return await withTaskGroup(of: (OperationID, ReplayAttempt.Report).self) { group in
            for prepared in chunk {
                let result = answers[prepared.state.id] ?? .noResponse(.missingFromBatch)
                let pauses = pauser == prepared.state.id
                group.addTask {
                    (prepared.state.id, await attempts.finish(prepared, result: result, startedAt: startedAt, pausesWorker: pauses))
                }
            }
            var reports: [OperationID: ReplayAttempt.Report] = [:]
            for await (id, report) in group { reports[id] = report }
            return reports
        }
    }

    private static func isUnauthorized(_ result: TransportResult) -> Bool {
        if case .response(let response) = result { return response.statusCode == 401 }
        return false
    }
}

extension BatchOperation {
    /// A prepared row as the batch carries it: what its single request would send.
    init(prepared: ReplayAttempt.Prepared) {
        let state = prepared.state
        self.init(
            operationID: state.id.idempotencyKey, idempotencyKey: state.id.idempotencyKey, businessID: state.businessID,
            operationType: state.operationType, method: state.method, endpoint: state.endpoint,
            payloadVersion: state.payloadVersion, baseRevision: state.revisionFrom == nil ? state.baseRevision : prepared.sentRevision,
            payload: prepared.payload
        )
    }
}
