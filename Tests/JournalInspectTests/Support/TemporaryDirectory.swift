import Foundation

/// A fresh directory under the system's temporary directory, removed when released.
final class TemporaryDirectory: Sendable {
    let url: URL

    init(_ label: String = "journal-inspect-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the directory (not created).
    func path(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
