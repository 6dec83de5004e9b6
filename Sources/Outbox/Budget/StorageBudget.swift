/// The journal's storage budget as a pure policy: every number it keeps, and what a write must do
/// first, decided from what the journal measures.
///
/// `maxJournalBytes` is the budget of live data (pages in use, less those LMDB keeps free for
/// reuse). Past 80 % of it the engine compacts every settled operation; a reserve is kept for the
/// worker's own events, so that what is already queued can still drain when the journal is
/// otherwise full; a write that would reach into the reserve is refused before anything is
/// written. ``JournalRoom`` carries the decisions out; this type does no I/O.
struct StorageBudget: Sendable, Equatable {
    /// The most live data the journal may hold (``OutboxConfiguration/maxJournalBytes``).
    let budgetBytes: Int

    /// Room a write needs beside its payload: a record and the projections it changes take a few
    /// hundred bytes, so 2 KiB covers them with margin, and the check never lets a write past the
    /// budget by its bookkeeping.
    static let recordOverheadBytes = 2 << 10

    /// The reserve kept whatever the queue holds: room for the engine's own bookkeeping when every
    /// other byte is taken (a launch's `journalOpened`, a `sessionPaused`, the pages a compaction
    /// copies before it frees the rest).
    static let baseReserveBytes = 64 << 10

    /// The reserve added for each row not yet settled: room for several attempts' `attemptStarted`
    /// and `attemptFinished` each, so every waiting row can still be sent and its outcome recorded.
    static let reservePerUnsettledRowBytes = 2 << 10

    /// Compaction starts once live data reaches this many tenths of the budget (80 %): late
    /// enough that a journal well within its budget keeps every settled row's details for
    /// support, early enough that settled rows are gone before the reserve is reached.
    static let compactionThresholdTenths = 8

    /// With the pages written so far (which bound live data from above) under this share of the
    /// budget (one half), there is room without measuring anything more: reading the written
    /// size is free, measuring live data walks LMDB's free list.
    static let unmeasuredShareDivisor = 2

    /// The file's maximum is the budget and a quarter more (five quarters): the budget counts
    /// live data only, and LMDB's free pages, kept for reuse, need room past it.
    static let mapSizeQuarters = 5

    /// The largest the journal's file (LMDB's map) may grow.
    var mapSizeBytes: Int { budgetBytes / 4 * Self.mapSizeQuarters }

    /// Live data at or past this, a write first compacts every settled operation.
    var compactionThresholdBytes: Int { budgetBytes / 10 * Self.compactionThresholdTenths }

    /// The bytes kept back for the worker with `unsettledRows` rows not yet settled.
    func reserveBytes(unsettledRows: Int) -> Int {
        Self.baseReserveBytes + unsettledRows * Self.reservePerUnsettledRowBytes
    }

    /// What the journal shows before one write, as far as it has been measured.
    struct Reading: Sendable, Equatable {
        /// The payload the write carries.
        var payloadBytes: Int
        /// The pages written so far (up to the last one), `nil` when unknown.
        var usedBytes: Int?
        /// The live bytes, once measured (``Action/measure``).
        var liveBytes: Int?
        /// Rows not yet settled, once measured.
        var unsettledRows: Int?
        /// Whether settled rows were compacted for this write already (``Action/compactFirst``).
        var compacted = false
    }

    /// What to do next for one write.
    enum Action: Sendable, Equatable {
        /// There is room: write.
        case proceed
        /// Measure live bytes and unsettled rows, then ask again.
        case measure
        /// Compact every settled operation, measure live bytes again, then ask again.
        case compactFirst
        /// No room, and nothing more can be freed: refuse the write before anything is written.
        case refuse
    }

    /// The next step for a write, from what the journal shows.
    func action(for reading: Reading) -> Action {
        let needed = reading.payloadBytes + Self.recordOverheadBytes
        guard let live = reading.liveBytes, let unsettled = reading.unsettledRows else {
            if let used = reading.usedBytes, used + needed <= budgetBytes / Self.unmeasuredShareDivisor { return .proceed }
            return .measure
        }
        if !reading.compacted && live >= compactionThresholdBytes { return .compactFirst }
        return live + needed > budgetBytes - reserveBytes(unsettledRows: unsettled) ? .refuse : .proceed
    }

    /// The next step after the file itself was found full by a write (its free pages still held
    /// by readers, or the disk full): compact once and try again; after that the refusal stands.
    func actionAfterFullFile(compacted: Bool) -> Action {
        compacted ? .refuse : .compactFirst
    }
}
