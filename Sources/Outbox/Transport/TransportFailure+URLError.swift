import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OutboxCore

extension TransportRequest.Failure {
    /// The class of a transport's error: `URLError`s by their code, cancellation as such,
    /// anything else as `other`.
    init(_ error: any Error) {
        if error is CancellationError {
            self = .cancelled
            return
        }
        guard let urlError = error as? URLError else {
            self = .other
            return
        }
        switch urlError.code {
        case .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff, .callIsActive:
            self = .offline
        case .timedOut:
            self = .timedOut
        case .networkConnectionLost, .badServerResponse:
            // An empty reply (the server closed the connection without answering) comes as
            // badServerResponse on Linux, as networkConnectionLost on Apple platforms.
            self = .connectionLost
        case .cannotConnectToHost:
            self = .cannotConnect
        case .cannotFindHost, .dnsLookupFailed:
            self = .hostNotFound
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
            .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
            .clientCertificateRequired:
            self = .secureConnectionFailed
        case .cancelled:
            self = .cancelled
        default:
            self = .other
        }
    }
}
