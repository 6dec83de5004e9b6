import Foundation
import Outbox
import OutboxAudit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `hold <journal-dir> <account>`: opens the journal as the engine and keeps it open, printing
/// "open <pid>", until a line arrives on standard input; then closes it and prints "closed".
func holdJournal(_ path: String, account: String) {
    do {
        let outbox = try Outbox(
            directory: URL(fileURLWithPath: path),
            transport: URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:9")!),
            configuration: OutboxConfiguration(account: account)
        )
        say("open \(getpid())")
        _ = readLine()
        outbox.close()
        say("closed")
    } catch {
        fail("\(error)")
    }
}

/// `fill-limited <journal-dir> <bytes>`: opens the journal as the engine, then limits the files
/// this process may write to `bytes` past the journal's current size (`RLIMIT_FSIZE`, with
/// `SIGXFSZ` ignored so a write past it fails with `EFBIG` instead of ending the process), and
/// enqueues until the engine refuses. Prints "refused <errno> after <n>", where errno is the
/// refusal's (or "none"), then "read <n>" counted back from the ledger: what was saved stays
/// readable.
func fillUnderFileSizeLimit(_ path: String, extraBytes: Int) async {
    do {
        let directory = URL(fileURLWithPath: path)
        let outbox = try Outbox(
            directory: directory,
            transport: URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:9")!),
            configuration: OutboxConfiguration(account: "crash-member", operationPolicies: productPolicies, initialJournalBytes: 64 << 10)
        )
        let size = (try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("data.mdb").path)[.size] as? Int) ?? 0
        signal(SIGXFSZ, SIG_IGN)
        var limit = rlimit(rlim_cur: rlim_t(size + extraBytes), rlim_max: rlim_t(size + extraBytes))
        #if canImport(Glibc)
        guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { fail("setrlimit: \(errno)") }
        #else
        guard setrlimit(RLIMIT_FSIZE, &limit) == 0 else { fail("setrlimit: \(errno)") }
        #endif
        var saved = 0
        var refusal = "none"
        while saved < 100_000 {
            do {
                _ = try await outbox.enqueue(product(saved))
                saved += 1
            } catch OutboxError.storageFull(_, let code) {
                refusal = code.map(String.init) ?? "limit"
                break
            }
        }
        say("refused \(refusal) after \(saved)")
        say("read \(try outbox.ledger().entries.count)")
        outbox.close()
    } catch {
        fail("\(error)")
    }
}
