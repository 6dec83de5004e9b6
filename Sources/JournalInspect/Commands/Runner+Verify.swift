import Foundation
package import Outbox
package import OutboxAudit

/// `verify`: exit 1 on any finding.
extension Runner {
    func verify() throws -> ExitCode {
        let report = try reader.verify()
        if json {
            write(try encodeJSON(VerifyDocument(report)))
        } else {
            write(VerifyText.render(report, style: style))
        }
        guard !report.isClean else { return .success }
        // The findings are the output; standard error says why the exit status is 1.
        let count = report.findings.count
        context.standardError.write("journal-inspect: verify found \(count) problem\(count == 1 ? "" : "s") in \(journalArgument)\n")
        return .findings
    }
}

/// Findings as aligned rows, then a count.
package enum VerifyText {
    package static func render(_ report: VerificationReport, style: Style) -> String {
        let files = report.attachmentFilesChecked
        let checked = "\(report.recordsChecked) record\(report.recordsChecked == 1 ? "" : "s") and "
            + "\(report.operationsChecked) operation\(report.operationsChecked == 1 ? "" : "s") checked"
            + (files == 0 ? "" : ", and \(files) attachment file\(files == 1 ? "" : "s") hashed")
        let projections = report.projectionsCompared
            ? "the stored projections were compared with a rebuild from the events"
            : "the projections were not compared: \(report.projectionsNote ?? "no rebuild was possible")"
        guard !report.isClean else {
            return style.paint("No findings:", .green) + " \(checked); every checksum and invariant holds, and \(projections)"
                + (report.projectionsCompared ? ": they are equal." : ".") + "\n"
        }
        var table = TextTable(headers: ["FINDING", "SEQ", "OPERATION", "DETAIL"], rightAligned: [1])
        for finding in report.findings {
            table.add([
                TextTable.Cell(finding.kind.rawValue, .red),
                TextTable.Cell(finding.seq.map { "\($0)" } ?? "-"),
                TextTable.Cell(finding.operationID.map(EventText.shortID) ?? "-"),
                TextTable.Cell(finding.message),
            ])
        }
        let count = report.findings.count
        return table.render(style) + "\n"
            + style.paint("\(count) finding\(count == 1 ? "" : "s"):", .boldRed) + " \(checked); \(projections).\n"
    }
}
