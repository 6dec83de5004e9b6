import Foundation

/// Order statistics of a list of samples: median, percentiles by nearest rank, and the range.
struct Statistics: Sendable, Equatable {
    let sorted: [Double]

    init(_ samples: [Double]) {
        precondition(!samples.isEmpty, "statistics of no samples")
        sorted = samples.sorted()
    }

    var count: Int { sorted.count }
    var min: Double { sorted[0] }
    var max: Double { sorted[sorted.count - 1] }
    var median: Double { percentile(50) }
    var mean: Double { sorted.reduce(0, +) / Double(sorted.count) }

    /// The nearest-rank percentile: the smallest sample with at least `p`% of samples at or below it.
    func percentile(_ p: Double) -> Double {
        precondition(p > 0 && p <= 100, "percentile out of range")
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[Swift.max(rank, 1) - 1]
    }

    /// Half the range as a fraction of the median: `0.04` prints as ±4%.
    var spread: Double {
        guard median != 0 else { return 0 }
        return (max - min) / 2 / abs(median)
    }
}

/// Monotonic time in nanoseconds.
enum Stopwatch {
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Runs `body` and answers its duration in nanoseconds.
    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = now()
        try body()
        return Double(now() - start)
    }

    /// Runs `body` and answers its duration in nanoseconds.
    static func time(_ body: () async throws -> Void) async rethrows -> Double {
        let start = now()
        try await body()
        return Double(now() - start)
    }
}
