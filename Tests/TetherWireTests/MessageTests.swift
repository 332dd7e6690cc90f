import Testing
import TetherCore
@testable import TetherWire

private func callError(_ text: String, limits: Limits = .defaults,
                       sourceLocation: SourceLocation = #_sourceLocation) -> VarlinkError? {
    varlinkError(sourceLocation: sourceLocation) { try Call(parsing: Array(text.utf8), limits: limits) }
}

private func callError(bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> VarlinkError? {
    varlinkError(sourceLocation: sourceLocation) { try Call(parsing: bytes) }
}

private func written(_ call: Call) throws -> String {
    var out: [UInt8] = []
    try call.writeJSON(into: &out)
    return String(decoding: out, as: UTF8.self)
}

private func written(_ reply: Reply) throws -> String {
    var out: [UInt8] = []
    try reply.writeJSON(into: &out)
    return String(decoding: out, as: UTF8.self)
}

@Suite struct CallTests {
    @Test func parsesAMinimalCall() throws {
        let call = try Call(parsing: Array(#"{"method":"io.tether.Stats"}"#.utf8))
        #expect(call.method == "io.tether.Stats")
        #expect(call.interface == "io.tether")
        #expect(call.member == "Stats")
        #expect(call.parameters.count == 0)
        #expect(!call.oneway && !call.more && !call.upgrade)
    }

    @Test func parsesParametersAndFlags() throws {
        let call = try Call(parsing: Array(#" {"more":true,"parameters":{"names":["a"]},"method":"io.tether.Watch","oneway":false} "#.utf8))
        #expect(call.more)
        #expect(call.parameters["names"] == .array([.string("a")]))
    }

    @Test func nullMeansAbsent() throws {
        let call = try Call(parsing: Array(#"{"method":"io.tether.Stats","parameters":null,"more":null}"#.utf8))
        #expect(call.parameters.count == 0)
        #expect(!call.more)
    }

    /// Varlink puts vendor extensions in fields of their own; a reader skips them.
    @Test func ignoresUnknownEnvelopeFields() throws {
        let call = try Call(parsing: Array(#"{"method":"io.tether.Stats","com.example.trace":{"id":7}}"#.utf8))
        #expect(call == Call(method: "io.tether.Stats"))
    }

    @Test(arguments: [
        (#"[]"#, "a call must be a JSON object, not an array"),
        (#""io.tether.Get""#, "a call must be a JSON object, not a string"),
        (#"7"#, "a call must be a JSON object, not an int (7)"),
        (#"null"#, "a call must be a JSON object, not null"),
    ])
    func refusesWhatIsNotAnObject(text: String, message: String) {
        let error = callError(text)
        #expect(error?.name == "io.tether.InvalidCall")
        #expect(error?.parameters["field"] == nil)
        #expect(error?.message == message)
    }

    @Test(arguments: [
        (#"{}"#, "method", "the call has no \"method\""),
        (#"{"method":null}"#, "method", "the call has no \"method\""),
        (#"{"method":7}"#, "method", "\"method\" must be a string \"interface.Method\", not an int (7)"),
        (#"{"method":"Get"}"#, "method", "expected \"interface.Name\""),
        (#"{"method":"io.tether.get"}"#, "method", "starts with an uppercase letter"),
        (#"{"method":"io.tether."}"#, "method", "a name cannot be empty"),
        (#"{"method":"IO.tether.Get"}"#, "method", "starts with a lowercase letter"),
        (#"{"method":"io..tether.Get"}"#, "method", "empty label"),
        (#"{"method":"io.-tether.Get"}"#, "method", "must stand between letters or digits"),
        (#"{"method":"io.teth_er.Get"}"#, "method", "lowercase letters, digits"),
        (#"{"method":"io.tether.Get-It"}"#, "method", "letters and digits only"),
        (#"{"method":"io.tether.Get","parameters":[]}"#, "parameters", "\"parameters\" must be an object, not an array"),
        (#"{"method":"io.tether.Get","parameters":"x"}"#, "parameters", "\"parameters\" must be an object, not a string"),
        (#"{"method":"io.tether.Get","more":1}"#, "more", "\"more\" must be true or false, not an int (1)"),
        (#"{"method":"io.tether.Get","oneway":"yes"}"#, "oneway", "\"oneway\" must be true or false, not a string"),
        (#"{"method":"io.tether.Get","upgrade":{}}"#, "upgrade", "\"upgrade\" must be true or false, not an object"),
        (#"{"method":"io.tether.Get","oneway":true,"more":true}"#, "oneway", "exclude each other"),
    ])
    func refusesBadEnvelopes(text: String, field: String, message: String) {
        let error = callError(text)
        #expect(error?.name == "io.tether.InvalidCall")
        #expect(error?.parameters["field"] == .string(field))
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "no error")")
    }

    @Test func namesTheSpotOfBadJSON() {
        let error = callError("{\"method\":\n \"io.tether.Get\",}")
        #expect(error?.name == "io.tether.BadJSON")
        #expect(error?.message == "the call is not valid JSON: line 2, column 18 (byte 28): expected a string for an object key, found '}' (trailing commas are not allowed)")
    }

    @Test func refusesAnEmptyMessage() {
        let error = callError(bytes: [])
        #expect(error?.name == "io.tether.InvalidCall")
        #expect(error?.message.contains("empty message") == true)
    }

    @Test func namesInvalidUTF8InAString() {
        let error = callError(bytes: Array(#"{"method":"io.tether.Get","parameters":{"name":""#.utf8) + [0xC3, 0x28] + Array(#""}}"#.utf8))
        #expect(error?.name == "io.tether.BadJSON")
        #expect(error?.message == "the call is not valid UTF-8: ill-formed sequence at byte offset 48 (byte 0xC3)")
    }

    @Test func namesInvalidUTF8OutsideStrings() {
        let error = callError(bytes: Array(#"{"method":"io.tether.Get"}"#.utf8) + [0xFF])
        #expect(error?.name == "io.tether.BadJSON")
        #expect(error?.message.contains("not valid UTF-8") == true)
        #expect(error?.message.contains("byte offset 26") == true)
    }

    @Test func refusesNestingBeyondTheLimit() {
        var limits = Limits.defaults
        limits.maxDepth = 4
        let ok = #"{"method":"io.tether.Set","parameters":{"value":[[1]]}}"#
        #expect((try? Call(parsing: Array(ok.utf8), limits: limits)) != nil)
        let error = callError(#"{"method":"io.tether.Set","parameters":{"value":[[[1]]]}}"#, limits: limits)
        #expect(error?.name == "io.tether.BadJSON")
        #expect(error?.message.contains("nest deeper than the limit of 4") == true)
    }

    @Test func theDefaultDepthLeavesRoomForAValueAtTheLimit() throws {
        // A value nested Value.maxNesting deep, inside call > parameters > ops > op > value.
        let value = String(repeating: "[", count: Value.maxNesting) + String(repeating: "]", count: Value.maxNesting)
        let text = #"{"method":"io.tether.Transaction","parameters":{"ops":[{"op":"set","name":"a","value":"# + value + "}]}}"
        let call = try Call(parsing: Array(text.utf8))
        #expect(call.method == "io.tether.Transaction")
    }

    @Test func writesCompactlyLeavingOutDefaults() throws {
        #expect(try written(Call(method: "io.tether.Stats")) == #"{"method":"io.tether.Stats"}"#)
        var parameters = ValueObject()
        parameters["names"] = .array([.string("a")])
        #expect(try written(Call(method: "io.tether.Watch", parameters: parameters, more: true))
            == #"{"method":"io.tether.Watch","parameters":{"names":["a"]},"more":true}"#)
        #expect(try written(Call(method: "io.tether.Set", oneway: true, upgrade: true))
            == #"{"method":"io.tether.Set","oneway":true,"upgrade":true}"#)
    }

    @Test(arguments: [false, true])
    func roundTrips(flags: Bool) throws {
        var parameters = ValueObject()
        parameters["name"] = .string("é\"\\/\n\u{1}😀")
        parameters["value"] = json(#"{"a":[1,2.5,-0.0,true,null,{"b":"c"}],"d":1e300}"#)
        let call = Call(method: "org.varlink.service.GetInterfaceDescription", parameters: parameters,
                        oneway: flags, more: false, upgrade: flags)
        #expect(try Call(parsing: Array(written(call).utf8)) == call)
    }

    @Test func writingANaNIsAnError() {
        var parameters = ValueObject()
        parameters["value"] = .double(.nan)
        let error = varlinkError {
            var out: [UInt8] = []
            try Call(method: "io.tether.Set", parameters: parameters).writeJSON(into: &out)
        }
        #expect(error?.name == "io.tether.OutOfRange")
    }
}

@Suite struct ReplyTests {
    @Test func parsesAReply() throws {
        let reply = try Reply(parsing: Array(#"{"parameters":{"revision":3,"changed":true}}"#.utf8))
        #expect(reply.parameters["revision"] == .int(3))
        #expect(!reply.continues)
        #expect(reply.error == nil)
    }

    @Test func aReplyWithoutParametersHasNone() throws {
        let reply = try Reply(parsing: Array(#"{"continues":true}"#.utf8))
        #expect(reply.parameters.count == 0)
        #expect(reply.continues)
    }

    @Test func parsesAnError() throws {
        let reply = try Reply(parsing: Array(#"{"error":"io.tether.NotFound","parameters":{"message":"no state \"a\"","name":"a"}}"#.utf8))
        let error = try #require(VarlinkError(reply: reply))
        #expect(error.name == "io.tether.NotFound")
        #expect(error.tetherError == TetherError(.notFound, "no state \"a\""))
        #expect(error.parameters["name"] == .string("a"))
    }

    @Test(arguments: [
        (#"{"parameters":1}"#, "parameters"),
        (#"{"continues":"yes"}"#, "continues"),
        (#"{"error":5}"#, "error"),
        (#"{"error":"NotFound"}"#, "error"),
        (#"{"error":"io.tether.NotFound","continues":true}"#, "continues"),
    ])
    func refusesBadReplies(text: String, field: String) {
        let error = varlinkError { try Reply(parsing: Array(text.utf8)) }
        #expect(error?.name == "io.tether.InvalidCall")
        #expect(error?.parameters["field"] == .string(field))
    }

    @Test func writesParametersAlways() throws {
        #expect(try written(Reply()) == #"{"parameters":{}}"#)
        #expect(try written(Reply(continues: true)) == #"{"parameters":{},"continues":true}"#)
        #expect(try written(VarlinkError.expectedMore("io.tether.Watch").reply)
            == #"{"parameters":{},"error":"org.varlink.service.ExpectedMore"}"#)
    }

    @Test(arguments: [
        Reply(),
        Reply(parameters: jsonObject(#"{"event":"progress","revision":9,"epoch":"e"}"#), continues: true),
        VarlinkError.invalidParameter("ops[2].name", "bad").reply,
        VarlinkError(TetherError(.readOnly, "state 'a' is read-only"), name: "a", op: 3).reply,
    ])
    func roundTrips(reply: Reply) throws {
        #expect(try Reply(parsing: Array(written(reply).utf8)) == reply)
    }
}

/// `Reply.writeJSON` writes without building `Reply.object`: the bytes are
/// the object's, member for member, and a value JSON cannot hold fails as
/// the object's writer fails (its path from the root).
@Suite struct ReplyWriterTests {
    static let replies: [Reply] = {
        var nested = ValueObject()
        nested["a"] = .array([.null, .double(1.5), .bytes([0, 255])])
        var withBytes = ValueObject()
        withBytes["nested"] = .object(nested)
        return [
            Reply(),
            Reply(parameters: jsonObject(#"{"revision":3,"changed":true}"#)),
            Reply(parameters: jsonObject(#"{"event":"progress","revision":0,"epoch":"e\"1"}"#), continues: true),
            Reply(parameters: jsonObject(#"{"description":"empty message \u0000\n\ud83d\ude00"}"#), error: "org.varlink.service.InvalidParameter"),
            Reply(error: "io.tether.NotFound"),
            Reply(parameters: withBytes, continues: true),
            VarlinkError.invalidParameter("ops[2].name", "bad").reply,
        ]
    }()

    @Test(arguments: replies)
    func writesTheBytesOfItsObject(reply: Reply) throws {
        var direct: [UInt8] = []
        try reply.writeJSON(into: &direct)
        var viaObject: [UInt8] = []
        try Value.object(reply.object).writeJSON(into: &viaObject)
        #expect(direct == viaObject)
    }

    @Test func aNaNFailsNamingItsPathFromTheRoot() throws {
        var out: [UInt8] = [1, 2]
        var nan = ValueObject()
        nan["x"] = .double(.nan)
        let error = varlinkError { try Reply(parameters: nan).writeJSON(into: &out) }
        #expect(error?.detail.contains("/parameters/x") == true)
        #expect(out == [1, 2])
    }
}
