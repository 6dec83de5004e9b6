/// An offset from UTC as ISO 8601 writes it in a moment's extended form: `+hh:mm` or `-hh:mm`,
/// hours 00 to 23 and minutes 00 to 59. The one rule for `--tz <offset>` and for the offset a
/// moment carries (`--since 2027-01-15T08:00+23:59`), so the two never disagree.
enum UTCOffset {
    enum Reading: Equatable {
        /// East of UTC is positive.
        case seconds(Int)
        /// Shaped like an offset, with hours past 23 or minutes past 59.
        case outOfRange
        /// Not shaped like an offset.
        case unrecognized
    }

    /// What follows the option and its value when an offset is out of range.
    static let outOfRangeReason = "has an offset no zone has: an offset runs from -23:59 to +23:59"

    static func read(_ text: Substring) -> Reading {
        let characters = Array(text)
        guard characters.count == 6, let sign = characters.first, sign == "+" || sign == "-", characters[3] == ":" else {
            return .unrecognized
        }
        let digits = [characters[1], characters[2], characters[4], characters[5]]
        guard digits.allSatisfy({ $0.isASCII && $0.isWholeNumber }) else { return .unrecognized }
        let values = digits.compactMap(\.wholeNumberValue)
        let hours = values[0] * 10 + values[1]
        let minutes = values[2] * 10 + values[3]
        guard hours <= 23, minutes <= 59 else { return .outOfRange }
        return .seconds((sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60))
    }
}
