import Foundation
import Outbox
import OutboxAudit

/// The fixture journals of journal format 1 (`Tests/Fixtures/format1-*`), written by the engine
/// before events carried the device's uptime and compactions kept who and what a write was.
/// Their first three writes were compacted, keeping their ledger rows only. The tool reads a
/// copy: the fixtures themselves are never opened.
enum FormatOneJournal: String, CaseIterable, Sendable {
    case plain = "format1-layout3-plain"
    case encrypted = "format1-layout3-encrypted"

    private struct Manifest: Decodable {
        struct Operation: Decodable {
            var id: OperationID
            var method: String
        }

        var encryptionKeyHex: String?
        var operations: [Operation]
    }

    static var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures")
    }

    private var fixture: URL { Self.fixtures.appendingPathComponent(rawValue) }

    private func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: fixture.appendingPathComponent("manifest.json")))
    }

    /// Copies the journal into `directory` (its `data.mdb` only, as a ticket would attach it).
    func copy(into directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: fixture.appendingPathComponent("data.mdb"), to: directory.appendingPathComponent("data.mdb"))
    }

    /// The writes compacted by the engine of format 1: the manifest knows no method of them.
    func compacted() throws -> [OperationID] {
        try manifest().operations.filter { $0.method.isEmpty }.map(\.id)
    }

    /// The writes whose events are all in the journal, in the manifest's order.
    func live() throws -> [OperationID] {
        try manifest().operations.filter { !$0.method.isEmpty }.map(\.id)
    }

    /// The key of the encrypted one, as 64 hex digits.
    func keyHex() throws -> String? {
        try manifest().encryptionKeyHex
    }
}
