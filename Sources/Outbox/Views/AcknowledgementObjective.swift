import Foundation

extension OutboxMetrics {
    /// The service objective of seed 004: the share of writes the server acknowledged (synced, or
    /// pending a person's approval) within an interval of connected age, the time a write waited
    /// while a route to the server was seen. A phone out of signal for a day misses nothing by it;
    /// a phone with signal whose writes wait does.
    ///
    /// The journal counts acknowledged writes by their connected age in fixed buckets
    /// (``boundsSeconds``), so the share for any interval among the bounds is exact, whatever
    /// interval the app configured when the writes were acknowledged.
    public struct AcknowledgementObjective: Sendable, Equatable, Codable {
        /// The interval, in seconds of connected age (``OutboxConfiguration/acknowledgementObjectiveSeconds``).
        public var intervalSeconds: Double
        /// Writes acknowledged whose connected age is known (made by an engine that keeps the
        /// connected clock; compacted ones leave the count).
        public var acknowledged: Int
        /// Of them, those acknowledged within the interval.
        public var withinInterval: Int
        /// Writes waiting now (queued or syncing) whose connected age is already past the interval:
        /// misses in the making.
        public var pendingPastInterval: Int

        /// `withinInterval / (acknowledged + pendingPastInterval)`; `nil` when both are zero.
        public var share: Double? {
            let total = acknowledged + pendingPastInterval
            return total == 0 ? nil : Double(withinInterval) / Double(total)
        }

        /// The interval an engine is configured with by default, and a reader reports at.
        public static let defaultIntervalSeconds: Double = 60

        /// Nothing acknowledged yet, at the default interval.
        package static let untracked = OutboxMetrics.AcknowledgementObjective(intervalSeconds: defaultIntervalSeconds, acknowledged: 0,
                                                                withinInterval: 0, pendingPastInterval: 0)

        /// The bucket bounds, in seconds: an interval must be one of them.
        public static let boundsSeconds: [Double] = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 14_400, 28_800, 86_400]

        /// One bucket per bound, and one past the last.
        static var bucketCount: Int { boundsSeconds.count + 1 }

        /// The bucket of a connected age: the first bound it does not exceed.
        static func bucket(of ageSeconds: Double) -> Int {
            boundsSeconds.firstIndex { ageSeconds <= $0 } ?? boundsSeconds.count
        }

        /// A bucket's name in `verify`'s counter names: its bound, or `more`.
        static func bucketName(_ bucket: Int) -> String {
            bucket < boundsSeconds.count ? "\(Int(boundsSeconds[bucket]))s" : "more"
        }
    }
}
