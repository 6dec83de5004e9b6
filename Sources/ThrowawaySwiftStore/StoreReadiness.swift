import Foundation

/// Waits until a starting store serves: every storage server answers its health check, then
/// the proxy gives a token and stores an object through all three.
struct StoreReadiness {
    let proxyURL: URL
    let storagePorts: [Int]

    /// A hang guard, never a timing: the store starts in seconds, but beside the other tests on
    /// two busy cores four Python servers may wait long for a core.
    static let limitSeconds = 300

    /// What the store answered, once ready.
    struct Ready {
        var token: String
        var storageURL: URL
    }

    /// Polls every 50 ms until the store is ready, one of its processes ended, or the guard ran
    /// out. Storage servers are asked first, so that the proxy never meets a server that is not
    /// listening yet.
    /// - Throws: ``ServerEnded`` when a process ended (the start is tried again on fresh ports);
    ///   ``TemporarySwiftStore/StartError`` when the store answered what it never should, or
    ///   the guard ran out.
    func wait(for processes: StoreProcesses) throws -> Ready {
        let deadline = ContinuousClock.now + .seconds(Self.limitSeconds)
        var healthy = 0
        var ready: Ready?
        var stored = false
        while true {
            if let ended = processes.firstEnded() { throw ServerEnded(description: ended) }
            do {
                while healthy < storagePorts.count, try answersHealthCheck(URL(string: "http://127.0.0.1:\(storagePorts[healthy])/healthcheck")!) {
                    healthy += 1
                }
                if healthy == storagePorts.count, try answersHealthCheck(proxyURL.appendingPathComponent("healthcheck")) {
                    if ready == nil { ready = try authenticate() }
                    if let ready, !stored { stored = try storeProbe(ready) }
                    if let ready, stored { return ready }
                }
            } catch let broken as TemporarySwiftStore.StartError {
                throw broken
            } catch {
                // No answer: not listening yet (refused), or a request LoopbackHTTP's guard ended.
            }
            guard ContinuousClock.now < deadline else {
                throw TemporarySwiftStore.StartError(description: "the test Swift store was not ready after \(Self.limitSeconds) s: \(processes.allLogs())")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    private func answersHealthCheck(_ url: URL) throws -> Bool {
        try LoopbackHTTP.send("GET", url).status == 200
    }

    /// tempauth's token and storage URL for the store's one user.
    private func authenticate() throws -> Ready {
        let user = "\(TemporarySwiftStore.accountName):\(TemporarySwiftStore.userName)"
        let answer = try LoopbackHTTP.send(
            "GET", proxyURL.appendingPathComponent("auth/v1.0"), headers: ["X-Auth-User": user, "X-Auth-Key": TemporarySwiftStore.password])
        guard answer.status == 200, let token = answer.header("X-Auth-Token"),
              let storage = answer.header("X-Storage-Url").flatMap(URL.init(string:)) else {
            throw TemporarySwiftStore.StartError(description: "tempauth answered \(answer.status) to \(user), with no token or storage URL")
        }
        return Ready(token: token, storageURL: storage)
    }

    /// Stores one object: the account, container and object servers all answered. A 5xx is
    /// asked again (a server still busy starting); any other refusal is a broken store.
    private func storeProbe(_ ready: Ready) throws -> Bool {
        let container = ready.storageURL.appendingPathComponent("outbox-ready")
        for (url, body) in [(container, Data()), (container.appendingPathComponent("probe"), Data("ready".utf8))] {
            let answer = try LoopbackHTTP.send("PUT", url, headers: ["X-Auth-Token": ready.token], body: body)
            if answer.status >= 500 { return false }
            guard answer.status == 201 || answer.status == 202 else {
                throw TemporarySwiftStore.StartError(description: "PUT \(url.path) was answered \(answer.status) while the store started")
            }
        }
        return true
    }
}
