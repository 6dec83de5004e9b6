import Foundation
import OutboxTestServer

extension ServerCommandLine {
    /// The upload endpoints' options, gathered as they come, checked as a whole at the end.
    struct UploadOptions {
        static let names: Set<String> = [
            "--swift-storage-url", "--swift-auth-token", "--swift-temp-url-key", "--swift-container", "--segment-bytes",
            "--grant-lifetime", "--max-upload-bytes",
        ]

        var storageURL: URL?
        var authToken: String?
        var tempURLKey: String?
        var container: String?
        var segmentBytes: Int64?
        var grantLifetime: Double?
        var maxUploadBytes: Int64?

        /// Takes `option`'s value; `false` for an option that is not one of these.
        mutating func take(_ option: String, _ value: String) throws(UsageError) -> Bool {
            switch option {
            case "--swift-storage-url":
                guard let url = URL(string: value), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil,
                    url.query == nil
                else {
                    throw UsageError(message: "\(option) expects the account's storage URL, like http://127.0.0.1:8080/v1/AUTH_test, not '\(value)'")
                }
                storageURL = url
            case "--swift-auth-token":
                authToken = try Self.secret(option, value)
            case "--swift-temp-url-key":
                tempURLKey = try Self.secret(option, value)
            case "--swift-container":
                if let problem = UploadStore.containerProblem(value) { throw UsageError(message: "\(option): \(problem)") }
                container = value
            case "--segment-bytes":
                segmentBytes = Int64(try ServerCommandLine.wholeNumber(option, value, in: Bounds.segmentBytes))
            case "--grant-lifetime":
                grantLifetime = try ServerCommandLine.positiveNumber(option, value, atMost: Bounds.maxGrantLifetimeSeconds, unit: "seconds")
            case "--max-upload-bytes":
                maxUploadBytes = Int64(try ServerCommandLine.wholeNumber(option, value, in: Bounds.maxUploadBytes))
            default:
                return false
            }
            return true
        }

        /// The object store the options name; `nil` when none of them was given.
        func store() throws(UsageError) -> UploadStore? {
            let given = storageURL != nil || authToken != nil || tempURLKey != nil || container != nil || segmentBytes != nil
                || grantLifetime != nil || maxUploadBytes != nil
            guard given else { return nil }
            guard let storageURL, let authToken, let tempURLKey, let container else {
                let missing = [("--swift-storage-url", storageURL == nil), ("--swift-auth-token", authToken == nil),
                               ("--swift-temp-url-key", tempURLKey == nil), ("--swift-container", container == nil)]
                    .filter(\.1).map(\.0).joined(separator: ", ")
                throw UsageError(message: "the upload endpoints need \(missing) as well")
            }
            let defaults = UploadStore(storageURL: storageURL, authToken: authToken, tempURLKey: tempURLKey, container: container)
            return UploadStore(
                storageURL: storageURL, authToken: authToken, tempURLKey: tempURLKey, container: container,
                segmentBytes: segmentBytes ?? defaults.segmentBytes, grantLifetimeSeconds: grantLifetime ?? defaults.grantLifetimeSeconds,
                maxObjectBytes: maxUploadBytes ?? defaults.maxObjectBytes)
        }

        /// A secret comes from the environment only (`env:VARIABLE`): a command line is readable
        /// by other users of the machine.
        private static func secret(_ option: String, _ value: String) throws(UsageError) -> String {
            guard value.hasPrefix("env:"), value.count > 4 else {
                throw UsageError(message: "\(option) takes env:VARIABLE, the environment variable that holds it: a secret is never given on a command line")
            }
            let name = String(value.dropFirst(4))
            guard let secret = ProcessInfo.processInfo.environment[name], !secret.isEmpty else {
                throw UsageError(message: "\(option) \(value): the environment variable \(name) is not set")
            }
            return secret
        }
    }
}

extension ServerCommandLine.Bounds {
    /// A segment is at least a byte and at most Swift's largest object, 5 GiB.
    public static let segmentBytes: ClosedRange<Int> = 1...(5 << 30)
    /// A grant lasts at most a week.
    public static let maxGrantLifetimeSeconds: Double = 604_800
    /// Up to 1 TiB per file.
    public static let maxUploadBytes: ClosedRange<Int> = 0...(1 << 40)
}
