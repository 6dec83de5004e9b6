import Foundation
import Outbox

// The README's Swift samples, each block word for word inside a function (indented once), so
// that they compile with the engine as it is: `ReadmeTests` checks every block of README.md is
// here, and runs the first hour's four.
enum ReadmeSamples {
    static func open(journalURL: URL, myTransport: any OutboxTransport) throws -> Outbox {
        let outbox = try Outbox(
            directory: journalURL,                     // Application Support, one directory per account
            transport: myTransport,                    // URLSessionTransport(baseURL:), or the app's own
            configuration: OutboxConfiguration(account: "member-42", operationPolicies: [
                "product.create": .idempotent,
                "product.update": .idempotent.coalescing(),
            ])
        )
        return outbox
    }

    static func write(_ outbox: Outbox) async throws -> (OperationID, RecordKey) {
        let key = RecordKey(business: "pharmacy-7", type: "product", id: "7d0c3a52")
        let product = Data(#"{"id":"7d0c3a52","name":"Antiseptic 500 ml","price":12.5}"#.utf8)
        let id = try await outbox.enqueue(OutboxRequest(
            businessID: "pharmacy-7", operationType: "product.create", endpoint: "/products", payload: product,
            category: "Products", entityLabel: "Antiseptic 500 ml", summary: "New product"
        ), changing: [.put(key, product)])            // "Saved on this device"
        return (id, key)
    }

    static func observe(_ outbox: Outbox, isOnline: Bool, show: (Data?, String) -> Void) async {
        for await page in outbox.observe(.records(RecordQuery(business: "pharmacy-7", type: "product"))) {
            for record in page.records {
                show(record.value, OutboxWords.english.recordState(record.sync, online: isOnline))
            }                                          // "waiting for internet", "sending...", "saved, revision 1"
        }
    }

    static func wakeAndDrain(_ outbox: Outbox, deadline: Date) async -> Outbox.DrainReport {
        outbox.wake(.appLaunch)                        // also .connectivityRegained, .foreground, .clockChanged
        let report = await outbox.drain(until: deadline) // in a background task; report.nextWake for the next one
        return report
    }

    static func records(_ outbox: Outbox, key: RecordKey, priceEdit: OutboxRequest) async throws {
        var edit = priceEdit                           // PUT /products/7d0c3a52
        edit.revisionFrom = key                        // If-Match: the record's server revision when sent
        try await outbox.enqueue(edit, changing: [.put(key, Data(#"{"name":"Antiseptic 500 ml","price":13.5}"#.utf8))])

        let product = try outbox.record(key)           // .value: the member's 13.50, "waiting for internet"
        product?.server                                // what the server last confirmed: value, revision
        product?.sync                                  // pending, confirmed, conflict, rolled back (with the server's reason)
        let page = try outbox.records(RecordQuery(business: "pharmacy-7", type: "product"))
        let why = try outbox.recordHistory(key)        // every event that made the value, and a verdict
        _ = (page, why)
    }

    static func damaged(journalURL: URL, myTransport: any OutboxTransport, configuration: OutboxConfiguration) throws {
        do {
            _ = try Outbox(directory: journalURL, transport: myTransport, configuration: configuration)
        }
        catch OutboxError.journalDamaged {
            let report = try Outbox.moveAsideDamagedJournal(at: journalURL)  // kept for support, never deleted
            // report.pendingOperations: what was waiting; the next Outbox(directory:) starts empty
        }
    }
}
