import Foundation
package import Outbox
package import OutboxAudit
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `events`: the raw stream, a page of it, or its tail followed as the app writes.
extension Runner {
    func events(_ options: EventsOptions) throws -> ExitCode {
        // Before anything prints: a Ctrl-C that comes as soon as the first lines show must end
        // the follower cleanly too.
        if options.follow { FollowInterruption.install() }
        var query = EventQuery(
            seqFrom: options.from,
            seqThrough: options.to,
            kinds: options.kinds.isEmpty ? nil : Set(options.kinds),
            operationTypes: options.types.isEmpty ? nil : Set(options.types),
            recordedFrom: options.since?.resolve(now: now, zone: zone),
            recordedBefore: options.until?.resolve(now: now, zone: zone),
            // Without --from: the journal's tail.
            order: options.from == nil ? .newestFirst : .oldestFirst,
            limit: options.limit
        )
        if let operation = options.operation { query.operationID = try resolve(operation, command: .events) }
        // The follower reads on from the last seq of this snapshot, so nothing prints twice.
        let snapshotEnd = try reader.lastSeq()
        if options.follow { query.seqThrough = snapshotEnd }

        let page = try reader.events(matching: query)
        var events = query.order == .newestFirst ? Array(page.events.reversed()) : page.events
        if let id = query.operationID, let compaction = try compaction(of: id, matching: query) {
            // A compacted operation's history is the `compacted` event that removed it: an
            // engine event, which an operation filter alone would leave out.
            events = (events + [compaction]).sorted { $0.seq < $1.seq }
        }
        let damaged = page.damaged.sorted { $0.seq < $1.seq }
        let seqWidth = max(3, String(snapshotEnd.rawValue).count)
        if options.follow {
            if !damaged.isEmpty { FollowInterruption.sawDamage() }
            StepHook.reached(.writing)
        }
        if options.follow && json {
            write(try events.map { try encodeJSON(HistoryEntry($0), pretty: false) }.joined())
        } else if json {
            let next = page.nextStart
            write(try encodeJSON(EventsDocument(events: events.map { HistoryEntry($0) }, damaged: damaged, nextSeq: next)))
        } else {
            var text = EventsText.header(seqWidth: seqWidth, moments: moments, style: style)
            text += EventsText.lines(events, damaged: damaged, seqWidth: seqWidth, moments: moments, style: style)
            if let next = page.nextStart, !options.follow {
                text += query.order == .oldestFirst
                    ? "(\(events.count) events shown; the next page starts at --from \(next))\n"
                    : "(the latest \(events.count) shown; earlier ones end at --to \(next))\n"
            } else if events.isEmpty && damaged.isEmpty && !options.follow {
                text += "(no events match)\n"
            }
            write(text)
        }
        guard options.follow else { return finish(damaged: damaged) }
        _ = finish(damaged: damaged)
        // A first page cut short by --limit is followed from where it stopped.
        let followAfter = (query.order == .oldestFirst ? page.nextAfter : nil) ?? snapshotEnd
        try follow(query, after: followAfter, seqWidth: seqWidth)
    }

    /// The `compacted` event that removed operation `id`'s history, when it was compacted and
    /// the event passes the query's other filters.
    private func compaction(of id: OperationID, matching query: EventQuery) throws -> JournalEvent? {
        guard let state = (try? reader.operation(id))?.state, state.compactedAt != nil,
            let event = (try? reader.journalEvents(of: id))?.first(where: { $0.kind == .compacted })
        else { return nil }
        if let kinds = query.kinds, !kinds.contains(.compacted) { return nil }
        if let types = query.operationTypes, !types.contains(where: { $0.caseInsensitiveCompare(state.operationType) == .orderedSame }) {
            return nil
        }
        if let from = query.seqFrom, event.seq < from { return nil }
        if let through = query.seqThrough, event.seq > through { return nil }
        if let from = query.recordedFrom, event.recordedAt < from { return nil }
        if let before = query.recordedBefore, event.recordedAt >= before { return nil }
        return event
    }

    /// Prints new events as they are committed, until interrupted (SIGINT or SIGTERM: exit 0, or
    /// 65 once it printed damage).
    private func follow(_ base: EventQuery, after start: JournalSequence, seqWidth: Int) throws -> Never {
        var query = base
        query.order = .oldestFirst
        query.seqThrough = nil
        query.limit = 1000
        query.after = start
        // Interrupted, the follower ends in its signal handler (FollowInterruption): it loops
        // until then, whatever step a signal finds it in.
        while true {
            StepHook.reached(.reading)
            let page = try reader.events(matching: query)
            let text: String
            if json {
                text = try page.events.map { try encodeJSON(HistoryEntry($0), pretty: false) }.joined()
            } else if !page.events.isEmpty || !page.damaged.isEmpty {
                text = EventsText.lines(page.events, damaged: page.damaged, seqWidth: seqWidth, moments: moments, style: style)
            } else {
                text = ""
            }
            // Damage counts from before it is printed: an interruption mid-write still ends 65.
            if !page.damaged.isEmpty { FollowInterruption.sawDamage() }
            if !text.isEmpty {
                StepHook.reached(.writing)
                write(text)
            }
            if !page.damaged.isEmpty { _ = finish(damaged: page.damaged) }
            // Read on past everything looked at, matching or not.
            if let examined = page.lastExamined { query.after = examined }
            if page.nextAfter != nil { continue }
            StepHook.reached(.waiting)
            FollowInterruption.pause(seconds: context.followPollSeconds)
        }
    }
}

/// Ctrl-C (or SIGTERM) ends `events --follow` at once, whatever it is doing: waiting for the
/// next commit, reading a page, or writing to a pipe nobody reads. The handler ends the process
/// itself (`_exit`, safe in a handler): a flag the loop looks at would wait for a read or a
/// write that may not return, and a signal may be delivered to any thread. What was written
/// is already out (the output is written straight to its descriptor, nothing is buffered);
/// the journal is opened read-only, so nothing is left half-done.
enum FollowInterruption {
    /// The status the follower ends with: 0, or 65 once it printed damage.
    private static let status = Atomic<Int32>(ExitCode.success.rawValue)

    static func install() {
        // Touched here first: a static is initialised on its first use (swift_once), which is
        // not safe in a signal handler.
        _ = status.load(ordering: .relaxed)
        for number in [SIGINT, SIGTERM] {
            var action = sigaction()
            // A C handler captures nothing: it reads a lock-free static atomic and exits.
            Forwarding.setHandler(&action) { _ in _exit(FollowInterruption.status.load(ordering: .relaxed)) }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(number, &action, nil)
        }
        // A parent may start us with these blocked (a spawning process passes its thread's mask
        // on); a follower that cannot be interrupted would never end.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        StepHook.reached(.following)
    }

    /// The follower printed damage: an interruption from now on ends it with 65.
    static func sawDamage() {
        status.store(ExitCode.damaged.rawValue, ordering: .relaxed)
    }

    /// Sleeps between looks.
    static func pause(seconds: Double) {
        usleep(UInt32(max(0, min(seconds, 10)) * 1_000_000))
    }
}

/// Events as fixed-width lines, so lines printed later by `--follow` stay aligned.
package enum EventsText {
    static let kindWidth = 16
    static let operationWidth = 9

    /// A moment's width: `2027-01-15T08:00:00Z`, or with an offset in another zone.
    static func momentWidth(_ moments: MomentFormat) -> Int {
        moments.isUTC ? 20 : 25
    }

    package static func header(seqWidth: Int, moments: MomentFormat = MomentFormat(now: Date()), style: Style) -> String {
        style.paint(line(seq: "SEQ", moment: "MOMENT", kind: "KIND", operation: "OPERATION", detail: "DETAIL", seqWidth: seqWidth,
                         momentWidth: momentWidth(moments)), .bold)
            + "\n"
    }

    package static func lines(_ events: [JournalEvent], damaged: [Outbox.DamagedRecord], seqWidth: Int,
                             moments: MomentFormat = MomentFormat(now: Date()), style: Style) -> String {
        let width = momentWidth(moments)
        var rows: [(seq: JournalSequence, text: String)] = events.map { event in
            let text = line(seq: "\(event.seq)", moment: moments.absolute(event.recordedAt), kind: event.kind.rawValue,
                            operation: event.operationID.map(EventText.shortID) ?? "-", detail: EventText.detail(event, moments: moments),
                            seqWidth: seqWidth, momentWidth: width)
            return (event.seq, text)
        }
        rows += damaged.map { record in
            let text = line(seq: "\(record.seq)", moment: "-", kind: "DAMAGED",
                            operation: record.claimedOperationID.map(EventText.shortID) ?? "?", detail: record.reason, seqWidth: seqWidth,
                            momentWidth: width)
            return (record.seq, style.paint(text, .red))
        }
        return rows.sorted { $0.seq < $1.seq }.map { $0.text + "\n" }.joined()
    }

    static func line(seq: String, moment: String, kind: String, operation: String, detail: String, seqWidth: Int,
                     momentWidth: Int) -> String {
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        let seqText = String(repeating: " ", count: max(0, seqWidth - seq.count)) + seq
        return "\(seqText)  \(pad(moment, momentWidth))  \(pad(kind, kindWidth))  \(pad(operation, operationWidth))  \(detail)"
    }
}
