import Foundation

/// Where a run's journals live: a fresh directory, on the working directory's disk unless `--dir`
/// says otherwise, removed at the end.
enum RunDirectory {
    /// Creates `outbox-bench.XXXXXX` under `parent`, or under the default parent.
    static func create(under parent: String?) throws -> URL {
        let base = parent.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? defaultParent()
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        var template = Array(base.appendingPathComponent("outbox-bench.XXXXXX").path.utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BenchmarkFailure(description: "cannot create a directory under \(base.path): errno \(errno)")
        }
        return URL(fileURLWithPath: String(cString: made), isDirectory: true)
    }

    /// The system's temporary directory when it is on the same device as the working directory and
    /// is not tmpfs (a floor measured in memory would mean nothing); otherwise the working directory.
    private static func defaultParent() -> URL {
        let working = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        let temporary = FileManager.default.temporaryDirectory
        var workingStatus = stat()
        var temporaryStatus = stat()
        guard stat(working.path, &workingStatus) == 0, stat(temporary.path, &temporaryStatus) == 0,
            workingStatus.st_dev == temporaryStatus.st_dev, Machine.filesystem(of: temporary.path) != "tmpfs"
        else { return working }
        return temporary
    }
}
