import TestHarness
import Testing

/// The size of a test's loop: quick by default, the soak size under `OUTBOX_SOAK=1`, the test's
/// own variable over both.
@Suite("A loop's size")
struct SoakTests {
    @Test(arguments: [
        ([:], 100),
        (["OUTBOX_SOAK": "1"], 1000),
        (["OUTBOX_SOAK": "0"], 100),
        (["OUTBOX_SOAK": "yes"], 100),
        (["OUTBOX_THINGS": "7"], 7),
        (["OUTBOX_THINGS": "7", "OUTBOX_SOAK": "1"], 7),
        (["OUTBOX_THINGS": "0"], 0),
        (["OUTBOX_THINGS": "many", "OUTBOX_SOAK": "1"], 1000),
        (["OUTBOX_THINGS": "-3"], 100),
    ] as [([String: String], Int)])
    func theSizeComesFromTheVariableElseTheUmbrellaElseQuick(_ environment: [String: String], _ expected: Int) {
        #expect(Soak.size("OUTBOX_THINGS", quick: 100, soak: 1000, in: environment) == expected)
    }
}
