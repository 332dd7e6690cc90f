import Testing
import TetherCore
@testable import TetherWire

private func idlError(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> IDLError? {
    do {
        let interface = try VarlinkInterface(parsing: text)
        Issue.record("parsed, with members \(interface.members.map(\.name))", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

@Suite struct IDLParserTests {
    @Test func theCommittedFilesAreTheEmbeddedTexts() throws {
        let tether = try #require(readText(repositoryRoot + "/protocol/io.tether.varlink"))
        let service = try #require(readText(repositoryRoot + "/protocol/org.varlink.service.varlink"))
        #expect(tether == InterfaceText.ioTether, "run scripts/embed-protocol.sh")
        #expect(service == InterfaceText.orgVarlinkService, "run scripts/embed-protocol.sh")
    }

    @Test func parsesOurInterface() throws {
        let interface = try VarlinkInterface(parsing: InterfaceText.ioTether)
        #expect(interface.name == "io.tether")
        #expect(interface.doc.hasPrefix("Tether's state daemon, tetherd"))
        #expect(interface.methods.map(\.name) == ["Get", "Set", "Remove", "Transaction", "List", "Describe", "Declare",
                                                   "Watch", "Snapshot", "Compact", "Stats", "Metrics", "Watchers"])
        #expect(interface.methods.map(\.name) == TetherMethod.allCases.map(\.rawValue))
        let get = try #require(interface.method(named: "Get"))
        #expect(get.input == [IDLField(name: "name", type: .string), IDLField(name: "path", type: .optional(.string))])
        #expect(get.output.map(\.name) == ["value", "bytes_at", "type", "revision", "modified"])
        #expect(get.output[0].type == .optional(.object))
        #expect(get.output[1].type == .optional(.array(.string)))
        #expect(get.output[2].type == .named("ValueType"))
        #expect(get.doc.hasPrefix("Reads a state, or the part of it at path."))
        let op = try #require(interface.typeAlias(named: "Op"))
        guard case .structure(let fields) = op.type else { Issue.record("Op is not a struct"); return }
        #expect(fields.first { $0.name == "path" }?.doc == "Absent or \"\": the whole value.")
        #expect(interface.typeAlias(named: "ValueType")?.type
            == .enumeration(["null", "bool", "int", "double", "string", "bytes", "array", "object"]))
        #expect(interface.errorType(named: "RevisionMismatch")?.fields.map(\.name) == ["name", "expected", "actual", "index", "message"])
    }

    @Test func parsesTheServiceInterface() throws {
        let interface = try VarlinkInterface(parsing: InterfaceText.orgVarlinkService)
        #expect(interface.name == "org.varlink.service")
        #expect(interface.methods.map(\.name) == ["GetInfo", "GetInterfaceDescription"])
        #expect(interface.errorTypes.map(\.name) == ["InterfaceNotFound", "MethodNotFound", "MethodNotImplemented",
                                                      "InvalidParameter", "PermissionDenied", "ExpectedMore"])
        #expect(interface.errorType(named: "ExpectedMore")?.fields == [])
    }

    /// Every type form of varlink.org's example, with the doc comment rules.
    @Test func parsesEveryTypeForm() throws {
        let text = """
        # The interface's doc.
        interface org.example.types

        # A free-standing comment, followed by a blank line: documents nothing.

        # MyType's doc,
        # two lines.
        type MyType (
           # The bool.
           example_bool: bool,
           example_int: int, # a trailing comment documents nothing
           example_float: float,
           example_string: string,
           example_object: object,
           example_enum: (one, two, three),
           example_struct: (first: int, second: string),
           example_array: []string,
           example_dictionary: [string]string,
           example_stringset: [string](),
           example_nullable: ?string,
           example_nullable_array_struct: ?[](first: int, second: string),
           example_array_of_nullable: []?int,
           example_other_type: MyOtherType
        )
        type MyOtherType(a: bool)
        method Add(a: int, b: int) -> (sum: int)
        method Foo(a: int, b: MyType) -> (bar: MyOtherType, baz: float, more: (i: int, f: float, s: string))
        method None() -> ()
        error UnknownAction (action: string, more_data: MyOtherType)
        error Plain ()
        """
        let interface = try VarlinkInterface(parsing: text)
        #expect(interface.doc == "The interface's doc.")
        let myType = try #require(interface.typeAlias(named: "MyType"))
        #expect(myType.doc == "MyType's doc,\ntwo lines.")
        guard case .structure(let fields) = myType.type else { Issue.record("not a struct"); return }
        #expect(fields.map(\.type.description) == [
            "bool", "int", "float", "string", "object", "(one, two, three)", "(first: int, second: string)",
            "[]string", "[string]string", "[string]()", "?string", "?[](first: int, second: string)", "[]?int",
            "MyOtherType",
        ])
        #expect(fields[0].doc == "The bool.")
        #expect(fields[1].doc == "")
        #expect(fields[2].doc == "")
        #expect(interface.member(named: "MyOtherType")?.doc == "")
        #expect(interface.method(named: "None")?.input == [])
        #expect(interface.errorType(named: "Plain")?.fields == [])
    }

    @Test func acceptsCRLFAndTabs() throws {
        let interface = try VarlinkInterface(parsing: "interface org.example.crlf\r\n\r\n# Doc.\r\nmethod\tPing(\r\n\tx: int\r\n) -> ()\r\n")
        #expect(interface.method(named: "Ping")?.doc == "Doc.")
        #expect(interface.method(named: "Ping")?.input.map(\.name) == ["x"])
    }

    @Test(arguments: [
        // (text, line, column, part of the message)
        ("", 1, 1, "expected 'interface' to start the definition, found end of input"),
        ("# only a comment\n", 2, 1, "expected 'interface'"),
        ("method Foo() -> ()", 1, 1, "expected 'interface' to start the definition, found 'method'"),
        ("interface", 1, 10, "expected a space after 'interface'"),
        ("interface org.example.x", 1, 24, "at least one type, method or error"),
        ("interface Org.example\nmethod A() -> ()", 1, 11, "invalid interface name 'Org.example'"),
        ("interface example\nmethod A() -> ()", 1, 11, "at least two labels"),
        ("interface org.exa_mple\nmethod A() -> ()", 1, 11, "invalid interface name"),
        ("interface org.example method A() -> ()", 1, 23, "expected the end of the line after the interface name"),
        ("interface org.example\nmethod A() -> () method B() -> ()", 2, 18, "each member starts on a line of its own"),
        ("interface org.example\nfunction A() -> ()", 2, 1, "expected 'type', 'method' or 'error', found 'function'"),
        ("interface org.example\ninterface org.other", 2, 1, "one 'interface' line"),
        ("interface org.example\nmethod a() -> ()", 2, 8, "invalid method name 'a': a type, method or error name starts with an uppercase letter"),
        ("interface org.example\nmethod A(a: int) (b: int)", 2, 18, "expected '->' between the input and output of method A, found '('"),
        ("interface org.example\nmethod A(a: int) -> b", 2, 21, "expected '(' to start the output of A"),
        ("interface org.example\nmethod A(a, b) -> ()", 2, 9, "the input of A must be a struct"),
        ("interface org.example\ntype T (a: int, b)", 2, 18, "expected ':' and a type after field 'b' in type T, found ')'"),
        ("interface org.example\ntype T (a, b: int)", 2, 13, "is an enum (its first value has no type), so 'b' cannot have one"),
        ("interface org.example\ntype T (a: int,)", 2, 16, "no ',' may follow the last field"),
        ("interface org.example\ntype T (a: int b: int)", 2, 16, "expected ',' or ')' after 'a' in type T, found 'b'"),
        ("interface org.example\ntype T (a: int", 2, 15, "expected ',' or ')' in type T, found end of input"),
        ("interface org.example\ntype T (a: ??int)", 2, 13, "'??'"),
        ("interface org.example\ntype T (a: ? int)", 2, 13, "no space may follow '?'"),
        ("interface org.example\ntype T (a: [] int)", 2, 14, "no space may follow '[]'"),
        ("interface org.example\ntype T (a: [int]string)", 2, 12, "expected '[]' (array) or '[string]' (map) in type T, found '[int]str'"),
        ("interface org.example\ntype T (a: integer)", 2, 12, "expected a type in type T (bool, int, float, string, object"),
        ("interface org.example\ntype T (a: Missing)", 2, 12, "unknown type 'Missing'"),
        ("interface org.example\nmethod M() -> ()\ntype T (a: M)", 3, 12, "'M' (line 2) is not a type"),
        ("interface org.example\ntype T (a: int)\nerror T ()", 3, 7, "'T' is defined twice (first at line 2)"),
        ("interface org.example\ntype T (a: int, a: string)", 2, 17, "'a' appears twice in type T"),
        ("interface org.example\ntype T (_a: int)", 2, 9, "invalid field name '_a' in type T: a field name starts with a letter"),
        ("interface org.example\ntype T (a__b: int)", 2, 9, "invalid field name 'a__b' in type T: a field name cannot have two \"_\" in a row"),
        ("interface org.example\ntype T (a_: int)", 2, 9, "cannot end with \"_\""),
        ("interface org.example\ntype T []string", 2, 8, "expected '(' to start type T, found '['"),
        ("interface org.example\n# é comment\ntype T (a: int) é", 3, 17, "expected the end of the line after 'T', found 'é'"),
        ("interface org.example\ntype T (a: (b: (c: (d: int))) x)", 2, 31, "expected ',' or ')' after 'a'"),
    ])
    func refusesMalformedIDLWithLineAndColumn(text: String, line: Int, column: Int, message: String) {
        guard let error = idlError(text) else { return }
        #expect(error.line == line, "\(error)")
        #expect(error.column == column, "\(error)")
        #expect(error.message.contains(message), "\(error)")
    }

    @Test func deepNestingIsRefusedNotOverflowed() {
        let depth = 10_000
        let text = "interface org.example\ntype T (a: " + String(repeating: "(a: ", count: depth) + "int" + String(repeating: ")", count: depth + 1)
        let error = idlError(text)
        #expect(error?.message.contains("nest deeper than 64 levels") == true)
    }

    @Test func describesErrorsWithLineAndColumn() {
        let error = IDLError(line: 3, column: 7, message: "boom")
        #expect(error.description == "line 3, column 7: boom")
    }
}

@Suite struct IDLValidationTests {
    private func parametersError(_ method: String, _ text: String,
                                 sourceLocation: SourceLocation = #_sourceLocation) -> VarlinkError? {
        varlinkError(sourceLocation: sourceLocation) {
            try tetherInterface.checkParameters(jsonObject(text), method: method)
        }
    }

    @Test(arguments: [
        ("Get", #"{"name":"a"}"#),
        ("Get", #"{"name":"a","path":null}"#),
        ("Set", #"{"name":"a","value":1}"#),
        ("Set", #"{"name":"a"}"#),                                     // value absent: null
        ("Set", #"{"name":"a","value":"s","bytes_at":[""],"origin":-1}"#),
        ("Transaction", #"{"ops":[]}"#),
        ("Transaction", #"{"ops":[{"op":"remove","name":"a","path":"/x"}],"preconditions":[{"name":"a","revision":3}],"tag":"t"}"#),
        ("Declare", #"{"name":"a","descriptor":{"type":"double","range":{"minimum":0,"maximum":1.5}}}"#),
        ("Watch", #"{"prefix":""}"#),
        ("Stats", #"{}"#),
    ])
    func acceptsGoodParameters(method: String, text: String) throws {
        try tetherInterface.checkParameters(jsonObject(text), method: method)
    }

    @Test(arguments: [
        ("Get", #"{}"#, "name", "is required (string)"),
        ("Get", #"{"name":null}"#, "name", "is required"),
        ("Get", #"{"name":7}"#, "name", "must be a string, not an int (7)"),
        ("Get", #"{"name":"a","paht":"/x"}"#, "paht", "no such parameter (expected one of: name, path)"),
        ("Set", #"{"name":"a","origin":1.5}"#, "origin", "must be an integer, not a number (1.5)"),
        ("Set", #"{"name":"a","bytes_at":"/x"}"#, "bytes_at", "must be an array, not a string"),
        ("Set", #"{"name":"a","bytes_at":["/x",3]}"#, "bytes_at[1]", "must be a string"),
        ("Transaction", #"{}"#, "ops", "is required ([]Op)"),
        ("Transaction", #"{"ops":{}}"#, "ops", "must be an array, not an object"),
        ("Transaction", #"{"ops":[{"op":"set","name":"a"},{"op":"put","name":"b"}]}"#, "ops[1].op", "\"put\" is not one of set, remove"),
        ("Transaction", #"{"ops":[{"op":"set"}]}"#, "ops[0].name", "is required"),
        ("Transaction", #"{"ops":[{"op":"set","name":"a","extra":1}]}"#, "ops[0].extra", "no such parameter"),
        ("Transaction", #"{"ops":[],"preconditions":[{"name":"a","revision":"3"}]}"#, "preconditions[0].revision", "must be an integer"),
        ("Declare", #"{"name":"a","descriptor":{"range":{"minimum":"0"}}}"#, "descriptor.range.minimum", "must be a number"),
        ("Declare", #"{"name":"a","descriptor":{"type":"float"}}"#, "descriptor.type", "\"float\" is not one of null, bool, int, double"),
        ("Declare", #"{"name":"a","descriptor":[]}"#, "descriptor", "must be an object, not an array"),
        ("Stats", #"{"verbose":true}"#, "verbose", "no such parameter (none are defined)"),
    ])
    func refusesBadParametersNamingThem(method: String, text: String, parameter: String, message: String) {
        let error = parametersError(method, text)
        #expect(error?.name == "org.varlink.service.InvalidParameter")
        #expect(error?.parameters["parameter"] == .string(parameter))
        #expect(error?.detail.contains(message) == true, "\(error?.detail ?? "no error")")
    }

    @Test func objectAcceptsAnyJSON() throws {
        for value in ["null", "true", "1", "1.5", "\"s\"", "[1,[2]]", "{\"a\":{}}"] {
            try tetherInterface.checkParameters(jsonObject(#"{"name":"a","value":"# + value + "}"), method: "Set")
        }
    }

    @Test func repliesMayCarryFieldsAddedLater() throws {
        let reply = jsonObject(#"{"revision":1,"changed":false,"added_later":true}"#)
        try tetherInterface.checkReply(reply, method: "Set")
        let strict = varlinkError {
            try tetherInterface.checkReply(reply, method: "Set", allowUnknown: false)
        }
        #expect(strict?.parameters["parameter"] == .string("added_later"))
    }

    @Test func unknownMethodsAreMethodNotFound() {
        let error = parametersError("Frobnicate", "{}")
        #expect(error?.name == "org.varlink.service.MethodNotFound")
        #expect(error?.parameters["method"] == .string("io.tether.Frobnicate"))
    }
}

@Suite struct ServiceTests {
    private func checkError(_ call: Call, sourceLocation: SourceLocation = #_sourceLocation) -> VarlinkError? {
        varlinkError(sourceLocation: sourceLocation) { try VarlinkService.tetherd.check(call) }
    }

    @Test func resolvesGoodCalls() throws {
        #expect(try VarlinkService.tetherd.check(Call(method: "io.tether.Stats")).name == "Stats")
        #expect(try VarlinkService.tetherd.check(Call(method: "org.varlink.service.GetInfo")).name == "GetInfo")
        #expect(try VarlinkService.tetherd.check(Call(method: "io.tether.Watch", parameters: jsonObject(#"{"names":["a"]}"#), more: true)).name == "Watch")
        // more on a method that replies once is allowed: it replies once.
        #expect(try VarlinkService.tetherd.check(Call(method: "io.tether.Stats", more: true)).name == "Stats")
    }

    @Test func namesWhatIsMissing() {
        #expect(checkError(Call(method: "org.example.Nope")) == .interfaceNotFound("org.example"))
        #expect(checkError(Call(method: "io.tether.Nope")) == .methodNotFound("io.tether.Nope"))
        // A type or an error is not a method.
        #expect(checkError(Call(method: "io.tether.Op")) == .methodNotFound("io.tether.Op"))
        #expect(checkError(Call(method: "io.tether.NotFound")) == .methodNotFound("io.tether.NotFound"))
    }

    @Test func watchNeedsMore() {
        let error = checkError(Call(method: "io.tether.Watch", parameters: jsonObject(#"{"names":["a"]}"#)))
        #expect(error?.name == "org.varlink.service.ExpectedMore")
        #expect(error?.parameters.count == 0)
    }

    @Test func parametersAreCheckedBeforeMore() {
        let error = checkError(Call(method: "io.tether.Watch", parameters: jsonObject(#"{"names":"a"}"#)))
        #expect(error?.name == "org.varlink.service.InvalidParameter")
    }

    @Test func parametersCanBeLeftToTheTypedModel() throws {
        let call = Call(method: "io.tether.Get", parameters: jsonObject(#"{"name":7}"#))
        #expect(try VarlinkService.tetherd.check(call, checkingParameters: false).name == "Get")
        #expect(checkError(call)?.parameters["parameter"] == .string("name"))
        // Resolution and ExpectedMore are still checked.
        #expect(varlinkError { try VarlinkService.tetherd.check(Call(method: "io.tether.Watch"), checkingParameters: false) }?.name
            == "org.varlink.service.ExpectedMore")
        #expect(varlinkError { try VarlinkService.tetherd.check(Call(method: "io.tether.Nope"), checkingParameters: false) }?.name
            == "org.varlink.service.MethodNotFound")
    }

    @Test func upgradeIsRefused() {
        let error = checkError(Call(method: "io.tether.Get", parameters: jsonObject(#"{"name":"a"}"#), upgrade: true))
        #expect(error?.name == "io.tether.InvalidCall")
        #expect(error?.parameters["field"] == .string("upgrade"))
    }

    @Test func describesItsInterfaces() throws {
        #expect(VarlinkService.tetherd.interfaceNames == ["org.varlink.service", "io.tether"])
        #expect(try VarlinkService.tetherd.describe("io.tether") == InterfaceText.ioTether)
        #expect(try VarlinkService.tetherd.describe("org.varlink.service") == InterfaceText.orgVarlinkService)
        #expect(varlinkError { try VarlinkService.tetherd.describe("io.nope") } == .interfaceNotFound("io.nope"))
    }
}

@Suite struct ErrorNameTests {
    /// Every Tether error code has an io.tether error of the same shape, and
    /// the name carries the code back.
    @Test(arguments: ErrorCode.allCases)
    func everyCodeHasADeclaredError(code: ErrorCode) throws {
        let error = VarlinkError(TetherError(code, "what went wrong"), name: "app.theme", op: 2)
        #expect(error.name == "io.tether." + VarlinkError.errorName(of: code))
        let declared = try #require(tetherInterface.errorType(named: VarlinkError.errorName(of: code)))
        #expect(declared.fields == [IDLField(name: "message", type: .string), IDLField(name: "name", type: .optional(.string)),
                                    IDLField(name: "op", type: .optional(.int))])
        try tetherInterface.checkError(error.parameters, error: declared.name, allowUnknown: false)
        #expect(error.tetherError == TetherError(code, "what went wrong"))
        #expect(text(.object(error.parameters)) == #"{"message":"what went wrong","name":"app.theme","op":2}"#)
        // Through a reply and back.
        var out: [UInt8] = []
        try error.reply.writeJSON(into: &out)
        #expect(VarlinkError(reply: try Reply(parsing: out))?.tetherError?.code == code)
    }

    @Test func errorNamesAreDistinct() {
        #expect(Set(ErrorCode.allCases.map(VarlinkError.errorName)).count == ErrorCode.allCases.count)
    }

    @Test func io_tethersOwnErrorsMatchTheirDeclarations() throws {
        let errors: [VarlinkError] = [
            .revisionMismatch(name: "a", expected: 3, actual: 4, index: 0),
            .revisionMismatch(name: "a", expected: 3, actual: 0, index: 1),
            .revisionMismatch(name: "a", expected: 0, actual: 4, index: 2),
            .limitExceeded(.nameLength, maximum: 256, actual: 300, "too long"),
            .invalidCall(field: "method", "no method"),
            .invalidCall(field: nil, "not an object"),
            .accessDenied(name: "secret", "uid 1000 may only read \"public.\""),
            .accessDenied(name: nil, "uid 1000 may not connect"),
        ]
        for error in errors {
            let member = String(error.name.dropFirst("io.tether.".count))
            try tetherInterface.checkError(error.parameters, error: member, allowUnknown: false)
            #expect(error.tetherError == nil)
            #expect(!error.detail.isEmpty)
        }
        #expect(errors[1].detail == "state \"a\" does not exist; the precondition expected revision 3")
        #expect(Set(VarlinkError.Limit.allCases.map(\.rawValue))
            == Set(["message", "value", "ops", "preconditions", "names", "name_length", "connections", "input", "tag", "states", "commit"]))
        #expect(tetherInterface.typeAlias(named: "Limit")?.type == .enumeration(VarlinkError.Limit.allCases.map(\.rawValue)))
    }

    @Test func standardErrorsMatchOrgVarlinkService() throws {
        let errors: [VarlinkError] = [
            .interfaceNotFound("a.b"), .methodNotFound("a.b.C"), .methodNotImplemented("a.b.C"),
            .invalidParameter("x", "bad"), .permissionDenied("no"), .expectedMore("io.tether.Watch"),
        ]
        for error in errors {
            #expect(error.name.hasPrefix("org.varlink.service."))
            let member = String(error.name.dropFirst("org.varlink.service.".count))
            try serviceInterface.checkError(error.parameters, error: member, allowUnknown: false)
        }
    }

    @Test func describesItself() {
        #expect(VarlinkError.invalidParameter("ops[0].name", "is required").description
            == #"org.varlink.service.InvalidParameter {"parameter":"ops[0].name"}: is required"#)
        #expect(VarlinkError(TetherError(.notFound, "no state")).description
            == #"io.tether.NotFound {"message":"no state"}"#)
    }
}
