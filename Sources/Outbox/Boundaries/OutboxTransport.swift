public import Foundation

/// Sends one request to the server.
///
/// The engine gives it the stored method, endpoint and payload, byte for byte, with the
/// `Idempotency-Key` header set. Authorization is the transport's business, added at send
/// time: a queued row never holds credentials.
public protocol OutboxTransport: Sendable {
    /// Sends one request.
    /// - Returns: the server's response, whatever its status.
    /// - Throws: when no response arrived (offline, timeout, reset). `URLError`s are classified
    ///   by their code; any other error counts as a failure of class `other`.
    func send(_ request: TransportRequest) async throws -> TransportResponse
    /// Uploads one segment of an attachment to the object store (see the extension's default).
    func upload(_ segment: SegmentUpload) async throws -> TransportResponse
}

/// One segment of an attachment's file, to be PUT to a signed URL of the object store.
///
/// The URL is the credential: no authorization of the app's server goes with it.
public struct SegmentUpload: Sendable {
    /// Where the segment's bytes are.
    public enum Body: Sendable, Equatable {
        /// A span of the attachment's file in the journal's directory, at `offset`, of the
        /// segment's length: a transport may upload straight from it (an iOS background
        /// `URLSession` uploads from a file).
        case file(URL, offset: Int64)
        /// The segment's bytes, opened in memory from a file sealed at rest: no plaintext copy
        /// of it is written to the disk.
        case bytes(Data)
    }

    /// The signed URL, straight to the store.
    public var url: URL
    /// `Content-Length` is the transport's; these are the rest (none today).
    public var headers: [String: String]
    public var body: Body
    /// Where the segment starts in its attachment, and its length.
    public var offset: Int64
    public var length: Int64
    /// Told the number of the segment's bytes sent so far, as they go: what the member sees of
    /// the segment in flight ("uploading note.jpg, 3.1 of 8 MB") between two landed segments.
    /// A transport that cannot tell never calls it; calling it is cheap (no journal write).
    public var progress: @Sendable (_ bytesSent: Int64) -> Void

    public init(url: URL, headers: [String: String] = [:], body: Body, offset: Int64, length: Int64,
                progress: @escaping @Sendable (_ bytesSent: Int64) -> Void = { _ in }) {
        self.url = url
        self.headers = headers
        self.body = body
        self.offset = offset
        self.length = length
        self.progress = progress
    }

    /// The segment's bytes: for a transport that sends from memory.
    public func bytes() throws -> Data {
        switch body {
        case .bytes(let data):
            return data
        case .file(let file, let at):
            let handle = try FileHandle(forReadingFrom: file)
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(at))
            let data = try handle.read(upToCount: Int(length)) ?? Data()
            guard data.count == Int(length) else { throw CocoaError(.fileReadCorruptFile) }
            return data
        }
    }
}

extension OutboxTransport {
    /// Uploads one segment of an attachment to the object store (a `PUT` of its bytes to its
    /// signed URL) and answers the store's response, whose `ETag` names the segment.
    ///
    /// A transport that can upload from a file (an iOS background `URLSession`, which goes on
    /// while the app is suspended) implements it; the default refuses, so the attachments of an
    /// engine whose transport cannot upload wait, with their writes, and say so.
    /// - Throws: when no response arrived, as ``send(_:)``.
    public func upload(_ segment: SegmentUpload) async throws -> TransportResponse {
        throw URLError(.unsupportedURL)
    }
}
