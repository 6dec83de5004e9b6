package import Foundation

/// The `Retry-After` header (RFC 9110 §10.2.3): a number of seconds, or an HTTP date.
package enum RetryAfter {
    /// The moment the header names, read at `now`; `nil` when it names none.
    ///
    /// ```swift
    /// RetryAfter.moment("120", now: now)                            // now + 120 s
    /// RetryAfter.moment("Wed, 21 Oct 2026 07:28:00 GMT", now: now)  // that moment
    /// ```
    package static func moment(_ value: String, now: Date) -> Date? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = UInt32(text) { return now.addingTimeInterval(Double(seconds)) }
        for format in httpDateFormats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// IMF-fixdate, then the two obsolete forms a recipient must still accept.
    private static let httpDateFormats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz",
        "EEEE, dd-MMM-yy HH:mm:ss zzz",
        "EEE MMM d HH:mm:ss yyyy",
    ]
}
