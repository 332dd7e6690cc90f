import Testing
import TetherCore
@testable import TetherWire
#if canImport(Glibc)
import Glibc
#endif

/// PyPI's `varlink` package (which nobody here wrote) against TetherWire:
/// its parser reads our .varlink files, its client reads the replies
/// TetherWire writes, and TetherWire reads the calls its client writes.
/// Skipped when python3 has no varlink (`pip install varlink`).
enum PythonVarlink {
    static let script = repositoryRoot + "/Tests/TetherWireTests/check_idl.py"
    static let available: Bool = system("python3 -c 'import varlink' >/dev/null 2>&1") == 0

    static func run(_ arguments: String) -> Int32 {
        system("python3 '\(script)' \(arguments)")
    }
}

@Suite(.enabled(if: PythonVarlink.available, "python3 has no varlink package (pip install varlink)"))
struct PythonVarlinkTests {
    @Test func itsParserAcceptsOurInterfaces() {
        #expect(PythonVarlink.run(">/dev/null") == 0, "run python3 Tests/TetherWireTests/check_idl.py to see why")
    }

    /// The replies each method gets, written by the typed model.
    static let replies: [(method: String, replies: [Reply])] = {
        func ok(_ model: some WireStruct, continues: Bool = false) -> Reply {
            Reply(parameters: model.parameters, continues: continues)
        }
        let rich = json(#"{"theme":"dark","sizes":[1,2.5],"blob":null}"#).replacingBlob()
        return [
            ("io.tether.Get", [ok(GetReply(value: .string("dark"), revision: 12, modified: 3)),
                               ok(GetReply(value: rich, revision: 12, modified: 3)),
                               ok(GetReply(value: .null, revision: 12, modified: 3)),
                               VarlinkError(TetherError(.notFound, "no state \"settings\""), name: "settings").reply]),
            ("io.tether.Set", [ok(SetReply(revision: 13, changed: true)), ok(SetReply(revision: 13, changed: false)),
                               VarlinkError(TetherError(.readOnly, "state \"settings\" is read-only"), name: "settings").reply]),
            ("io.tether.Remove", [ok(RemoveReply(revision: 14, changed: true))]),
            ("io.tether.Transaction", [ok(TransactionReply(revision: 15, changed: true)),
                                       VarlinkError.revisionMismatch(name: "a", expected: 4, actual: 9, index: 0).reply,
                                       VarlinkError(TetherError(.wrongType, "state \"a\" holds a double"), name: "a", op: 0).reply]),
            ("io.tether.List", [ok(ListReply(states: [StateInfo(name: "app.n", type: .int, modified: 2),
                                                      StateInfo(name: "app.o", type: .object, modified: 7)],
                                             revision: 15, truncated: true))]),
            ("io.tether.Describe", [ok(DescribeReply(descriptor: Descriptor(type: .double, readOnly: true,
                                                                            range: NumericRange(minimum: 0, maximum: 1)),
                                                     type: .double, modified: 5, revision: 15))]),
            ("io.tether.Declare", [ok(DeclareReply(revision: 16, created: true)),
                                   VarlinkError.limitExceeded(.nameLength, maximum: 256, actual: 300, "too long").reply]),
            ("io.tether.Watch", [
                ok(WatchReply(event: .snapshot(Entry(name: "settings", value: .string("dark"), modified: 3), resync: false),
                              revision: 16, epoch: "e"), continues: true),
                ok(WatchReply(event: .snapshot(Entry(name: "app.x", value: nil, modified: 0), resync: true),
                              revision: 16, epoch: "e"), continues: true),
                ok(WatchReply(event: .progress(resync: false), revision: 16, epoch: "e"), continues: true),
                ok(WatchReply(event: .change([Change(name: "settings", path: JSONPointer(tokens: ["theme"]), write: .set(rich)),
                                              Change(name: "app.x", write: .remove)], tag: "ui", origin: .max),
                              revision: 17, epoch: "e"), continues: true),
                ok(WatchReply(event: .progress(resync: false), revision: 40, epoch: "e")),
            ]),
            ("io.tether.Snapshot", [ok(SnapshotReply(revision: 40, bytes: 8192)),
                                    VarlinkError.accessDenied(name: nil, "uid 7 may not copy the store").reply]),
            ("io.tether.Compact", [ok(CompactReply(oldestRevision: 39))]),
            ("io.tether.Stats", [ok(StatsReply(revision: 40, epoch: "e", states: 3, connections: 2, watches: 1,
                                               oldestRevision: 1, limits: .defaults))]),
            ("io.tether.Metrics", [ok(MetricsReply(text: "# TYPE tetherd_commits_total counter\ntetherd_commits_total 40\n")),
                                   VarlinkError.accessDenied(name: nil, "uid 7 may not read the daemon's metrics").reply]),
            ("io.tether.Watchers", [ok(WatchersReply(watchers: [WatcherInfo(pid: 42, uid: 1000, command: "editor",
                                                                            names: ["app.theme"], prefix: nil, path: "/x")],
                                                     truncated: true))]),
            ("org.varlink.service.GetInfo", [ok(GetInfoReply(vendor: "Tether", product: "tetherd", version: "0",
                                                             url: "https://example.org",
                                                             interfaces: VarlinkService.tetherd.interfaceNames))]),
            ("org.varlink.service.GetInterfaceDescription", [ok(GetInterfaceDescriptionReply(description: InterfaceText.ioTether)),
                                                             VarlinkError.interfaceNotFound("io.nope").reply]),
        ]
    }()

    @Test func itsClientAndTetherWireUnderstandEachOther() throws {
        let base = "/tmp/tether-wire-\(getpid())"
        let repliesPath = base + "-replies.json"
        let callsPath = base + "-calls.bin"
        defer {
            unlink(repliesPath)
            unlink(callsPath)
        }
        var document = ValueObject()
        for (method, replies) in Self.replies {
            document[method] = .array(replies.map { .object($0.object) })
        }
        var out: [UInt8] = []
        try Value.object(document).writeJSON(into: &out)
        let file = try #require(fopen(repliesPath, "wb"))
        fwrite(out, 1, out.count, file)
        fclose(file)

        #expect(PythonVarlink.run("--exchange '\(repliesPath)' --emit-calls '\(callsPath)'") == 0,
                "check_idl.py printed what failed")

        // Every call varlink's client sent parses, resolves, and reads into the typed model.
        let bytes = try #require(readFile(callsPath))
        var decoder = MessageDecoder()
        decoder.append(bytes)
        var methods: [String] = []
        while let message = try decoder.next() {
            let call = try Call(parsing: message)
            try VarlinkService.tetherd.check(call)
            try Self.readTyped(call)
            methods.append(call.method)
        }
        try decoder.finish()
        let expected = Self.replies.flatMap { entry in
            Array(repeating: entry.method, count: entry.method == "io.tether.Watch" ? 1 : entry.replies.count)
        }
        #expect(methods == expected)
    }

    static func readTyped(_ call: Call) throws {
        let p = call.parameters
        switch call.method {
        case "io.tether.Get":
            #expect(try GetParameters(parameters: p) == GetParameters(name: "settings", path: JSONPointer(tokens: ["theme"])))
        case "io.tether.Set":
            #expect(try SetParameters(parameters: p) == SetParameters(name: "settings", path: JSONPointer(tokens: ["theme"]),
                                                                       value: .string("dark"), tag: "ui", origin: 7))
        case "io.tether.Remove":
            #expect(try RemoveParameters(parameters: p) == RemoveParameters(name: "settings", path: JSONPointer(tokens: ["old"])))
        case "io.tether.Transaction":
            #expect(try TransactionParameters(parameters: p) == TransactionParameters(
                ops: [Op(name: "a", path: JSONPointer(tokens: ["n"]), write: .set(.int(1))),
                      Op(name: "blob", write: .set(.bytes(Array("hi".utf8)))),
                      Op(name: "b", write: .remove)],
                preconditions: [Precondition(name: "a", revision: 4), Precondition(name: "c", revision: 0)],
                tag: "move", origin: .max))
        case "io.tether.List":
            #expect(try ListParameters(parameters: p) == ListParameters(prefix: "app.", after: "app.m", limit: 10))
        case "io.tether.Describe":
            #expect(try DescribeParameters(parameters: p) == DescribeParameters(name: "volume"))
        case "io.tether.Declare":
            #expect(try DeclareParameters(parameters: p) == DeclareParameters(
                name: "volume", descriptor: Descriptor(type: .double, range: NumericRange(minimum: 0, maximum: 1)),
                value: .double(0.5)))
        case "io.tether.Watch":
            #expect(call.more)
            #expect(try WatchParameters(parameters: p) == WatchParameters(
                names: ["settings"], prefix: "app.", path: JSONPointer(tokens: ["theme"]), fromRevision: 3, epoch: "e"))
        case "io.tether.Snapshot":
            #expect(try SnapshotParameters(parameters: p) == SnapshotParameters(path: "/var/backups/tether.db"))
        case "io.tether.Compact":
            #expect(try CompactParameters(parameters: p) == CompactParameters(revision: 30))
        case "io.tether.Stats", "io.tether.Metrics", "org.varlink.service.GetInfo":
            _ = try NoParameters(parameters: p)
        case "io.tether.Watchers":
            #expect(try WatchersParameters(parameters: p) == WatchersParameters(prefix: "app."))
        case "org.varlink.service.GetInterfaceDescription":
            #expect(try GetInterfaceDescriptionParameters(parameters: p).interface == "io.tether")
        default:
            Issue.record("unexpected call \(call.method)")
        }
    }
}

private extension Value {
    /// The sample value with bytes at /blob.
    func replacingBlob() -> Value {
        var copy = self
        try? copy.set(.bytes([0, 1, 254, 255]), at: JSONPointer(tokens: ["blob"]))
        return copy
    }
}
