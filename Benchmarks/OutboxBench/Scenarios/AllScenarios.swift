/// Every scenario, in the order; the floors first.
extension Scenario {
    static let all: [Scenario] = [
        .floors,
        .enqueueOneProducer(.full),
        .enqueueConcurrent(.full),
        .lifecycle(.full),
        .openLargeJournal,
        .rebuildProjections,
        .oneHistory,
        .syncTab,
        .diskBytes,
        .enqueueOneProducer(.processCrash),
        .enqueueConcurrent(.processCrash),
        .lifecycle(.processCrash),
        .claims,
        .batchedPushes,
        .memoryStoreCreates,
        .recordsEnqueue(.full),
        .recordsEnqueue(.processCrash),
        .recordsRead,
        .recordsQuery,
        .recordsStream,
        .pullInitialSync,
        .pullPageApplied,
        .pullResnapshot,
        .pullFeedRead,
    ]
}
