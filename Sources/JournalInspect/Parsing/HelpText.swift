/// The help, written by hand: what each command answers, its options, and examples.
package enum HelpText {
    package static func text(for topic: HelpTopic) -> String {
        switch topic {
        case .tool: tool
        case .command(let name): command(name)
        }
    }

    static let tool = """
        journal-inspect: what happened to each write in an outbox journal, proved from the journal.

        USAGE
          journal-inspect <journal-dir> [<command>] [options]
          journal-inspect <command> --help

        The journal is the directory holding data.mdb (giving data.mdb itself works too). It is
        opened read-only: nothing is ever written, and the app using it is never blocked.

        COMMANDS
          summary             versions, seq range, size, counts by status, the oldest pending
                              write, the worker's pause (the default command)
          ops                 operations, newest first, filtered by status, category, type, age,
                              or found by what the member calls them (--search)
          timeline <id>       every event of one operation, then the verdict: the proof
          attachment <id>     one attached file: its manifest, its write, its local file
                              (hashed), its upload's grants, segments, completion or refusal
          events              the raw event stream; --follow keeps printing new events
          ledger              the reconciliation ledger (--csv too)
          verify              checksums, invariants, projections against a rebuild; exit 1 on a finding
          export <id>...      a JSON document of timelines and ledger rows for a ticket (or --all)
          report --html <f>   one self-contained HTML file: summary, queue depth chart, timelines
          record <b>/<t>/<id> one record of the member's: every event that made its value, the
                              member's view, the server's base, its sync state, and a verdict
          records <b>/<t>     a page of a business's records of one type: id, value, revision, sync

        OPTIONS
          --json              JSON instead of tables, on every command (field names: Docs/journal-inspect.md)
          --key-file <path>   the key of a journal encrypted at rest (32 bytes, or 64 hex digits):
                              opens payloads, labels and summaries; without it they read "(sealed)"
          --tz <zone>         the zone moments print in, and zone-less --since/--until are read
                              in: UTC (the default), local (this machine's), member (the
                              device's, as the engine recorded it), a name like
                              America/Sao_Paulo, or an offset like -03:00
          --now <moment>      the moment ages ("2 h ago") count to, instead of this machine's
                              clock: the same command prints the same text tomorrow
          -h, --help          help for the tool, or for the command named with it
          --version           the tool's version and the journal format it reads

        An operation id may be shortened to its first characters, wherever one is asked for.
        Moments (--since, --until, --now) are a date (2027-01-15), a date and time
        (2027-01-15T08:00:00Z), or, for --since and --until, an age: 90s, 45m, 3h, 2d, 1w.
        With --tz, a date or a time without a zone (2027-01-15T09:15) is read in that zone.
        A date that does not exist (2027-02-29) is refused, never rolled forward.

        EXIT CODES
          0   success
          1   verify found something
          64  usage error (also: an id that matches no operation or attachment, or several)
          65  the journal is damaged where the command had to read (what could be read is
              printed), or too damaged to open, or a read of it faulted (contained)
          66  the journal cannot be opened: missing, not a journal, a newer format, or not
              readable by this user
          70  an unexpected internal error
          73  the output file (report --html) cannot or must not be written: it is in the
              journal's directory, exists (without --force), is a link, a FIFO, a device, a
              directory or a file with other hard links, or creating, writing, flushing or
              closing it failed (the errno named)
          74  an I/O error while reading

        Colour is used only when standard output is a terminal, and never when NO_COLOR is set.

        EXAMPLES
          journal-inspect ~/ticket-4411/journal
          journal-inspect ~/ticket-4411/journal ops --status queued,blocked --since 3d
          journal-inspect ~/ticket-4411/journal ops --search antiseptic
          journal-inspect ~/ticket-4411/journal ops --tz member --since 2027-01-12T09:00 --until 2027-01-12T10:00
          journal-inspect ~/ticket-4411/journal timeline 6c4ef3ca
          journal-inspect ~/ticket-4411/journal record pharmacy-7/product/7d0c3a52
          journal-inspect ~/ticket-4411/journal verify

        """

    static func command(_ name: CommandName) -> String {
        switch name {
        case .summary: summary
        case .ops: ops
        case .timeline: timeline
        case .attachment: attachment
        case .events: events
        case .ledger: ledger
        case .verify: verify
        case .export: export
        case .report: report
        case .record: record
        case .records: records
        }
    }

    static let summary = """
        journal-inspect <journal-dir> summary [--json]
        journal-inspect <journal-dir> [--json]

        The journal at a glance: format and projection versions, account, seq range, event
        count, size on disk, operations by status, the oldest pending (queued or syncing)
        operation and its age, whether the worker is paused (a 401) and why, whether anyone is
        signed in, which engine last opened the journal and the device's time zone then, and
        the moment of the last event. The default command.

        OPTIONS
          --json          one JSON object

        EXAMPLES
          journal-inspect ./journal
          journal-inspect ./journal summary --json

        """

    static let ops = """
        journal-inspect <journal-dir> ops [options]

        Operations, newest first, one line each: id (first 8 characters), saved, type, label,
        status, attempts, detail (the last error with the server's words; who discarded a row
        and why; the approver's note; what replaced it; when its details were compacted).
        Compacted operations are listed and filtered like the others.

        OPTIONS
          --status <s,...>    only these statuses: queued, syncing, synced, pending_approval,
                              failed, blocked, withdrawn, discarded
          --category <c,...>  only these Sync tab categories (case ignored)
          --type <t,...>      only these operation types, e.g. product.create (case ignored)
          --since <moment>    only operations saved at or after it (device clock)
          --until <moment>    only operations saved before it
          --search <text>     only operations whose label, summary, category, entity or type
                              holds the text, case and accents ignored ("creme" finds
                              "Crème"); sealed labels are searched only with --key-file
          --limit <n>         at most n operations (default 50)
          --json              a JSON object: {"operations": [...]}

        EXAMPLES
          journal-inspect ./journal ops --status queued,blocked
          journal-inspect ./journal ops --category Products --since 2027-01-12 --until 2027-01-13
          journal-inspect ./journal ops --type product.create --since 3d --limit 10
          journal-inspect ./journal ops --search "gauze 10"

        """

    static let timeline = """
        journal-inspect <journal-dir> timeline <id> [--payload] [--full] [--json]

        The proof of what happened to one operation: every event in journal order with its
        seq, moment, kind, attempt, outcome, disposition, next due moment, error code and
        message, the gap before each attempt (measured by the device's uptime when the journal
        records it), the app starting again, a note wherever the device clock moved, and then
        one verdict line, e.g.
          synced on attempt 3, 2 h 14 min after it was saved
          blocked: 403 on attempt 1, waiting for a person (forbidden: "Only the owner may add products")
          queued: not attempted yet; it waits behind 5DFB6840 "Gauze 10 cm" (failed: ...)
        A run of attempts that met the same answer is one row. The payload is redacted: its
        size and SHA-256 are shown, and whether the bytes still hash to the SHA-256 recorded
        when it was saved. A compacted operation shows what was kept of it and the digest of
        the records removed.

        ARGUMENTS
          <id>            the operation id, or its first characters (an ambiguous prefix lists
                          the candidates)

        OPTIONS
          --payload       show the payload itself
          --full          one row per event: runs of identical attempts are not folded
          --json          one JSON object: operation, events, attempts, payload, verdict

        EXAMPLES
          journal-inspect ./journal timeline 6c4ef3ca
          journal-inspect ./journal timeline 6C4EF3CA-1B2C-4D5E-8F90-0A1B2C3D4E5F --payload

        """

    static let attachment = """
        journal-inspect <journal-dir> attachment <id> [--json]

        The proof of one attached file (a photo, a delivery note): its manifest (id, name,
        media type, size, SHA-256), the write that carries it and its status, whether its
        local file (attachments/<sha256> beside the journal) is there and still hashes to its
        manifest (or went after its write settled, or is damaged: named), each grant the server
        gave (segment size and count, lifetime; its signed URLs are never journaled), each
        segment that landed (number, size, ETag), the completion (object, size, SHA-256) or
        the refusal (status, code, message), then one verdict line, e.g.
          completed as obj-7 on 2027-01-15T08:00:03Z; its write synced on attempt 1
          uploading: 3 of 5 segments landed (2.4 of 4.0 MB)
          refused: 413 attachment_refused: "Photos may be at most 5 MB."; its write is failed, ...
        The file is read whole to hash it, a chunk at a time.

        ARGUMENTS
          <id>            the attachment id, or its first characters (an ambiguous prefix
                          lists the candidates); the write's enqueued event names it

        OPTIONS
          --json          one JSON object: manifest, write, file, grants, segments,
                          completion, refusals, state, verdict

        EXAMPLES
          journal-inspect ./journal attachment 8f1c2a3b
          journal-inspect ./journal attachment 8F1C2A3B-1B2C-4D5E-8F90-0A1B2C3D4E5F --json

        """

    static let events = """
        journal-inspect <journal-dir> events [options]

        The raw event stream, one line per event: seq, moment, kind, operation, details.
        Without --from, the journal's last events.

        OPTIONS
          --from <seq>        start at this seq (included)
          --to <seq>          stop at this seq (included)
          --kind <k,...>      only these kinds: enqueued, attemptStarted, attemptFinished,
                              attemptAbandoned, withdrawn, requeued, discarded, approvalDecided,
                              superseded, rebased, dependencyEnded, heldOnRollback,
                              rollbackAcknowledged, sessionPaused, sessionResumed,
                              sessionChanged, journalOpened, compacted, recordsWritten,
                              recordBaseDropped, deletedOnServer, pageApplied,
                              pageRefused, resnapshotStarted, snapshotPageStaged,
                              resnapshotFinished, resnapshotAbandoned, summaryChecked,
                              routeChanged, claimMayBeForgotten, installationAdopted,
                              attachmentGranted, segmentLanded, attachmentCompleted,
                              attachmentRefused
          --type <t,...>      only events of operations of these types
          --operation <id>    only the events of this operation (a prefix is enough); for a
                              compacted one, the compacted event that removed them
          --since <moment>    only events recorded at or after it
          --until <moment>    only events recorded before it
          --limit <n>         at most n events (default 100)
          --follow            after printing, keep printing new events as the app writes them,
                              until interrupted (Ctrl-C)
          --json              a JSON object {"events": [...]}; with --follow, one JSON object
                              per line

        EXAMPLES
          journal-inspect ./journal events --limit 20
          journal-inspect ./journal events --from 120 --to 180 --kind attemptFinished
          journal-inspect ./journal events --follow

        """

    static let ledger = """
        journal-inspect <journal-dir> ledger [options]

        The reconciliation ledger, one row per operation in journal order: id, type, entity
        type, seq, created, attempts, latest outcome, server revision, status. It holds no
        payload and no field value. Compare it with the server's records.

        OPTIONS
          --status <s>        only this status
          --since <moment>    only operations saved at or after it
          --until <moment>    only operations saved before it
          --limit <n>         at most n rows (default 1000)
          --csv               comma-separated values, with a header row
          --json              a JSON object {"ledger": [...]}

        EXAMPLES
          journal-inspect ./journal ledger
          journal-inspect ./journal ledger --csv > ledger.csv

        """

    static let verify = """
        journal-inspect <journal-dir> verify [--json]

        Proves the journal sound, or lists what is not, each finding with its seq and operation:
          - every record's checksum, and seqs without gaps;
          - each operation starts with exactly one enqueued, whose payload hashes to its
            recorded SHA-256;
          - attempts numbered 1..n, each with one outcome or abandonment;
          - nothing after a terminal status; statuses only through legal transitions;
          - the stored projections equal a rebuild from the events;
          - the file of every attachment a write not settled still needs is there and
            hashes to its manifest (attachment_file_missing, attachment_file_damaged).
        Exit 0 when clean, 1 when anything is found.

        OPTIONS
          --json          one JSON object: {"clean": ..., "findings": [...], ...}

        EXAMPLES
          journal-inspect ./journal verify
          journal-inspect ./journal verify --json

        """

    static let export = """
        journal-inspect <journal-dir> export <id>... [--payload]
        journal-inspect <journal-dir> export --all [--payload]

        A JSON document for a ticket: the timeline of each operation (its events, attempts,
        payload check and verdict) and its ledger row. Payloads are redacted unless --payload
        is given. Always JSON (--json is accepted).

        ARGUMENTS
          <id>...         operation ids, or their first characters

        OPTIONS
          --all           every operation in the journal
          --payload       include each payload's text

        EXAMPLES
          journal-inspect ./journal export 6c4ef3ca > ticket-4411.json
          journal-inspect ./journal export --all > journal.json

        """

    static let report = """
        journal-inspect <journal-dir> report --html <file> [<id>...] [--limit <n>] [--force]

        Writes one self-contained HTML file (inline CSS and SVG, no scripts, no outside assets)
        for a ticket: the summary, a chart of the queue's depth over the journal's life, and
        each operation's timeline drawn as a line of attempts coloured by outcome. Payloads are
        never included.

        The file is new (mode 0644 less the umask), never in the journal's directory. A file
        already there is replaced only with --force, whole (written beside it, flushed, renamed
        over it, its mode kept); a symbolic link, FIFO, device, directory or file with other
        hard links never is. Exit 73 when the file cannot or must not be written.

        ARGUMENTS
          <id>...         the operations to draw (prefixes are enough); without any, the newest

        OPTIONS
          --html <file>   where to write the report (required)
          --limit <n>     without ids, draw the newest n operations (default 100)
          --force         replace a regular file already at <file>
          --json          print {"file": ..., "operations": ...} instead of a sentence

        EXAMPLES
          journal-inspect ./journal report --html ticket-4411.html
          journal-inspect ./journal report --html antiseptic.html 6c4ef3ca

        """

    static let record = """
        journal-inspect <journal-dir> record <business>/<type>/<id> [--payload] [--json]

        Why the member's phone holds what it holds for one record. Every event that made its
        value, in journal order: seq, moment, kind, the write it belongs to, what it did to the
        record, the revision it names and the SHA-256 of the value it brought. Then the record
        as it stands: the member's view, the server's base (its revision, and when and by which
        event the phone learnt it), the sync state (writes pending and their statuses, changes
        the server applied whose value has not arrived, a conflict with the server's revision,
        a rollback with the write, the server's code and message, changes held on a rolled-back
        one), and a verdict, e.g.
          shows the member's the value 5c1e0a1b2c3d from write 6C4E0A1B, waiting for internet;
          the server last confirmed the value 9f2d7a3e0c11 at revision 2 (seq 41)
        Values are the member's data: each is named by its SHA-256 unless --payload is given.
        A record the journal holds nothing of is said so (exit 0).

        ARGUMENTS
          <business>/<type>/<id>  the record's key, each part as the app wrote it (compared byte
                          for byte); the id is everything after the second /. At most 128 bytes
                          of business, 64 of type and 255 of id (UTF-8)

        OPTIONS
          --payload       show the values themselves, as JSON text
          --json          one JSON object: key, record, entries, verdict

        EXAMPLES
          journal-inspect ./journal record pharmacy-7/product/7d0c3a52
          journal-inspect ./journal record pharmacy-7/product/7d0c3a52 --payload --json

        """

    static let records = """
        journal-inspect <journal-dir> records <business>/<type> [--after <id>] [--limit <n>] [--payload] [--json]

        A page of one business's records of one type, in the order of their ids' bytes, as the
        member's phone shows them (records waiting to be created included, records the member
        deleted left out): id, the view's SHA-256 (or its JSON text, with --payload), the
        server's revision, and the sync state in short. A line at the end says where the next
        page starts.

        ARGUMENTS
          <business>/<type>   the business and the record type, as the app wrote them

        OPTIONS
          --after <id>        only records whose id comes after this one (by bytes)
          --limit <n>         at most n records (default 100, at most 10000)
          --payload           each view's JSON text instead of its SHA-256
          --json              a JSON object {"records": [...], "nextAfter": ...}

        EXAMPLES
          journal-inspect ./journal records pharmacy-7/product
          journal-inspect ./journal records pharmacy-7/product --after 7d0c3a52 --limit 20

        """
}
