import Foundation
import Testing
import ThrowawaySwiftStore

@Suite("Stopping the throwaway Swift store", .timeLimit(.minutes(10)))
struct StoppingTests {
    @Test func stopLeavesNoProcessAndNoDirectory() throws {
        let store = try TemporarySwiftStore.start()
        let directory = store.directory
        #expect(!processes(naming: directory).isEmpty, "the servers and their keeper name the directory")
        store.stop()
        #expect(processes(naming: directory).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory))
        store.stop()
    }

    /// The pids of the processes whose command line names `directory` (every server's names its
    /// configuration, memcached's its pid file, the keeper's the directory itself).
    private func processes(naming directory: String) -> [String] {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { $0.allSatisfy(\.isNumber) } ?? []
        return pids.filter { pid in
            guard let bytes = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: bytes.map { $0 == 0 ? 32 : $0 }, as: UTF8.self).contains(directory)
        }
    }
}
