public import Foundation

/// A fresh directory under the system's temporary directory, for one test: removed by `remove()`
/// or, at the latest, when the last reference to it goes.
public final class TemporaryDirectory: Sendable {
    public let url: URL

    /// - Parameter label: the directory name's start, so a leftover says which suite made it.
    public init(_ label: String = "outbox-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the directory (not created).
    public func path(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }

    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
