// outbox-test-server: starts a TestServer, prints its port, serves until SIGINT or SIGTERM.
import Dispatch
import Foundation
import OutboxTestServer
import OutboxTestServerPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let configuration: TestServer.Configuration
switch ServerCommandLine.parse(Array(CommandLine.arguments.dropFirst())) {
case .success(.help):
    print(ServerCommandLine.usage)
    exit(0)
case .success(.run(let parsed)):
    configuration = parsed
case .failure(let error):
    FileHandle.standardError.write(Data("outbox-test-server: \(error)\n\n\(ServerCommandLine.usage)\n".utf8))
    exit(64)
}

let server: TestServer
do {
    server = try TestServer(configuration)
} catch {
    FileHandle.standardError.write(Data("outbox-test-server: cannot start: \(error)\n".utf8))
    exit(1)
}

// Written straight to the descriptor, unbuffered: a parent reading the first line sees it now.
FileHandle.standardOutput.write(Data("listening on 127.0.0.1:\(server.port)\n".utf8))

// Stop cleanly on SIGINT and SIGTERM: close connections and the store, then exit 0.
let signals = [SIGINT, SIGTERM].map { number in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
    source.setEventHandler {
        server.stop()
        exit(0)
    }
    source.resume()
    return source
}
withExtendedLifetime(signals) {
    dispatchMain()
}
