// What a failure of the storage layer or the file system means for the app: each mapped to
// the engine's error that says what to fix.

import Foundation
import OutboxCore
import OutboxStorage

extension OutboxError {
    /// Below this many free bytes, a file system that answers a write with `EIO` is taken to be
    /// out of room (some, tmpfs among them, report a full disk so).
    static let fullDiskThresholdBytes = 64 << 10

    /// The engine's error for a failure of the storage layer.
    ///
    /// Every answer that means "no room" becomes ``storageFull(limitBytes:errno:)``: the map at
    /// its maximum (no errno), `ENOSPC`, `EDQUOT`, `EFBIG`, and `EIO` when the file system at
    /// `path` then shows no space left, or when the journal's data file in `path` has reached the
    /// process's file-size limit (`EFBIG`: LMDB reports a write cut short at that limit as `EIO`).
    init(storage error: any Error, limitBytes: Int, path: String? = nil,
         availableBytes: (String) -> Int? = FileSystem.availableBytes(at:),
         atFileSizeLimit: (String) -> Bool = { FileSystem.isAtFileSizeLimit(($0 as NSString).appendingPathComponent(JournalStore.FileName.data)) }) {
        switch error {
        case let error as OutboxError:
            self = error
        case let error as LMDBError where error == .mapFull:
            self = .storageFull(limitBytes: limitBytes)
        case let error as LMDBError where error.isOutOfSpace:
            self = .storageFull(limitBytes: limitBytes, errno: error.rawValue)
        case let error as LMDBError
            where error == .io && path.flatMap(availableBytes).map { $0 < Self.fullDiskThresholdBytes } == true:
            self = .storageFull(limitBytes: limitBytes, errno: error.rawValue)
        case let error as LMDBError where error == .io && path.map(atFileSizeLimit) == true:
            self = .storageFull(limitBytes: limitBytes, errno: EFBIG)
        case let error as LMDBError where error == .accessDenied, let error as LMDBError where error == .readOnlyFileSystem:
            self = path.map { .permissionDenied(path: $0) } ?? .storage(code: error.rawValue, message: error.description)
        case let error as LMDBError where error == .closed:
            self = .closed
        case let error as LMDBCodecError where error.databaseName == "events":
            // A key of the events themselves that does not decode: the journal is damaged there.
            self = .journalDamaged(path: path ?? "", reason: "a record's key is damaged: \(error.reason)")
        case let error as LMDBCodecError:
            // Stored bytes of a projection that do not decode: the projection is damaged.
            self = .projectionCorrupt(reason: error.reason)
        case let error as LMDBError:
            self = .storage(code: error.rawValue, message: error.description)
        case let error as LMDBEnvironmentError:
            if case .alreadyOpen(let path) = error {
                self = .alreadyOpen(path: path)
            } else {
                self = .storage(code: 0, message: error.description)
            }
        default:
            self = .storage(code: 0, message: "\(error)")
        }
    }

    /// The engine's error for a failure of a file-system call made through Foundation.
    init(fileSystem error: any Error, path: String, options: JournalStore.Options) {
        let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError).flatMap { $0.domain == NSPOSIXErrorDomain ? Int32($0.code) : nil }
        if let code {
            self.init(storage: LMDBError(rawValue: code), limitBytes: options.limitBytes, path: path)
        } else if (error as NSError).domain == NSCocoaErrorDomain,
            [NSFileWriteNoPermissionError, NSFileReadNoPermissionError].contains((error as NSError).code)
        {
            self = .permissionDenied(path: path)
        } else if (error as NSError).domain == NSCocoaErrorDomain, (error as NSError).code == NSFileWriteOutOfSpaceError {
            self = .storageFull(limitBytes: options.limitBytes, errno: ENOSPC)
        } else {
            self = .storage(code: 0, message: "\(path): \(error.localizedDescription)")
        }
    }
}

extension OutboxError {
    /// Whether a read-only open failed for want of access (to the lock file, most often).
    var isAccessProblem: Bool {
        if case .permissionDenied = self { return true }
        return false
    }
}

extension OutboxError {
    /// Whether this is a storage error saying the journal's file is damaged in its structure
    /// (``LMDBError/isStructuralDamage``): for the support tool, which names it so without
    /// speaking LMDB.
    package var isStructuralDamage: Bool {
        guard case .storage(let code, _) = self else { return false }
        return LMDBError(rawValue: code).isStructuralDamage
    }

    /// The storage layer's name for a code of ``storage(code:message:)``: `MDB_CORRUPTED`, ...
    package static func storageCodeName(_ code: Int32) -> String {
        "\(LMDBError(rawValue: code))"
    }
}

/// What a path that is not a regular file is, in words ("a FIFO", "a directory"), as the
/// journal's own checks say it (``FileSystem/fileKind(_:)``): for the support tool's messages
/// about paths it is given, which link no storage layer of their own.
package func describeFileKind(mode: UInt32) -> String {
    FileSystem.fileKind(mode)
}
