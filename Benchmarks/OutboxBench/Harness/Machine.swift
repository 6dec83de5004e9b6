import CSQLite
import Foundation
import OutboxStorage

/// What the numbers were measured on.
struct Machine: Sendable, Codable {
    var cpu: String
    var cores: Int
    /// The filesystem of the directory the journals were written to, e.g. `ext4`.
    var filesystem: String
    var directory: String
    /// The 1-minute load average from `/proc/loadavg` when the run started and when it ended.
    var loadAverageAtStart: Double?
    var loadAverageAtEnd: Double?
    var sqliteVersion: String
    var lmdbVersion: String

    static func describe(directory: URL) -> Machine {
        Machine(
            cpu: cpuModel(),
            cores: ProcessInfo.processInfo.activeProcessorCount,
            filesystem: filesystem(of: directory.path),
            directory: directory.path,
            loadAverageAtStart: loadAverage(),
            loadAverageAtEnd: nil,
            sqliteVersion: String(cString: sqlite3_libversion()),
            lmdbVersion: LMDBEnvironment.libraryVersion
        )
    }

    static func loadAverage() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Double($0) }
    }

    private static func cpuModel() -> String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown" }
        let line = text.split(separator: "\n").first { $0.hasPrefix("model name") }
        return line.flatMap { $0.split(separator: ":", maxSplits: 1).last }.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
    }

    /// The type of the filesystem holding `path`, from the longest matching mount point in
    /// `/proc/mounts`.
    static func filesystem(of path: String) -> String {
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return "unknown" }
        var best: (mountPoint: String, type: String) = ("", "unknown")
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let mountPoint = String(fields[1])
            let within = mountPoint == "/" || resolved == mountPoint || resolved.hasPrefix(mountPoint + "/")
            if within, mountPoint.count >= best.mountPoint.count { best = (mountPoint, String(fields[2])) }
        }
        return best.type
    }
}
