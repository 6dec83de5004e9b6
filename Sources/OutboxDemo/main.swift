// outbox-demo: the engine's main job, end to end.
//
// For now it writes a fresh journal the way a pharmacy's phone would with no signal, and prints
// what the journal holds. Run: swift run outbox-demo [--journal <dir>]
import Foundation
import Outbox

struct NoNetwork: OutboxTransport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        throw URLError(.notConnectedToInternet)
    }
}

var arguments = CommandLine.arguments.dropFirst()
var journalURL = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-demo-\(UUID().uuidString)")
while let argument = arguments.popFirst() {
    switch argument {
    case "--journal":
        guard let path = arguments.popFirst() else {
            FileHandle.standardError.write(Data("outbox-demo: --journal needs a directory\n".utf8))
            exit(64)
        }
        journalURL = URL(fileURLWithPath: path)
    case "-h", "--help":
        print("usage: outbox-demo [--journal <dir>]")
        exit(0)
    default:
        FileHandle.standardError.write(Data("outbox-demo: unknown option \(argument)\n".utf8))
        exit(64)
    }
}

do {
    print("Outbox \(Outbox.engineVersion): journal at \(journalURL.path)")
    let outbox = try Outbox(directory: journalURL, transport: NoNetwork(), configuration: OutboxConfiguration(account: "folake"))
    let writes = [
        ("product.create", "/products", "Products", "Antiseptic 500 ml", "New product",
         #"{"id":"7d0c3a52-antiseptic","name":"Antiseptic 500 ml","price":12.5}"#),
        ("employee.create", "/employees", "Employees", "Chidi Okafor", "New employee",
         #"{"id":"b51e9f10-chidi","name":"Chidi Okafor","role":"cashier"}"#),
    ]
    for (type, endpoint, category, label, summary, payload) in writes {
        let id = try await outbox.enqueue(OutboxRequest(
            businessID: "folakes-pharmacy", operationType: type, endpoint: endpoint, payload: Data(payload.utf8),
            category: category, entityLabel: label, summary: summary))
        let row = try outbox.operation(id)
        print("  saved on this device, waiting for internet: \(label) (\(row?.status.rawValue ?? "?"), key \(id))")
    }
    let events = try outbox.events()
    print("journal: \(events.count) events, seq \(events.first?.seq ?? 0)...\(events.last?.seq ?? 0)")
    for event in events {
        print("  #\(event.seq) \(event.kind)\(event.operationID.map { " \($0)" } ?? "")")
    }
    outbox.close()
} catch {
    FileHandle.standardError.write(Data("outbox-demo: \(error)\n".utf8))
    exit(1)
}
