import Testing
import TetherCore
@testable import TetherWire

/// Writes `model` as a call's parameters, checks them against the IDL
/// (strictly), sends them through JSON text, reads them back, and expects
/// the same model.
private func roundTripParameters<T: WireStruct>(_ model: T, method: String,
                                                sourceLocation: SourceLocation = #_sourceLocation) throws {
    let parameters = model.parameters
    try tetherOrService(method).checkParameters(parameters, method: member(method))
    var out: [UInt8] = []
    try Call(method: method, parameters: parameters).writeJSON(into: &out)
    let call = try Call(parsing: out)
    try VarlinkService.tetherd.check(Call(method: call.method, parameters: call.parameters, more: method == "io.tether.Watch"))
    let back = try T(parameters: call.parameters)
    #expect(back == model, "\(String(decoding: out, as: UTF8.self))", sourceLocation: sourceLocation)
}

/// The same for a reply, checked against the method's output with no
/// unknown fields allowed.
private func roundTripReply<T: WireStruct>(_ model: T, method: String,
                                           sourceLocation: SourceLocation = #_sourceLocation) throws {
    let parameters = model.parameters
    try tetherOrService(method).checkReply(parameters, method: member(method), allowUnknown: false)
    var out: [UInt8] = []
    try Reply(parameters: parameters).writeJSON(into: &out)
    let reply = try Reply(parsing: out)
    let back = try T(parameters: reply.parameters)
    #expect(back == model, "\(String(decoding: out, as: UTF8.self))", sourceLocation: sourceLocation)
}

private func tetherOrService(_ method: String) -> VarlinkInterface {
    method.hasPrefix("io.tether.") ? tetherInterface : serviceInterface
}

private func member(_ method: String) -> String {
    String(method.split(separator: ".").last!)
}

private func modelError<T: WireStruct>(_ type: T.Type, _ text: String, limits: Limits = .defaults,
                                       sourceLocation: SourceLocation = #_sourceLocation) -> VarlinkError? {
    varlinkError(sourceLocation: sourceLocation) {
        try T(parameters: jsonObject(text, sourceLocation: sourceLocation), limits: limits)
    }
}

/// A value with bytes inside, and every other kind, at several depths.
private let richValue: Value = {
    var inner = ValueObject()
    inner["blob"] = .bytes([0, 1, 2, 255])
    inner["a/b~c"] = .bytes([])
    inner["n"] = .double(-0.5)
    var object = ValueObject()
    object["theme"] = .string("dark")
    object["list"] = .array([.int(1), .bytes(Array("hi".utf8)), .null, .bool(false), .object(inner)])
    object["big"] = .int(.max)
    return .object(object)
}()

private let sampleValues: [Value] = [.null, .bool(true), .int(-7), .double(2.5), .string("é"), .bytes([9, 8, 7]),
                                     .array([]), .object(ValueObject()), richValue]

@Suite struct ModelRoundTripTests {
    @Test(arguments: sampleValues)
    func get(value: Value) throws {
        try roundTripParameters(GetParameters(name: "settings"), method: "io.tether.Get")
        try roundTripParameters(GetParameters(name: "settings", path: JSONPointer(tokens: ["a/b", "~", "0"])), method: "io.tether.Get")
        try roundTripReply(GetReply(value: value, revision: 12, modified: 3), method: "io.tether.Get")
    }

    @Test(arguments: sampleValues)
    func set(value: Value) throws {
        try roundTripParameters(SetParameters(name: "settings", value: value), method: "io.tether.Set")
        try roundTripParameters(SetParameters(name: "s", path: JSONPointer(tokens: ["theme"]), value: value, tag: "sync",
                                              origin: .max), method: "io.tether.Set")
        try roundTripReply(WriteReply(revision: 13, changed: true), method: "io.tether.Set")
        try roundTripReply(WriteReply(revision: 13, changed: false), method: "io.tether.Set")
    }

    @Test func remove() throws {
        try roundTripParameters(RemoveParameters(name: "settings"), method: "io.tether.Remove")
        try roundTripParameters(RemoveParameters(name: "settings", path: JSONPointer(tokens: ["list", "0"]), tag: "undo", origin: 7),
                                method: "io.tether.Remove")
        try roundTripReply(RemoveReply(revision: 1, changed: true), method: "io.tether.Remove")
    }

    @Test func transaction() throws {
        let ops = [
            Op(name: "a", write: .set(richValue)),
            Op(name: "b", path: JSONPointer(tokens: ["x", "-"]), write: .set(.bytes([1]))),
            Op(name: "c", path: JSONPointer(tokens: ["gone"]), write: .remove),
            Op(name: "d", write: .remove),
        ]
        try roundTripParameters(TransactionParameters(ops: ops), method: "io.tether.Transaction")
        try roundTripParameters(TransactionParameters(ops: ops, preconditions: [Precondition(name: "a", revision: 0),
                                                                                Precondition(name: "b", revision: 41)],
                                                      tag: "move", origin: 1 << 63), method: "io.tether.Transaction")
        try roundTripParameters(TransactionParameters(ops: [], preconditions: [Precondition(name: "a", revision: 2)]),
                                method: "io.tether.Transaction")
        try roundTripReply(TransactionReply(revision: 99, changed: true), method: "io.tether.Transaction")
    }

    @Test func list() throws {
        try roundTripParameters(ListParameters(), method: "io.tether.List")
        try roundTripParameters(ListParameters(prefix: "app.", after: "app.m", limit: 50), method: "io.tether.List")
        try roundTripReply(ListReply(states: [], revision: 0, truncated: false), method: "io.tether.List")
        try roundTripReply(ListReply(states: ValueType.allCases.enumerated().map {
            StateInfo(name: "s\($0.offset)", type: $0.element, modified: UInt64($0.offset))
        }, revision: 8, truncated: true), method: "io.tether.List")
    }

    @Test func describeAndDeclare() throws {
        try roundTripParameters(DescribeParameters(name: "volume"), method: "io.tether.Describe")
        let descriptors = [
            Descriptor(),
            Descriptor(type: .double, readOnly: true, range: NumericRange(minimum: 0, maximum: 1)),
            Descriptor(type: .int, range: NumericRange(minimum: -5)),
            Descriptor(range: NumericRange(maximum: 1e300)),
            Descriptor(readOnly: true),
        ]
        for descriptor in descriptors {
            try roundTripReply(DescribeReply(descriptor: descriptor, type: .double, modified: 4, revision: 9), method: "io.tether.Describe")
            try roundTripParameters(DeclareParameters(name: "volume", descriptor: descriptor), method: "io.tether.Declare")
            try roundTripParameters(DeclareParameters(name: "volume", descriptor: descriptor, value: richValue), method: "io.tether.Declare")
        }
        try roundTripReply(DeclareReply(revision: 5, created: true), method: "io.tether.Declare")
    }

    @Test func watch() throws {
        try roundTripParameters(WatchParameters(names: ["a", "b"]), method: "io.tether.Watch")
        try roundTripParameters(WatchParameters(prefix: ""), method: "io.tether.Watch")
        try roundTripParameters(WatchParameters(names: ["a"], prefix: "app.", path: JSONPointer(tokens: ["theme"]),
                                                fromRevision: 0, epoch: "4f1c"), method: "io.tether.Watch")
        let replies: [WatchReply.Event] = [
            .snapshot(Entry(name: "a", value: richValue, modified: 3), resync: false),
            .snapshot(Entry(name: "a", value: .null, modified: 3), resync: true),
            .snapshot(Entry(name: "missing", value: nil, modified: 0), resync: false),
            .change([Change(name: "a", write: .set(richValue)),
                     Change(name: "a", path: JSONPointer(tokens: ["list", "1"]), write: .set(.bytes([]))),
                     Change(name: "b", path: JSONPointer(tokens: ["x"]), write: .remove),
                     Change(name: "c", write: .remove)], tag: "sync", origin: 42),
            .change([Change(name: "a", write: .set(.int(1)))], tag: nil, origin: nil),
            .progress(resync: false),
            .progress(resync: true),
        ]
        for event in replies {
            try roundTripReply(WatchReply(event: event, revision: 10, epoch: "4f1c"), method: "io.tether.Watch")
        }
    }

    @Test func stats() throws {
        try roundTripParameters(StatsParameters(), method: "io.tether.Stats")
        try roundTripParameters(MetricsParameters(), method: "io.tether.Metrics")
        try roundTripReply(MetricsReply(text: "tetherd_commits_total 1\n"), method: "io.tether.Metrics")
        try roundTripParameters(WatchersParameters(prefix: "app."), method: "io.tether.Watchers")
        try roundTripReply(WatchersReply(watchers: [WatcherInfo(pid: 42, uid: 1000, command: "editor", names: ["app.theme"],
                                                                prefix: "app.", path: "/x")], truncated: false),
                           method: "io.tether.Watchers")
        try roundTripReply(StatsReply(revision: 100, epoch: "e", states: 3, connections: 2, watches: 1, oldestRevision: 40,
                                      limits: .defaults), method: "io.tether.Stats")
    }

    @Test func service() throws {
        try roundTripParameters(GetInfoParameters(), method: "org.varlink.service.GetInfo")
        try roundTripReply(GetInfoReply(vendor: "Tether", product: "tetherd", version: "0.1", url: "https://example.org",
                                        interfaces: VarlinkService.tetherd.interfaceNames), method: "org.varlink.service.GetInfo")
        try roundTripParameters(GetInterfaceDescriptionParameters(interface: "io.tether"),
                                method: "org.varlink.service.GetInterfaceDescription")
        try roundTripReply(GetInterfaceDescriptionReply(description: InterfaceText.ioTether),
                           method: "org.varlink.service.GetInterfaceDescription")
    }
}

@Suite struct ModelWireFormTests {
    /// The exact JSON of each kind of message, as docs/protocol.md shows it.
    @Test func writesTheDocumentedJSON() throws {
        #expect(text(SetParameters(name: "settings", path: JSONPointer(tokens: ["theme"]), value: .string("dark"),
                                   tag: "ui", origin: 7).wireValue)
            == #"{"name":"settings","path":"/theme","value":"dark","tag":"ui","origin":7}"#)
        #expect(text(SetParameters(name: "blob", value: .bytes([104, 105])).wireValue)
            == #"{"name":"blob","value":"aGk=","bytes_at":[""]}"#)
        #expect(text(GetReply(value: richValue, revision: 9, modified: 4).wireValue)
            == #"{"value":{"theme":"dark","list":[1,"aGk=",null,false,{"blob":"AAEC/w==","a/b~c":"","n":-0.5}],"big":9223372036854775807},"bytes_at":["/list/1","/list/4/blob","/list/4/a~1b~0c"],"type":"object","revision":9,"modified":4}"#)
        #expect(text(GetReply(value: .null, revision: 9, modified: 4).wireValue)
            == #"{"type":"null","revision":9,"modified":4}"#)
        #expect(text(TransactionParameters(ops: [Op(name: "a", path: JSONPointer(tokens: ["n"]), write: .set(.int(1))),
                                                 Op(name: "b", write: .remove)],
                                           preconditions: [Precondition(name: "a", revision: 4)]).wireValue)
            == #"{"ops":[{"op":"set","name":"a","path":"/n","value":1},{"op":"remove","name":"b"}],"preconditions":[{"name":"a","revision":4}]}"#)
        #expect(text(WatchReply(event: .change([Change(name: "settings", path: JSONPointer(tokens: ["theme"]), write: .set(.string("light")))],
                                               tag: "ui", origin: 7), revision: 10, epoch: "e").wireValue)
            == #"{"event":"change","revision":10,"epoch":"e","changes":[{"name":"settings","op":"set","path":"/theme","value":"light"}],"tag":"ui","origin":7}"#)
        #expect(text(WatchReply(event: .snapshot(Entry(name: "gone", value: nil, modified: 0), resync: true), revision: 10, epoch: "e").wireValue)
            == #"{"event":"snapshot","revision":10,"epoch":"e","state":{"name":"gone","exists":false,"modified":0},"resync":true}"#)
        #expect(text(Descriptor(type: .double, readOnly: true, range: NumericRange(minimum: 0, maximum: 1)).wireValue)
            == #"{"type":"double","read_only":true,"range":{"minimum":0.0,"maximum":1.0}}"#)
    }

    /// The C face's uint64 origin travels as the int64 with the same bits.
    @Test func originKeepsItsBits() throws {
        let parameters = SetParameters(name: "a", value: .null, origin: .max).parameters
        #expect(parameters["origin"] == .int(-1))
        #expect(try SetParameters(parameters: parameters).origin == .max)
    }

    @Test func absentAndNullValuesAreNull() throws {
        #expect(try SetParameters(parameters: jsonObject(#"{"name":"a"}"#)).value == .null)
        #expect(try SetParameters(parameters: jsonObject(#"{"name":"a","value":null}"#)).value == .null)
        #expect(try DeclareParameters(parameters: jsonObject(#"{"name":"a","descriptor":{}}"#)).value == .null)
    }

    @Test func aRangeAcceptsIntegers() throws {
        let declare = try DeclareParameters(parameters: jsonObject(#"{"name":"a","descriptor":{"range":{"minimum":0,"maximum":10}}}"#))
        #expect(declare.descriptor.range?.closedRange == 0...10)
        #expect(NumericRange(minimum: 1).closedRange == 1...Double.infinity)
    }

    @Test func listCapsItsLimit() throws {
        #expect(ListParameters().count(limits: .defaults) == 1000)
        #expect(ListParameters(limit: 5).count(limits: .defaults) == 5)
        #expect(ListParameters(limit: 50_000).count(limits: .defaults) == 1000)
    }

    @Test func watchCoversNamesAndPrefixes() {
        let watch = WatchParameters(names: ["x"], prefix: "app.")
        #expect(watch.covers("x"))
        #expect(watch.covers("app.theme"))
        #expect(!watch.covers("apple"))
        #expect(!watch.covers("y"))
        #expect(WatchParameters(prefix: "").covers("anything"))
    }

    @Test func methodNames() {
        #expect(TetherMethod.get.qualifiedName == "io.tether.Get")
        #expect(TetherMethod(qualifiedName: "io.tether.Watch") == .watch)
        #expect(TetherMethod(qualifiedName: "io.tether.Nope") == nil)
        #expect(TetherMethod(qualifiedName: "org.varlink.service.GetInfo") == nil)
        for method in TetherMethod.allCases {
            #expect(TetherMethod(qualifiedName: method.qualifiedName) == method)
            #expect(TetherMethod(qualifiedName: method.qualifiedName + "x") == nil)
            #expect(TetherMethod(qualifiedName: String(method.qualifiedName.dropLast())) == nil)
            #expect(TetherMethod(qualifiedName: method.qualifiedName.lowercased()) == nil)
            #expect(TetherMethod(qualifiedName: "x" + method.qualifiedName) == nil)
            #expect(TetherMethod(qualifiedName: method.rawValue) == nil)
        }
        for name in ["", "io.tether", "io.tether.", "io.tetherGet", "io_tether.Get", "io.tether.Get\u{0}", "io.tether.G\u{e9}t"] {
            #expect(TetherMethod(qualifiedName: name) == nil)
        }
        #expect(TetherMethod.allCases.filter(\.streams) == [.watch])
        #expect(VarlinkService.tetherd.streamingMethods == ["io.tether.Watch"])
    }

    @Test func valueTypeNames() {
        #expect(ValueType.allCases.map(\.wireName) == ["null", "bool", "int", "double", "string", "bytes", "array", "object"])
        #expect(ValueType.allCases.allSatisfy { ValueType(wireName: $0.wireName) == $0 })
        #expect(ValueType(wireName: "float") == nil)
    }
}

@Suite struct ModelErrorTests {
    @Test(arguments: [
        (#"{}"#, "name", "is required"),
        (#"{"name":""}"#, "name", "a state name cannot be empty"),
        (#"{"name":"a\u0007b"}"#, "name", "cannot hold control characters (one at byte 1)"),
        (#"{"name":"a\u007f"}"#, "name", "control characters"),
        (#"{"name":"a\u0085"}"#, "name", "cannot hold control characters (one at byte 1)"),
        (#"{"name":"ab\u2028"}"#, "name", "cannot hold line or paragraph separators (one at byte 2)"),
        (#"{"name":"a\u202eb"}"#, "name", "cannot hold bidirectional formatting characters (one at byte 1)"),
        (#"{"name":1}"#, "name", "must be a string, not an int (1)"),
        (#"{"name":"a","extra":1}"#, "extra", "no such parameter"),
    ])
    func badNames(text: String, parameter: String, message: String) {
        let error = modelError(GetParameters.self, text)
        #expect(error?.name == "org.varlink.service.InvalidParameter")
        #expect(error?.parameter == parameter)
        #expect(error?.detail.contains(message) == true, "\(error?.detail ?? "none")")
    }

    @Test func aNameTooLongIsALimit() {
        let error = modelError(GetParameters.self, #"{"name":""# + String(repeating: "é", count: 129) + #""}"#)
        #expect(error?.name == "io.tether.LimitExceeded")
        #expect(error?.parameters["limit"] == .string("name_length"))
        #expect(error?.parameters["actual"] == .int(258))
        let fits = try? GetParameters(parameters: jsonObject(#"{"name":""# + String(repeating: "é", count: 128) + #""}"#))
        #expect(fits != nil)
    }

    /// A malformed path is what a local state says about it: BadPath.
    @Test func aBadPathIsBadPath() {
        let error = modelError(GetParameters.self, #"{"name":"a","path":"theme"}"#)
        #expect(error?.name == "io.tether.BadPath")
        #expect(error?.tetherError?.code == .badPath)
        #expect(error?.message.contains("must be empty or start with") == true)
        #expect(modelError(SetParameters.self, #"{"name":"a","path":"/a~2"}"#)?.name == "io.tether.BadPath")
    }

    @Test func tooManyOpsAndPreconditions() {
        let op = #"{"op":"remove","name":"a"}"#
        let ops = "[" + Array(repeating: op, count: 129).joined(separator: ",") + "]"
        let error = modelError(TransactionParameters.self, #"{"ops":"# + ops + "}")
        #expect(error?.name == "io.tether.LimitExceeded")
        #expect(error?.parameters["limit"] == .string("ops"))
        #expect(error?.parameters["maximum"] == .int(128))
        #expect(error?.parameters["actual"] == .int(129))
        let exactly = "[" + Array(repeating: op, count: 128).joined(separator: ",") + "]"
        #expect((try? TransactionParameters(parameters: jsonObject(#"{"ops":"# + exactly + "}"))) != nil)
        let pre = #"{"name":"a","revision":1}"#
        let pres = "[" + Array(repeating: pre, count: 129).joined(separator: ",") + "]"
        let preError = modelError(TransactionParameters.self, #"{"ops":[],"preconditions":"# + pres + "}")
        #expect(preError?.parameters["limit"] == .string("preconditions"))
    }

    @Test(arguments: [
        (#"{"ops":[{"op":"remove","name":"a","value":1}]}"#, "ops[0].value", "a remove carries no value"),
        (#"{"ops":[{"op":"remove","name":"a","bytes_at":[]}]}"#, "ops[0].bytes_at", "a remove carries no value"),
        (#"{"ops":[{"name":"a"}]}"#, "ops[0].op", "is required (one of set, remove)"),
        (#"{"ops":[{"op":"delete","name":"a"}]}"#, "ops[0].op", "\"delete\" is not one of set, remove"),
        (#"{"ops":[7]}"#, "ops[0]", "must be an object, not an int (7)"),
        (#"{"ops":[],"preconditions":[{"name":"a","revision":-1}]}"#, "preconditions[0].revision", "must not be negative"),
        (#"{"ops":[{"op":"set","name":"a","value":"eA=","bytes_at":[""]}]}"#, "ops[0].bytes_at[0]", "invalid base64"),
    ])
    func badTransactions(text: String, parameter: String, message: String) {
        let error = modelError(TransactionParameters.self, text)
        #expect(error?.name == "org.varlink.service.InvalidParameter")
        #expect(error?.parameter == parameter)
        #expect(error?.detail.contains(message) == true, "\(error?.detail ?? "none")")
    }

    @Test(arguments: [
        (#"{"name":"a","value":{"b":"AA=="},"bytes_at":["/c"]}"#, "bytes_at[0]", "\"/c\" names nothing in the value"),
        (#"{"name":"a","value":{"b":1},"bytes_at":["/b"]}"#, "bytes_at[0]", "names an int (1), not a base64 string"),
        (#"{"name":"a","value":{"b":"AA=="},"bytes_at":["b"]}"#, "bytes_at[0]", "must be empty or start with"),
        (#"{"name":"a","value":{"b":"AA=="},"bytes_at":["/b","/b"]}"#, "bytes_at[1]", "names bytes, not a base64 string"),
        (#"{"name":"a","value":"AA==","bytes_at":[7]}"#, "bytes_at[0]", "must be a string"),
    ])
    func badBytesAt(text: String, parameter: String, message: String) {
        let error = modelError(SetParameters.self, text)
        #expect(error?.name == "org.varlink.service.InvalidParameter")
        #expect(error?.parameter == parameter)
        #expect(error?.detail.contains(message) == true, "\(error?.detail ?? "none")")
    }

    @Test func bytesAtDecodesWhereItSays() throws {
        let set = try SetParameters(parameters: jsonObject(#"{"name":"a","value":{"b":"AAE=","c":["aGk="]},"bytes_at":["/b","/c/0"]}"#))
        #expect(set.value == json(#"{"b":null,"c":[null]}"#).replacing(["b"], with: .bytes([0, 1])).replacing(["c", "0"], with: .bytes(Array("hi".utf8))))
        let root = try SetParameters(parameters: jsonObject(#"{"name":"a","value":"","bytes_at":[""]}"#))
        #expect(root.value == .bytes([]))
    }

    @Test(arguments: [
        (#"{"name":"a","descriptor":{"range":{"minimum":2,"maximum":1}}}"#, "descriptor.range.maximum", "the range is empty"),
        (#"{"name":"a","descriptor":{"type":"float"}}"#, "descriptor.type", "\"float\" is not one of"),
        (#"{"name":"a","descriptor":{"readonly":true}}"#, "descriptor.readonly", "no such parameter"),
        (#"{"name":"a"}"#, "descriptor", "is required"),
    ])
    func badDeclarations(text: String, parameter: String, message: String) {
        let error = modelError(DeclareParameters.self, text)
        #expect(error?.name == "org.varlink.service.InvalidParameter")
        #expect(error?.parameter == parameter)
        #expect(error?.detail.contains(message) == true, "\(error?.detail ?? "none")")
    }

    @Test(arguments: [
        (#"{}"#, "names", "a watch needs names, a prefix, or both"),
        (#"{"names":[]}"#, "names", "a watch needs names"),
        (#"{"names":["a",""]}"#, "names[1]", "cannot be empty"),
        (#"{"prefix":"a\n"}"#, "prefix", "control characters"),
        (#"{"prefix":"a\u2067"}"#, "prefix", "bidirectional formatting characters"),
        (#"{"prefix":"","from_revision":-3}"#, "from_revision", "must not be negative"),
        (#"{"prefix":"","from":3}"#, "from", "no such parameter"),
    ])
    func badWatches(text: String, parameter: String, message: String) {
        let error = modelError(WatchParameters.self, text)
        #expect(error?.name == "org.varlink.service.InvalidParameter")
        #expect(error?.parameter == parameter)
        #expect(error?.detail.contains(message) == true, "\(error?.detail ?? "none")")
    }

    @Test func tooManyWatchedNames() {
        var limits = Limits.defaults
        limits.maxNames = 2
        let error = modelError(WatchParameters.self, #"{"names":["a","b","c"]}"#, limits: limits)
        #expect(error?.parameters["limit"] == .string("names"))
    }

    @Test func listLimitIsPositive() {
        #expect(modelError(ListParameters.self, #"{"limit":0}"#)?.parameter == "limit")
    }

    @Test func repliesSayWhenTheirTypeDisagrees() {
        let error = modelError(GetReply.self, #"{"value":1,"type":"string","revision":1,"modified":1}"#)
        #expect(error?.parameter == "type")
        #expect(error?.detail == "says string, but the value is int")
        #expect(modelError(WatchReply.self, #"{"event":"snapshot","revision":1,"epoch":"e","state":{"name":"a","exists":true,"value":"AA==","type":"bytes","modified":1}}"#)?.parameter
            == "state.type")
        #expect(modelError(WatchReply.self, #"{"event":"change","revision":1,"epoch":"e"}"#)?.parameter == "changes")
        #expect(modelError(WatchReply.self, #"{"event":"change","revision":1,"epoch":"e","changes":[{"name":"a","op":"set"}]}"#)?.parameter
            == "changes[0].path")
    }

    /// Replies are read leniently: a newer daemon may add fields.
    @Test func repliesIgnoreUnknownFields() throws {
        let reply = try WriteReply(parameters: jsonObject(#"{"revision":1,"changed":true,"latency_us":3}"#))
        #expect(reply == WriteReply(revision: 1, changed: true))
    }
}

/// Parameters the IDL accepts are exactly those the typed model accepts,
/// apart from the checks only the model makes (names, paths, limits,
/// base64, ranges): checked on mutations of valid parameters.
@Suite struct ModelAgreesWithIDLTests {
    static let valid: [(String, String)] = [
        ("Get", #"{"name":"a","path":"/x"}"#),
        ("Set", #"{"name":"a","path":"/x","value":{"k":[1,2]},"tag":"t","origin":5}"#),
        ("Remove", #"{"name":"a","path":"/x","tag":"t","origin":5}"#),
        ("Transaction", #"{"ops":[{"op":"set","name":"a","path":"/x","value":1},{"op":"remove","name":"b"}],"preconditions":[{"name":"a","revision":1}],"tag":"t","origin":1}"#),
        ("List", #"{"prefix":"a","after":"ab","limit":3}"#),
        ("Describe", #"{"name":"a"}"#),
        ("Declare", #"{"name":"a","descriptor":{"type":"int","read_only":false,"range":{"minimum":1,"maximum":2}},"value":1}"#),
        ("Watch", #"{"names":["a"],"prefix":"b","path":"/x","from_revision":3,"epoch":"e"}"#),
        ("Snapshot", #"{"path":"/var/backups/t.db"}"#),
        ("Compact", #"{"revision":3}"#),
        ("Stats", #"{}"#),
        ("Metrics", #"{}"#),
        ("Watchers", #"{"prefix":"app."}"#),
    ]

    static func model(_ method: String, _ parameters: ValueObject) throws(VarlinkError) {
        switch method {
        case "Get": _ = try GetParameters(parameters: parameters)
        case "Set": _ = try SetParameters(parameters: parameters)
        case "Remove": _ = try RemoveParameters(parameters: parameters)
        case "Transaction": _ = try TransactionParameters(parameters: parameters)
        case "List": _ = try ListParameters(parameters: parameters)
        case "Describe": _ = try DescribeParameters(parameters: parameters)
        case "Declare": _ = try DeclareParameters(parameters: parameters)
        case "Watch": _ = try WatchParameters(parameters: parameters)
        case "Snapshot": _ = try SnapshotParameters(parameters: parameters)
        case "Compact": _ = try CompactParameters(parameters: parameters)
        case "Stats": _ = try StatsParameters(parameters: parameters)
        case "Metrics": _ = try MetricsParameters(parameters: parameters)
        case "Watchers": _ = try WatchersParameters(parameters: parameters)
        default: Issue.record("no model for \(method)")
        }
    }

    /// Every field of `value` replaced, one at a time, by values of each kind
    /// (and removed): the IDL's verdict and the model's agree.
    @Test(arguments: valid.map(\.0))
    func mutationsAgree(method: String) throws {
        let source = Self.valid.first { $0.0 == method }!.1
        let base = jsonObject(source)
        try tetherInterface.checkParameters(base, method: method)
        try Self.model(method, base)
        let replacements: [Value?] = [nil, .null, .bool(true), .int(1), .int(-1), .double(1.5), .string("set"), .string(""),
                                      .array([]), .array([.string("a")]), .object(ValueObject())]
        var checked = 0
        for pointer in pointers(in: .object(base)) where !pointer.isRoot {
            for replacement in replacements {
                var mutated = Value.object(base)
                if let replacement {
                    try mutated.set(replacement, at: pointer)
                } else {
                    try mutated.remove(at: pointer)
                }
                guard case .object(let parameters) = mutated else { continue }
                let idl = Result { () throws(VarlinkError) in try tetherInterface.checkParameters(parameters, method: method) }
                let typed = Result { () throws(VarlinkError) in try Self.model(method, parameters) }
                checked += 1
                switch (idl, typed) {
                case (.failure(let a), .failure(let b)):
                    // Both refuse, and for the same field.
                    if b.name == "org.varlink.service.InvalidParameter" {
                        #expect(a.parameter == b.parameter, "\(method) \(text(mutated)): IDL \(a), model \(b)")
                    }
                case (.failure(let a), .success):
                    Issue.record("\(method) \(text(mutated)): the IDL refuses (\(a)) what the model accepts")
                case (.success, .failure(let b)):
                    // Only the model's own checks may refuse what the IDL accepts.
                    let own = b.name != "org.varlink.service.InvalidParameter"
                        || b.detail.contains("state name") || b.detail.contains("base64") || b.detail.contains("names nothing")
                        || b.detail.contains("not a base64") || b.detail.contains("a remove carries no value")
                        || b.detail.contains("a watch needs") || b.detail.contains("must be at least 1")
                        || b.detail.contains("must not be negative") || b.detail.contains("range is empty")
                        || b.detail.contains("control characters") || b.detail.contains("must be empty or start with")
                        || b.detail.contains("must be an absolute path")
                    #expect(own, "\(method) \(text(mutated)): the model refuses (\(b)) what the IDL accepts")
                case (.success, .success):
                    break
                }
            }
        }
        #expect(checked > 0 || base.count == 0)
    }

    private func pointers(in value: Value) -> [JSONPointer] {
        var result: [JSONPointer] = [.root]
        switch value {
        case .object(let object):
            for (key, item) in object.members {
                result += pointers(in: item).map { JSONPointer(tokens: [key.string] + $0.tokens) }
            }
        case .array(let items):
            for (i, item) in items.enumerated() {
                result += pointers(in: item).map { JSONPointer(tokens: [String(i)] + $0.tokens) }
            }
        default:
            break
        }
        return result
    }
}

private extension Value {
    func replacing(_ tokens: [String], with value: Value) -> Value {
        var copy = self
        try? copy.set(value, at: JSONPointer(tokens: tokens))
        return copy
    }
}
