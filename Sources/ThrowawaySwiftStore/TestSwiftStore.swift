import Foundation

/// The object store the tests use: one ``TemporarySwiftStore`` per test process, started by the
/// first test that asks and stopped when the process ends, its account's TempURL key set to
/// ``tempURLKey``.
///
/// Each test works in a container of its own (``freshContainer(_:)``), so tests run in parallel
/// without seeing each other's objects.
///
/// ```swift
/// let store = try TestSwiftStore.shared()
/// let container = try TestSwiftStore.freshContainer("photos")
/// let path = store.objectPath(container: container, object: "p-1")
/// ```
public enum TestSwiftStore {
    /// The account's `X-Account-Meta-Temp-URL-Key` in the shared store. No test changes it.
    public static let tempURLKey = "outbox-test-temp-url-key"

    /// Started on first use, once per process, whatever the number of suites.
    private static let store: Result<TemporarySwiftStore, any Error> = Result {
        let store = try TemporarySwiftStore.start()
        try store.setTempURLKey(tempURLKey)
        return store
    }

    /// The shared store, started on the first call.
    /// - Throws: ``TemporarySwiftStore/StartError`` when it could not start (every call throws
    ///   the same).
    public static func shared() throws -> TemporarySwiftStore {
        try store.get()
    }

    /// Creates a new, empty container in the shared store for one test and answers its name.
    /// - Parameter label: a readable prefix for the name (letters, digits, `-`).
    public static func freshContainer(_ label: String = "test") throws -> String {
        let safe = String(label.lowercased().unicodeScalars.filter { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }.prefix(40))
        let name = "\(safe.isEmpty ? "test" : safe)-\(UUID().uuidString.prefix(8).lowercased())"
        try shared().createContainer(name)
        return name
    }
}
