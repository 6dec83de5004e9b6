import Foundation

/// Moments as typed on the command line, read strictly.
///
/// Foundation's ISO-8601 parsing rolls an impossible date forward (`2027-02-29` becomes March
/// 1st, `T24:00` the next day) and accepts offsets no zone has: a support engineer asking for
/// February 29th of a common year would silently get the wrong day. So the digits are read here,
/// each field checked against its range, and the moment computed from the civil calendar.
enum MomentText {
    /// What a command-line moment reads as.
    enum Reading: Equatable {
        case moment(MomentSpec)
        /// Shaped like a date or time, but no such moment exists (or it has no zone): what
        /// follows the value in the message, saying why.
        case refused(String)
        /// Neither a date, a date and time, nor an age.
        case unrecognized
    }

    /// Reads `2027-01-15` (midnight UTC), `2027-01-15T08:00:00Z` (seconds optional, fractional
    /// seconds and an offset like `+01:00` accepted), or an age: `90s`, `45m` or `45min`, `3h`,
    /// `2d`, `1w`.
    /// - Parameter zoneGiven: `--tz` was given: a date, or a date and time without a zone, is a
    ///   wall-clock time read in that zone (without it, a date is midnight UTC and a time without
    ///   a zone is refused).
    static func read(_ text: String, zoneGiven: Bool = false) -> Reading {
        if let age = age(text) { return .moment(.ago(seconds: age)) }
        var scanner = DigitScanner(text)
        guard let year = scanner.number(digits: 4), scanner.take("-"),
            let month = scanner.number(digits: 2), scanner.take("-"),
            let day = scanner.number(digits: 2)
        else { return .unrecognized }
        guard (1...12).contains(month) else { return .refused("is not a date: there is no month \(month)") }
        guard year >= 1 else { return .refused("is not a date: there is no year 0") }
        let monthDays = daysIn(month: month, year: year)
        guard (1...monthDays).contains(day) else {
            return .refused("is not a date: \(monthNames[month - 1]) \(year) has \(monthDays) days, from 01 to \(monthDays)")
        }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        var seconds = Double(days) * 86_400
        if scanner.isAtEnd {
            return .moment(zoneGiven ? .wallClock(WallClockTime(day: days, seconds: 0)) : .absolute(Date(timeIntervalSince1970: seconds)))
        }

        guard scanner.take("T") || scanner.take("t"),
            let hour = scanner.number(digits: 2), scanner.take(":"),
            let minute = scanner.number(digits: 2)
        else { return .unrecognized }
        var second = 0
        var fraction = 0.0
        if scanner.take(":") {
            guard let whole = scanner.number(digits: 2) else { return .unrecognized }
            second = whole
            if scanner.take(".") {
                guard let digits = scanner.digits(), let value = Double("0." + digits) else { return .unrecognized }
                fraction = value
            }
        }
        guard hour <= 23 else { return .refused("is not a time: hours run from 00 to 23, not \(hour)") }
        guard minute <= 59 else { return .refused("is not a time: minutes run from 00 to 59, not \(minute)") }
        guard second <= 59 else { return .refused("is not a time: seconds run from 00 to 59, not \(second)") }
        seconds += Double(hour * 3600 + minute * 60 + second) + fraction

        if scanner.take("Z") || scanner.take("z") {
            guard scanner.isAtEnd else { return .unrecognized }
            return .moment(.absolute(Date(timeIntervalSince1970: seconds)))
        }
        if scanner.isAtEnd {
            if zoneGiven { return .moment(.wallClock(WallClockTime(day: days, seconds: seconds - Double(days) * 86_400))) }
            return .refused("has no zone: add Z for UTC, or an offset like +01:00, or give --tz to read it in a zone")
        }
        switch UTCOffset.read(scanner.rest) {
        case .seconds(let offset):
            return .moment(.absolute(Date(timeIntervalSince1970: seconds - Double(offset))))
        case .outOfRange:
            return .refused(UTCOffset.outOfRangeReason)
        case .unrecognized:
            return .unrecognized
        }
    }

    /// An age in seconds: a plain decimal number and a unit.
    private static func age(_ text: String) -> Double? {
        let units: [(suffix: String, seconds: Double)] = [
            ("min", 60), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800),
        ]
        for unit in units where text.hasSuffix(unit.suffix) {
            let number = text.dropLast(unit.suffix.count)
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                let count = Double(number), count.isFinite
            else { continue }
            return count * unit.seconds
        }
        return nil
    }

    private static let monthNames = [
        "January", "February", "March", "April", "May", "June",
        "July", "August", "September", "October", "November", "December",
    ]

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (the civil-from-days
    /// arithmetic: years counted from March, so the leap day ends each cycle's year).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// Reads fixed-width digit fields and separators from the front of a string.
private struct DigitScanner {
    private let characters: [Character]
    private var index = 0

    init(_ text: String) {
        characters = Array(text)
    }

    var isAtEnd: Bool { index == characters.count }

    /// Exactly `digits` ASCII digits, as a number.
    mutating func number(digits: Int) -> Int? {
        guard index + digits <= characters.count else { return nil }
        var value = 0
        for character in characters[index..<index + digits] {
            guard character.isASCII, let digit = character.wholeNumberValue else { return nil }
            value = value * 10 + digit
        }
        index += digits
        return value
    }

    /// One or more ASCII digits, as written.
    mutating func digits() -> String? {
        let start = index
        while index < characters.count, characters[index].isASCII, characters[index].isWholeNumber { index += 1 }
        return index > start ? String(characters[start..<index]) : nil
    }

    mutating func take(_ character: Character) -> Bool {
        guard index < characters.count, characters[index] == character else { return false }
        index += 1
        return true
    }

    /// What is left to read.
    var rest: Substring {
        Substring(String(characters[index...]))
    }
}
