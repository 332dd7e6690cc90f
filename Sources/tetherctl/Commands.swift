// Commands.swift — tetherctl's subcommands: one io.tether (or org.varlink.service) method each.

import ArgumentParser
import Glibc
import TetherCore
import TetherWire

struct Tetherctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tetherctl",
        abstract: "Read, write and watch the states tetherd holds.",
        discussion: """
            tetherctl talks to tetherd over its Varlink socket, one call per command \
            (Watch streams). Each command prints the reply's parameters as one line \
            of JSON on stdout (--pretty indents it); a failure prints one line on \
            stderr, naming the Varlink error and its message.

            Values are JSON text: a string needs its quotes (tetherctl set theme '"dark"'), \
            and "-" reads the value from stdin; a value may start with a dash (tetherctl set \
            volume -3). Bytes values arrive as base64 strings, \
            listed by JSON Pointer in "bytes_at", and are printed as received.

            Exit codes:
              0  success
              1  the daemon answered with an error (or with a reply tetherctl cannot read)
              2  usage error: bad options or arguments, a value that is not JSON,
                 a bad transaction document (nothing was sent)
              3  cannot connect to the daemon (or the connection broke before the answer, or no answer within --timeout, or the socket failed the trust checks)
              4  a transaction's precondition failed (io.tether.RevisionMismatch)
              5  no such state, or nothing at the path (io.tether.NotFound)
            """,
        subcommands: [Get.self, SetCommand.self, Rm.self, List.self, Watch.self, Tx.self,
                      Describe.self, Declare.self, Snapshot.self, Compact.self, Stats.self, MetricsCommand.self, GraphCommand.self, Info.self]
    )

    // Given before the subcommand (tetherctl --address unix:/x get a), the
    // options reach the subcommand's own group of the same type.
    @OptionGroup var global: GlobalOptions
}

// MARK: get

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read a state, or the part of it at a path.",
        discussion: """
            Prints {"value":…,"type":…,"revision":…,"modified":…}: revision is the daemon's \
            revision the read was made at, modified the revision of the state's last change \
            (what a transaction precondition compares). A null value is left out. Exit 5 \
            when the state, or the member at the path, does not exist.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print only the value (null when it is null; bytes as base64).")
    var valueOnly = false

    @Argument(help: "The state's name.")
    var name: String

    @Argument(help: "A JSON Pointer into the value (/font/size); absent or \"\": the whole value.")
    var path: String?

    func run() throws {
        let parameters = GetParameters(name: name, path: try Input.path(path)).parameters
        let reply = try global.call("io.tether.Get", parameters, reply: GetReply.self)
        if valueOnly {
            try Output.line(reply["value"] ?? .null, pretty: global.pretty)
        } else {
            try global.print(reply)
        }
    }
}

// MARK: set

struct SetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Write a JSON value to a state, or at a path in it.",
        usage: "tetherctl set [<options>] <name> [<path>] <json>",
        discussion: """
            Setting the whole value of a state that does not exist creates it. At a path, \
            writes follow JSON Patch: an object member is added or replaced, an array index \
            replaces, the index equal to the length or "-" appends; the parent must exist. \
            Prints {"revision":…,"changed":…}; changed is false when the value was equal to \
            what was there (nothing was committed).

            <json> is JSON text ('"dark"', 11, '{"size":11}'); "-" reads it from stdin. \
            --bytes-at /blob (repeatable) stores the base64 string at that pointer, \
            relative to the value, as bytes.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var write: WriteOptions

    @Option(name: .customLong("bytes-at"), help: ArgumentHelp(
        "A JSON Pointer, relative to the value, of a base64 string to store as bytes (repeatable).", valueName: "pointer"))
    var bytesAt: [String] = []

    @Argument(help: "The state's name.")
    var name: String

    // Every argument the options do not take, so that a value starting
    // with a dash (-5, -1.5, "-" for stdin) is a value, not an option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp(
        "The path (a JSON Pointer) and the JSON value, or just the JSON value.", valueName: "path-and-json"))
    var arguments: [String] = []

    func validate() throws {
        let given = arguments.filter { $0 != "--" }
        if given.isEmpty { throw ValidationError("Missing expected argument '<json>' (the value to write, as JSON text)") }
        if given.count > 2 {
            throw ValidationError("Too many arguments: \(given.map { "'\($0)'" }.joined(separator: " ")) (expected [<path>] <json>)")
        }
    }

    func run() throws {
        let given = arguments.filter { $0 != "--" }
        let (pathText, json) = given.count == 2 ? (Optional(given[0]), given[1]) : (nil, given[0])
        let path = try Input.path(pathText)
        let value = try Input.value(json, bytesAt: bytesAt, what: "the value")
        let parameters = SetParameters(name: name, path: path, value: value, tag: write.tag,
                                       origin: try write.originValue()).parameters
        try global.print(try global.call("io.tether.Set", parameters, reply: SetReply.self))
    }
}

// MARK: rm

struct Rm: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a state, or the member or element at a path in it.",
        discussion: """
            Prints {"revision":…,"changed":…}. Exit 5 when the state, or the member at the \
            path, does not exist.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var write: WriteOptions

    @Argument(help: "The state's name.")
    var name: String

    @Argument(help: "A JSON Pointer into the value; absent or \"\": the whole state.")
    var path: String?

    func run() throws {
        let parameters = RemoveParameters(name: name, path: try Input.path(path), tag: write.tag,
                                          origin: try write.originValue()).parameters
        try global.print(try global.call("io.tether.Remove", parameters, reply: RemoveReply.self))
    }
}

// MARK: list

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the states whose names start with a prefix (every state without one).",
        discussion: """
            Prints {"states":[{"name":…,"type":…,"modified":…},…],"revision":…,"truncated":false} \
            in byte order of the names. The daemon answers at most max_list states per call; \
            tetherctl asks again after the last name until it has them all (revision is then \
            the last answer's). A prefix matches byte for byte: "app." matches "app.theme", \
            not "apple".
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("States per call (default: the daemon's max_list).", valueName: "n"))
    var pageSize: Int?

    @Argument(help: "The prefix of the names to list.")
    var prefix: String = ""

    func validate() throws {
        if let pageSize, pageSize < 1 { throw ValidationError("--page-size must be at least 1") }
    }

    func run() throws {
        let connection = try global.connect()
        defer { connection.close() }
        var states: [Value] = []
        var after: String?
        var revision: Value = .int(0)
        do {
            while true {
                let parameters = ListParameters(prefix: prefix, after: after, limit: pageSize).parameters
                let reply = try connection.call("io.tether.List", parameters)
                let page: ListReply
                do {
                    page = try ListReply(parameters: reply)
                } catch {
                    throw ClientError.badReply("the reply does not match the interface: \(error)")
                }
                if case .array(let items)? = reply["states"] { states.append(contentsOf: items) }
                revision = reply["revision"] ?? revision
                guard page.truncated else { break }
                guard let last = page.states.last?.name else {
                    throw ClientError.badReply("a List reply that says truncated but holds no state")
                }
                if let after, !after.utf8.lexicographicallyPrecedes(last.utf8) {
                    throw ClientError.badReply("List after \"\(after)\" went backwards to \"\(last)\"")
                }
                after = last
            }
        } catch let error as ClientError {
            throw report(error)
        }
        var result = ValueObject()
        result["states"] = .array(states)
        result["revision"] = revision
        result["truncated"] = .bool(false)
        try global.print(result)
    }
}

// MARK: watch

/// Set by SIGINT and SIGTERM while a watch streams.
nonisolated(unsafe) private var stopRequested: sig_atomic_t = 0

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream what happens to states: one JSON line per reply, as it comes.",
        discussion: """
            Watches the named states (they need not exist yet) and, with --prefix, every \
            state whose name starts with it (--prefix "" watches every state); with --path, \
            only what happens at that path in them. Each reply is printed as one line and \
            flushed: "event" is "snapshot" (one state's value), "progress" (everything up \
            to "revision" has been sent) or "change" (every change one commit made, with its \
            tag and origin).

            Without --from: a snapshot per state, a progress line, then a change line per \
            commit. With --from REV (and the --epoch REV belongs to, from an earlier line): \
            every change after REV, then progress, then live; snapshots and then a progress \
            line with "resync":true when the daemon no longer has that history.

            The stream goes on until SIGINT or SIGTERM (exit 0), until stdout closes (exit \
            0), or until --count change lines have been printed (--count 0: until the first \
            progress line).
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Also watch every state whose name starts with this (\"\": all).", valueName: "prefix"))
    var prefix: String?

    @Option(name: .long, help: ArgumentHelp("Watch only this JSON Pointer in each state.", valueName: "path"))
    var path: String?

    @Option(name: .customLong("from"), help: ArgumentHelp("Resume: every change after this revision, then live.", valueName: "rev"))
    var from: UInt64?

    @Option(name: .long, help: ArgumentHelp("The epoch the --from revision belongs to.", valueName: "epoch"))
    var epoch: String?

    @Option(name: .long, help: ArgumentHelp("Stop after this many change lines (0: after the first progress line).", valueName: "n"))
    var count: Int?

    @Argument(help: "Names of states to watch.")
    var names: [String] = []

    func validate() throws {
        if names.isEmpty && prefix == nil {
            throw ValidationError("name a state to watch, or give --prefix (--prefix \"\" watches every state)")
        }
        if let count, count < 0 { throw ValidationError("--count must not be negative") }
    }

    func run() throws {
        let parameters = WatchParameters(names: names, prefix: prefix, path: try Input.path(path),
                                         fromRevision: from, epoch: epoch).parameters
        let connection = try global.connect()
        defer { connection.close() }
        Watch.catchSignals()
        connection.interrupted = { stopRequested != 0 }
        var changes = 0
        do {
            connection.startClock()
            try connection.send(Call(method: "io.tether.Watch", parameters: parameters, more: true))
            while true {
                let reply = try connection.receive()
                connection.deadline = nil  // the daemon answers: the stream waits without limit
                if let error = VarlinkError(reply: reply) { throw ClientError.remote(error) }
                let event: WatchReply
                do {
                    event = try WatchReply(parameters: reply.parameters)
                } catch {
                    throw ClientError.badReply("the reply does not match the interface: \(error)")
                }
                try global.print(reply.parameters)
                if stopRequested != 0 { return }
                switch event.event {
                case .change:
                    changes += 1
                    if let count, changes >= count { return }
                case .progress:
                    if count == 0 { return }
                case .snapshot:
                    break
                }
                if !reply.continues { return }
            }
        } catch let error as ClientError {
            throw report(error)
        }
    }

    /// SIGINT and SIGTERM interrupt the blocking read (no SA_RESTART) and
    /// end the watch with exit 0.
    static func catchSignals() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in stopRequested = 1 }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
    }
}

// MARK: tx

struct Tx: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply a transaction read from a file or stdin: every op as one commit, or none.",
        discussion: """
            The document is the Transaction method's parameters, e.g.

              {"ops":[{"op":"set","name":"a","path":"/n","value":1},
                      {"op":"remove","name":"b"}],
               "preconditions":[{"name":"a","revision":45},
                                {"name":"c","revision":0}],
               "tag":"move","origin":7}

            A precondition holds when the state's modified revision equals its revision \
            (0: the state must not exist); one that does not fails the transaction with \
            io.tether.RevisionMismatch and exit 4. An op that fails fails it with that op's \
            error ("op" is its index). --tag and --origin replace the document's. Prints \
            {"revision":…,"changed":…}.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var write: WriteOptions

    @Argument(help: "The JSON document's file; \"-\" or absent: stdin.")
    var file: String = "-"

    func run() throws {
        let bytes = try Input.file(file)
        let source = file == "-" ? "stdin" : file
        let parsed = bytes.withUnsafeBytes { raw in
            Result { () throws(TetherError) -> Value in try Value(json: raw) }
        }
        let document: Value
        switch parsed {
        case .success(let v): document = v
        case .failure(let error):
            throw usageError("the transaction in \(source) is not valid JSON: \(error.message.replacingOccurrences("invalid JSON at ", ""))")
        }
        var transaction: TransactionParameters
        do {
            transaction = try TransactionParameters(from: document)
        } catch {
            let field = error.parameters["parameter"].flatMap { if case .string(let s) = $0 { s } else { nil } }
            let at = field.map { "\($0): " } ?? ""
            throw usageError("the transaction in \(source) is not valid: \(at)\(error.detail)")
        }
        if let tag = write.tag { transaction.tag = tag }
        if let origin = try write.originValue() { transaction.origin = origin }
        try global.print(try global.call("io.tether.Transaction", transaction.parameters, reply: TransactionReply.self))
    }
}

// MARK: describe, declare

struct Describe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a state's descriptor: what the daemon enforces on every write to it.",
        discussion: """
            Prints {"descriptor":{"type":…,"read_only":…,"range":{"minimum":…,"maximum":…}},\
            "type":…,"modified":…,"revision":…}; the descriptor's fields are absent when \
            nothing is enforced. Exit 5 when the state does not exist.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The state's name.")
    var name: String

    func run() throws {
        try global.print(try global.call("io.tether.Describe", DescribeParameters(name: name).parameters,
                                         reply: DescribeReply.self))
    }
}

struct Declare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set a state's descriptor (type lock, read-only, range); create the state with --value when it does not exist.",
        discussion: """
            The descriptor replaces the one the state had: an option left out is not \
            enforced any more (declare without --read-only lifts it). The current value, or \
            the new state's value, must satisfy the descriptor, or nothing changes. Prints \
            {"revision":…,"created":…}.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp(
        "Type lock: null, bool, int, double, string, bytes, array or object.", valueName: "type"))
    var type: String?

    @Flag(name: .long, help: "Refuse every write (io.tether.ReadOnly) until declared again without it.")
    var readOnly = false

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The smallest number allowed.", valueName: "x"))
    var min: Double?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The largest number allowed.", valueName: "y"))
    var max: Double?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "The value (JSON text; \"-\": stdin) of the state when this creates it.", valueName: "json"))
    var value: String?

    @Option(name: .customLong("bytes-at"), help: ArgumentHelp(
        "A JSON Pointer, relative to --value, of a base64 string to store as bytes (repeatable).", valueName: "pointer"))
    var bytesAt: [String] = []

    @Argument(help: "The state's name.")
    var name: String

    func validate() throws {
        if let type, ValueType(wireName: type) == nil {
            throw ValidationError("--type must be one of \(ValueType.allCases.map(\.wireName).joined(separator: ", ")), not '\(type)'")
        }
        if let min, let max, min > max { throw ValidationError("--min \(min) is above --max \(max)") }
        if !bytesAt.isEmpty && value == nil { throw ValidationError("--bytes-at needs --value") }
    }

    func run() throws {
        let range = (min != nil || max != nil) ? NumericRange(minimum: min, maximum: max) : nil
        let descriptor = Descriptor(type: type.flatMap(ValueType.init(wireName:)), readOnly: readOnly, range: range)
        let initial = try value.map { try Input.value($0, bytesAt: bytesAt, what: "--value") } ?? .null
        let parameters = DeclareParameters(name: name, descriptor: descriptor, value: initial).parameters
        try global.print(try global.call("io.tether.Declare", parameters, reply: DeclareReply.self))
    }
}

// MARK: snapshot, compact

struct Snapshot: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the daemon's whole store to a file, while it keeps serving.",
        discussion: """
            PATH is on the daemon's machine and must not exist; the daemon (its uid) writes             it. Prints {"revision":…,"bytes":…}. To restore: stop tetherd, then start it             with --restore PATH (a new epoch: every watch resyncs). Needs the daemon's uid             or root.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Where the copy goes (an absolute path that does not exist yet).")
    var path: String

    func run() throws {
        var absolute = path
        if !absolute.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
            if getcwd(&buffer, buffer.count) != nil { absolute = String(cString: buffer) + "/" + path }
        }
        try global.print(try global.call("io.tether.Snapshot", SnapshotParameters(path: absolute).parameters,
                                         reply: SnapshotReply.self))
    }
}

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Forget the retained commits up to a revision (default: all but the newest).",
        discussion: """
            Prints {"oldest_revision":…}: watches can resume from it or later; one that             asks for older history gets a resync. Needs the daemon's uid or root.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "The last revision to forget.")
    var revision: UInt64?

    func run() throws {
        try global.print(try global.call("io.tether.Compact", CompactParameters(revision: revision).parameters,
                                         reply: CompactReply.self))
    }
}

// MARK: stats, info

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the daemon's counters and limits.",
        discussion: """
            Prints {"revision":…,"epoch":…,"states":…,"connections":…,"watches":…,\
            "oldest_revision":…,"limits":{…}}: oldest_revision is the oldest revision a \
            watch can resume from (--from).
            """)

    @OptionGroup var global: GlobalOptions

    func run() throws {
        try global.print(try global.call("io.tether.Stats", reply: StatsReply.self))
    }
}

struct MetricsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print the daemon's metrics in Prometheus' text format (io.tether.Metrics).",
        discussion: """
            The same text `tetherd --metrics ADDRESS` serves at GET /metrics, for hosts             where nothing scrapes it (docs/daemon.md, "Metrics"). Needs the daemon's uid             or root.
            """)

    @OptionGroup var global: GlobalOptions

    func run() throws {
        let reply = try MetricsReply(parameters: try global.call("io.tether.Metrics", reply: MetricsReply.self))
        Swift.print(reply.text, terminator: "")
    }
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the daemon is (org.varlink.service.GetInfo): vendor, product, version, interfaces.")

    @OptionGroup var global: GlobalOptions

    func run() throws {
        try global.print(try global.call("org.varlink.service.GetInfo", reply: GetInfoReply.self))
    }
}
