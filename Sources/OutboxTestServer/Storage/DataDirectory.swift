package import Foundation

/// The directory LMDB storage lives in: an existing directory, or a missing one whose parent
/// exists (then it is created, that one level only). A regular file, or a path whose parents
/// are missing (a typo, most likely), is refused in words rather than created or dumped as a
/// system error.
package enum DataDirectory {
    /// Why `directory` cannot hold the storage, completing "--data-dir ..."; `nil` when it can.
    package static func problem(_ directory: URL) -> String? {
        let path = directory.path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            return isDirectory.boolValue ? nil : "'\(path)' is a file, not a directory: name a directory for the LMDB storage"
        }
        let parent = directory.deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory) else {
            return "'\(path)': its parent directory '\(parent)' does not exist; create it first, or name a directory inside an existing one"
        }
        guard isDirectory.boolValue else {
            return "'\(path)': its parent '\(parent)' is a file, not a directory"
        }
        return nil
    }
}

/// A storage directory the server cannot use (see `TestServer.Configuration.Storage.lmdb`).
public struct DataDirectoryError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
