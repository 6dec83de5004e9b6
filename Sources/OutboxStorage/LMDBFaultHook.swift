/// The LMDB calls a fault hook can fail on purpose.
package enum LMDBCall: String, Sendable, CaseIterable {
    case beginTransaction
    case put
    case delete
    case commit
    /// The commit of ``LMDBEnvironment/write(flushing:_:)`` with `flushing: false` in an
    /// environment that flushes every other commit: asked instead of ``commit``.
    case commitWithoutFlush
    case sync
}

/// A test seam in the one place LMDB return codes are checked.
///
/// Before each call of ``LMDBCall`` the environment asks the hook; a returned error is raised
/// as if LMDB had returned it, with LMDB's own cleanup (a forced commit failure aborts the
/// transaction, as a real one frees it). Used to prove that a full map, a full reader table or an
/// I/O error never loses acknowledged data.
///
/// `package`, as ``LMDBEnvironment/Options/faultHook`` is: a seam for this package's tests, never
/// part of a product (`LMDBClaimStore` carries this module, so a public hook would ship to servers).
package struct LMDBFaultHook: Sendable {
    let decide: @Sendable (LMDBCall) -> LMDBError?

    /// - Parameter decide: called before every hooked call; return an error to force it.
    package init(_ decide: @escaping @Sendable (LMDBCall) -> LMDBError?) {
        self.decide = decide
    }
}
