// swift-tools-version: 6.0
//
// Outbox: an embedded engine that sends offline writes exactly once and proves what happened
// to each of them. The targets show the architecture:
//
//   CLMDB, CSodium     system libraries (LMDB for the journal; libsodium on Linux: SHA-256, HMAC)
//   CLibPQ             the system libpq, for the PostgreSQL claim store only
//   CCRC32C            a few lines of C: CRC-32C with the processor's instruction, where it has one
//   OutboxStorage      the LMDB layer; the only module that imports CLMDB
//   OutboxCrypto       SHA-256 and HMAC-SHA256 (CryptoKit on Apple platforms, libsodium on Linux)
//   OutboxWire         what both halves share: wire headers, error codes, body fields, the batch
//                      protocol; the byte codec; the servers' If-Match and JSON merge patch
//   OutboxCore         pure: identifiers, requests, events, the record codec, the fold
//   Outbox             the public engine: the journal, its projections, the API
//   OutboxAudit        the support and audit side: JournalReader, the ledger, timelines, verification
//   OutboxTesting      test doubles apps can use too: a manual clock, a scripted transport
//   IdempotencyClaims  the server half: claims that make a replayed write apply once (links no database);
//                      its test clock, ManualClaimClock, is package access, shipped in no product
//   LMDBClaimStore     the claims in the server's LMDB environment, committed with its records
//                      (its product carries OutboxStorage, whose fault hook is package access)
//   PostgresClaimStore the claims on PostgreSQL, for backends of many processes (links libpq)
//   ThrowawayPostgres  a throwaway PostgreSQL cluster (or a given database) for tests and benchmarks
//   ThrowawaySwiftStore a throwaway OpenStack Swift object store for tests, and TempURL signing
//   OutboxTestServer   a loopback HTTP server with fault injection, in memory or LMDB (links no libpq)
//   OutboxTestServerPostgres the test server on PostgreSQL, and outbox-test-server's command line
//                      (which offers --postgres): apart, so OutboxTestServer alone links no libpq
//   JournalInspect     the support tool's logic (and journal-inspect, its thin executable)
//   OutboxSimulation   a seeded, deterministic simulation of the engine under faults
//   TestHarness        what the package's own tests share (never a product): a process launcher
//                      (posix_spawn, waitpid) and the children it drives, a seeded generator,
//                      temporary directories, a port that refuses
//
// The test machinery is named by role: OutboxTesting is what an app tests with (a product);
// TestHarness, ThrowawayPostgres and ThrowawaySwiftStore serve this package's tests and benchmarks
// alone.
//   outbox-bench       the benchmarks, against a mutable SQLite outbox and the disk's floor
//   OutboxDemo         the engine's main job, end to end (and outbox-demo, its executable)
//   outbox-test-child  a process the tests drive and kill: reads a live journal, is killed mid-write
import PackageDescription

let testSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Outbox",
    // Built and tested on Linux; macOS builds from the same sources. iOS and the other Apple
    // platforms ship no LMDB: see Docs/architecture.md, "Platforms".
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Outbox", targets: ["Outbox"]),
        // Support and audit: JournalReader, verification, the ledger, timelines, proofs.
        .library(name: "OutboxAudit", targets: ["OutboxAudit"]),
        .library(name: "OutboxTesting", targets: ["OutboxTesting"]),
        .library(name: "IdempotencyClaims", targets: ["IdempotencyClaims"]),
        // The LMDB claim store's initializer takes the server's LMDBEnvironment, and its
        // transaction lends the LMDBTransaction the server's own records commit in: the product
        // carries the LMDB layer so a server can name them. Its fault hook is package access.
        .library(name: "LMDBClaimStore", targets: ["LMDBClaimStore", "OutboxStorage"]),
        .library(name: "PostgresClaimStore", targets: ["PostgresClaimStore"]),
        .library(name: "OutboxTestServer", targets: ["OutboxTestServer"]),
        .library(name: "OutboxTestServerPostgres", targets: ["OutboxTestServerPostgres"]),
        .executable(name: "outbox-demo", targets: ["outbox-demo"]),
        .executable(name: "journal-inspect", targets: ["journal-inspect"]),
        .executable(name: "outbox-test-server", targets: ["outbox-test-server"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        .target(
            name: "OutboxStorage",
            dependencies: ["CLMDB"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "OutboxCrypto",
            dependencies: [.target(name: "CSodium", condition: .when(platforms: [.linux, .android]))],
            swiftSettings: strictSettings
        ),
        .target(
            name: "OutboxWire",
            dependencies: ["OutboxCrypto"],
            swiftSettings: strictSettings
        ),
        .target(name: "CCRC32C"),
        .target(
            name: "OutboxCore",
            dependencies: ["CCRC32C", "OutboxCrypto", "OutboxWire"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Outbox",
            dependencies: ["OutboxCore", "OutboxStorage", "OutboxCrypto", "OutboxWire"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "OutboxAudit",
            dependencies: ["Outbox", "OutboxCore", "OutboxStorage", "OutboxCrypto", "OutboxWire"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "OutboxTesting",
            dependencies: ["Outbox", "IdempotencyClaims", "OutboxWire"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "IdempotencyClaims",
            dependencies: ["OutboxCrypto", "OutboxWire"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "LMDBClaimStore",
            dependencies: ["IdempotencyClaims", "OutboxStorage"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PostgresClaimStore",
            dependencies: ["IdempotencyClaims", "OutboxCrypto", "CLibPQ"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ThrowawayPostgres",
            dependencies: ["PostgresClaimStore", "TestHarness"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ThrowawaySwiftStore",
            dependencies: ["OutboxCrypto", "TestHarness"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "OutboxTestServer",
            dependencies: ["IdempotencyClaims", "LMDBClaimStore", "OutboxStorage", "OutboxWire", "OutboxCrypto"],
            swiftSettings: strictSettings
        ),
        // PostgreSQL storage for the test server, and outbox-test-server's command line (which
        // offers it): apart, so that a server in memory or in LMDB links no libpq.
        .target(
            name: "OutboxTestServerPostgres",
            dependencies: ["OutboxTestServer", "PostgresClaimStore", "IdempotencyClaims", "OutboxWire"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "outbox-test-server",
            dependencies: ["OutboxTestServer", "OutboxTestServerPostgres"],
            path: "Sources/OutboxTestServerMain",
            swiftSettings: strictSettings
        ),
        .target(
            name: "JournalInspect",
            dependencies: ["Outbox", "OutboxAudit"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "journal-inspect",
            dependencies: ["JournalInspect"],
            path: "Sources/JournalInspectMain",
            swiftSettings: strictSettings
        ),
        .target(
            name: "TestHarness",
            dependencies: ["OutboxCore", "CTestProcess"],
            swiftSettings: strictSettings
        ),
        // A test or benchmark process ignores SIGPIPE from its first instruction (a C constructor:
        // Swift has none): see Sources/CTestProcess/test_process.c.
        .target(name: "CTestProcess"),
        .target(
            name: "OutboxSimulation",
            dependencies: ["TestHarness", "Outbox", "OutboxAudit", "OutboxTesting", "IdempotencyClaims", "OutboxWire"],
            swiftSettings: strictSettings
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "Benchmarks/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .executableTarget(
            name: "outbox-bench",
            dependencies: [
                "Outbox", "OutboxAudit", "OutboxCore", "OutboxStorage", "OutboxTesting", "TestHarness", "CSQLite",
                "IdempotencyClaims", "LMDBClaimStore", "PostgresClaimStore", "ThrowawayPostgres", "ThrowawaySwiftStore", "OutboxTestServer",
                "OutboxTestServerPostgres",
            ],
            path: "Benchmarks/OutboxBench",
            swiftSettings: strictSettings
        ),
        .target(
            name: "OutboxDemo",
            dependencies: ["Outbox", "OutboxAudit", "OutboxTestServer", "JournalInspect", "ThrowawaySwiftStore", "OutboxCrypto"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "outbox-demo",
            dependencies: ["OutboxDemo"],
            path: "Sources/OutboxDemoMain",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "outbox-test-child",
            dependencies: ["Outbox", "OutboxAudit", "OutboxStorage"],
            path: "Sources/OutboxTestChild",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "IdempotencyClaimsTests",
            dependencies: ["IdempotencyClaims", "LMDBClaimStore", "PostgresClaimStore", "ThrowawayPostgres", "OutboxStorage", "OutboxCrypto", "OutboxWire", "TestHarness"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OutboxTestServerTests",
            dependencies: [
                "OutboxTestServer", "OutboxTestServerPostgres", "IdempotencyClaims", "outbox-test-server",
                "Outbox", "OutboxAudit", "OutboxTesting", "PostgresClaimStore", "ThrowawayPostgres", "TestHarness", "OutboxWire",
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "JournalInspectTests",
            dependencies: ["JournalInspect", "Outbox", "OutboxAudit", "OutboxTesting", "OutboxStorage", "journal-inspect", "TestHarness"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OutboxSimulationTests",
            dependencies: ["OutboxSimulation", "Outbox", "OutboxAudit", "OutboxTesting", "TestHarness"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "Outbox", "OutboxAudit", "OutboxTesting", "OutboxTestServer", "outbox-test-child", "TestHarness", "ThrowawayPostgres",
                "ThrowawaySwiftStore", "OutboxCrypto", "outbox-test-server",
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OutboxDemoTests",
            dependencies: ["OutboxDemo", "Outbox"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OutboxStorageTests",
            dependencies: ["OutboxStorage", "TestHarness"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OutboxCoreTests",
            dependencies: ["OutboxCore", "OutboxCrypto", "OutboxWire", "TestHarness"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "TestHarnessTests",
            dependencies: ["TestHarness"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "ThrowawaySwiftStoreTests",
            dependencies: ["ThrowawaySwiftStore", "OutboxCrypto"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "ReadmeTests",
            dependencies: ["Outbox", "OutboxTesting"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "OutboxTests",
            dependencies: ["Outbox", "OutboxAudit", "OutboxTesting", "OutboxStorage", "outbox-test-child", "TestHarness", "OutboxWire"],
            swiftSettings: testSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
