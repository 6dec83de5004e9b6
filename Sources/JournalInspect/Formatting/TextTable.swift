/// Aligned columns: each as wide as its widest cell, two spaces apart, no trailing spaces.
/// Widths are measured before colour is added, so escapes never break the alignment.
package struct TextTable: Sendable {
    package struct Cell: Sendable, ExpressibleByStringLiteral {
        package var text: String
        package var color: Style.Color?

        package init(_ text: String, _ color: Style.Color? = nil) {
            self.text = text
            self.color = color
        }

        package init(stringLiteral value: String) {
            self.init(value)
        }
    }

    package var headers: [String]
    /// Columns whose cells align right (counts).
    package var rightAligned: Set<Int>
    package var rows: [[Cell]] = []
    /// Lines printed under a row, across the columns after the first: `notes[i]` under row `i`.
    package var notes: [Int: [Cell]] = [:]

    package init(headers: [String], rightAligned: Set<Int> = []) {
        self.headers = headers
        self.rightAligned = rightAligned
    }

    package mutating func add(_ cells: [Cell]) {
        rows.append(cells)
    }

    /// A line under the last row added: `note: <text>`, from the second column on, widths
    /// untouched.
    package mutating func addNote(_ text: String, _ color: Style.Color? = nil) {
        guard !rows.isEmpty else { return }
        notes[rows.count - 1, default: []].append(Cell(text, color))
    }

    package func render(_ style: Style) -> String {
        let columns = headers.count
        var widths = headers.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() where column < columns {
                widths[column] = max(widths[column], cell.text.count)
            }
        }
        func line(_ cells: [Cell]) -> String {
            var text = ""
            for column in 0..<columns {
                let cell = column < cells.count ? cells[column] : Cell("")
                let padding = String(repeating: " ", count: widths[column] - cell.text.count)
                let isLast = column == columns - 1
                if column > 0 { text += "  " }
                if rightAligned.contains(column) {
                    text += padding + style.paint(cell.text, cell.color)
                } else {
                    text += style.paint(cell.text, cell.color) + (isLast ? "" : padding)
                }
            }
            while text.hasSuffix(" ") { text.removeLast() }
            return text
        }
        var output = line(headers.map { Cell($0, .bold) }) + "\n"
        let indent = String(repeating: " ", count: (widths.first ?? 0) + 2)
        for (index, row) in rows.enumerated() {
            output += line(row) + "\n"
            for note in notes[index] ?? [] { output += indent + style.paint("note: " + note.text, note.color) + "\n" }
        }
        return output
    }
}

/// Label-value lines, the labels padded to one width.
package struct FieldList: Sendable {
    package var fields: [(label: String, value: String)] = []

    package init() {}

    package mutating func add(_ label: String, _ value: String) {
        fields.append((label, value))
    }

    package func render(_ style: Style) -> String {
        let width = fields.map(\.label.count).max() ?? 0
        return fields.map { field in
            style.paint(field.label, .bold) + String(repeating: " ", count: width - field.label.count + 2) + field.value
        }.joined(separator: "\n") + "\n"
    }
}

/// Comma-separated values (RFC 4180): a field holding a comma, a quote or a line break is quoted,
/// its quotes doubled.
package enum CSV {
    package static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    package static func line(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }
}
