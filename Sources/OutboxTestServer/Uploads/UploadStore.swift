public import Foundation

/// The OpenStack Swift account and container behind the server's upload endpoints
/// (`POST /uploads`, `POST /uploads/<id>/complete`; Docs/wire-attachments.md).
///
/// A grant hands out one TempURL per segment object (`PUT`, HMAC-SHA256 under ``tempURLKey``);
/// a completion checks each segment with the server's ``authToken``, writes a Static Large Object
/// manifest, and reads the object back to hash it. The token and the key never leave the server.
///
/// ```swift
/// var configuration = TestServer.Configuration(storage: .lmdb(directory: dataDirectory))
/// configuration.uploads = UploadStore(
///     storageURL: store.storageURL, authToken: store.authToken, tempURLKey: "secret", container: "photos",
///     segmentBytes: 256 << 10)
/// ```
public struct UploadStore: Sendable {
    /// The account's storage URL, as the store's auth answers it: `http://127.0.0.1:8080/v1/AUTH_test`.
    public var storageURL: URL
    /// A token of the account (`X-Auth-Token`): the completion's `HEAD`s, manifest and read.
    public var authToken: String
    /// The account's `X-Account-Meta-Temp-URL-Key`: every segment URL is signed with it.
    public var tempURLKey: String
    /// The container the objects go in; it must exist. Letters, digits, `.`, `_` and `-`.
    public var container: String
    /// The size of every segment but the last, in bytes: the same for every grant, so segments
    /// landed under an earlier grant stay the same objects.
    public var segmentBytes: Int64
    /// How long a grant's URLs last, in seconds, as `expires_in` states it; changed at run time
    /// with `POST /_control/uploads`.
    public var grantLifetimeSeconds: Double
    /// The largest file granted: a grant request for more is answered 413.
    public var maxObjectBytes: Int64
    /// How long one request to the store may take: a hang guard.
    public var requestTimeoutSeconds: TimeInterval

    public init(
        storageURL: URL, authToken: String, tempURLKey: String, container: String, segmentBytes: Int64 = 8 << 20,
        grantLifetimeSeconds: Double = 900, maxObjectBytes: Int64 = 256 << 20, requestTimeoutSeconds: TimeInterval = 120
    ) {
        precondition(segmentBytes > 0, "segmentBytes must be positive")
        precondition(grantLifetimeSeconds > 0 && grantLifetimeSeconds.isFinite, "grantLifetimeSeconds must be positive")
        precondition(maxObjectBytes >= 0, "maxObjectBytes must be zero or more")
        precondition(Self.containerProblem(container) == nil, "container: \(Self.containerProblem(container) ?? "")")
        self.storageURL = storageURL
        self.authToken = authToken
        self.tempURLKey = tempURLKey
        self.container = container
        self.segmentBytes = segmentBytes
        self.grantLifetimeSeconds = grantLifetimeSeconds
        self.maxObjectBytes = maxObjectBytes
        self.requestTimeoutSeconds = requestTimeoutSeconds
    }

    /// What is wrong with a container's name for this server, or `nil`: it is written into
    /// signed paths and manifests as it is, so only letters, digits, `.`, `_` and `-`.
    public static func containerProblem(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 256 else { return "a container's name is 1 to 256 characters" }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".utf8)
        guard name.utf8.allSatisfy(allowed.contains), name != ".", name != ".." else {
            return "'\(name)' holds more than letters, digits, '.', '_' and '-'"
        }
        return nil
    }

    /// The object of an attachment's segment `number`, under the attachment's id and whatever
    /// the grant: `<id>/segments/<number>`.
    static func segmentObject(_ id: String, _ number: Int) -> String {
        "\(id)/segments/\(number)"
    }
}
