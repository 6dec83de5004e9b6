import CLMDB

/// The one place where LMDB return codes become Swift errors.
///
/// Every `mdb_*` call of this module goes through ``check(_:_:)``: success returns, a misuse
/// code traps with the call named, anything else throws ``LMDBError``. `MDB_NOTFOUND` is not
/// an error at this layer: the callers that can meet it ask for it explicitly.
enum LMDB {
    /// Turns a return code into success, a thrown ``LMDBError``, or a trap for misuse.
    @inline(__always)
    static func check(_ rc: Int32, _ call: StaticString) throws(LMDBError) {
        if rc == MDB_SUCCESS { return }
        let error = LMDBError(rawValue: rc)
        // Misuse is a bug in this module, never a condition of the disk: stop at once.
        precondition(!error.isProgrammerError, "\(call) misused LMDB: \(error)")
        throw error
    }

    /// Like ``check(_:_:)`` but answers `false` for `MDB_NOTFOUND`.
    @inline(__always)
    static func found(_ rc: Int32, _ call: StaticString) throws(LMDBError) -> Bool {
        if rc == MDB_NOTFOUND { return false }
        try check(rc, call)
        return true
    }

    /// Asks the fault hook, if any, whether this call should fail.
    @inline(__always)
    static func injected(_ hook: LMDBFaultHook?, _ call: LMDBCall) throws(LMDBError) {
        if let hook, let error = hook.decide(call) { throw error }
    }

    /// The linked library's version, e.g. "LMDB 0.9.24: (July 24, 2019)".
    static var version: String {
        guard let text = mdb_version(nil, nil, nil) else { return "LMDB" }
        return String(cString: text)
    }
}
