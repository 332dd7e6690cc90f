import Testing
import TetherCore

private func pointer(_ text: String) throws(TetherError) -> JSONPointer { try JSONPointer(parsing: text) }

/// The error `body` throws; records an issue when it throws nothing.
private func thrown<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> TetherError? {
    do {
        _ = try body()
        Issue.record("expected an error", sourceLocation: sourceLocation)
        return nil
    } catch let error as TetherError {
        return error
    } catch {
        Issue.record("expected a TetherError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// RFC 6901 section 5's example document.
private let rfcDocument: Value = .object(ValueObject([
    "foo": .array([.string("bar"), .string("baz")]),
    "": .int(0),
    "a/b": .int(1),
    "c%d": .int(2),
    "e^f": .int(3),
    "g|h": .int(4),
    "i\\j": .int(5),
    "k\"l": .int(6),
    " ": .int(7),
    "m~n": .int(8),
]))

/// {"a": {"b": [10, {"c": true}], "n": 5, "s": "text"}, "list": [1, 2, 3]}
private let sample: Value = .object(ValueObject([
    "a": .object(ValueObject([
        "b": .array([.int(10), .object(ValueObject(["c": .bool(true)]))]),
        "n": .int(5),
        "s": .string("text"),
    ])),
    "list": .array([.int(1), .int(2), .int(3)]),
]))

private func keys(_ value: Value) -> [String] {
    guard case .object(let object) = value else { return [] }
    return object.members.keys.map(\.string)
}

@Suite struct ValuePathReadTests {
    @Test(arguments: [
        ("", rfcDocument),
        ("/foo", .array([.string("bar"), .string("baz")])),
        ("/foo/0", .string("bar")),
        ("/foo/1", .string("baz")),
        ("/", .int(0)),
        ("/a~1b", .int(1)),
        ("/c%d", .int(2)),
        ("/e^f", .int(3)),
        ("/g|h", .int(4)),
        ("/i\\j", .int(5)),
        ("/k\"l", .int(6)),
        ("/ ", .int(7)),
        ("/m~0n", .int(8)),
    ] as [(String, Value)])
    func readsRFC6901Examples(text: String, expected: Value) throws {
        #expect(try rfcDocument.value(at: pointer(text)) == expected)
        #expect(try rfcDocument.valueIfPresent(at: pointer(text)) == expected)
    }

    @Test func readsNestedValues() throws {
        #expect(try sample.value(at: pointer("/a/b/1/c")) == .bool(true))
        #expect(try sample.value(at: pointer("/a/b/0")) == .int(10))
        #expect(try sample.value(at: pointer("/list/2")) == .int(3))
        #expect(try Value.int(3).value(at: .root) == .int(3))
    }

    @Test func missingMemberIsNotFound() throws {
        let error = thrown { try sample.value(at: pointer("/a/x")) }
        #expect(error?.code == .notFound)
        #expect(error?.message == #"/a/x: no member "x" at /a"#)

        let atRoot = thrown { try sample.value(at: pointer("/zz/y")) }
        #expect(atRoot?.code == .notFound)
        #expect(atRoot?.message == #"/zz/y: no member "zz" at the root"#)
    }

    @Test func indexPastTheEndIsOutOfRange() throws {
        for text in ["/list/3", "/list/4", "/list/99999999999999999999999999", "/a/b/2/c"] {
            let error = thrown { try sample.value(at: pointer(text)) }
            #expect(error?.code == .outOfRange, "\(text)")
        }
        let error = thrown { try sample.value(at: pointer("/list/3")) }
        #expect(error?.message == "/list/3: index 3 is out of range for the array at /list, which has 3 elements")
    }

    @Test(arguments: ["-", "01", "00", "+1", "-1", " 1", "1 ", "1.0", "1e0", "", "x", "0x1", "١"])
    func invalidIndexTokenIsBadPath(token: String) {
        let path = JSONPointer(tokens: ["list", token])
        let error = thrown { try sample.value(at: path) }
        #expect(error?.code == .badPath, "token \(token)")
        #expect(error?.message.hasPrefix("\(path): ") == true)
        #expect(sample.valueIfPresent(at: path) == nil)
    }

    @Test func traversingIntoAScalarIsWrongType() throws {
        let error = thrown { try sample.value(at: pointer("/a/n/b")) }
        #expect(error?.code == .wrongType)
        #expect(error?.message == "/a/n/b: /a/n is an int, not an object or array")

        let scalars: [(Value, String)] = [
            (.null, "null"), (.bool(false), "a bool"), (.int(1), "an int"), (.double(1), "a double"),
            (.string("{}"), "a string"), (.bytes([1]), "a bytes value"),
        ]
        for (scalar, name) in scalars {
            let error = thrown { try scalar.value(at: pointer("/0")) }
            #expect(error?.code == .wrongType)
            #expect(error?.message == "/0: the root is \(name), not an object or array")
        }
    }

    @Test func valueIfPresentIsNilForEveryFailure() throws {
        for text in ["/a/x", "/list/3", "/list/-", "/list/01", "/a/n/b", "/a/s/0", "/zz"] {
            #expect(try sample.valueIfPresent(at: pointer(text)) == nil, "\(text)")
        }
        #expect(try sample.valueIfPresent(at: pointer("/a/s")) == .string("text"))
        #expect(try Value.null.valueIfPresent(at: pointer("")) == .null)
    }
}

@Suite struct ValuePathWriteTests {
    @Test func setAtRootReplacesEverything() throws {
        var value = sample
        try value.set(.string("new"), at: .root)
        #expect(value == .string("new"))
    }

    @Test func setReplacesMemberInPlaceOfOrder() throws {
        var value = sample
        try value.set(.int(1), at: pointer("/a"))
        #expect(keys(value) == ["a", "list"])
        #expect(try value.value(at: pointer("/a")) == .int(1))
    }

    @Test func setAddsNewMemberAtTheEnd() throws {
        var value = sample
        try value.set(.null, at: pointer("/zz"))
        try value.set(.bool(true), at: pointer("/0"))
        #expect(keys(value) == ["a", "list", "zz", "0"])
        #expect(try value.value(at: pointer("/zz")) == .null)
        try value.set(.int(7), at: pointer("/a/b/1/d"))
        #expect(try value.value(at: pointer("/a/b/1")) == .object(ValueObject(["c": .bool(true), "d": .int(7)])))
    }

    @Test func setInArraysReplacesOrAppends() throws {
        var value = sample
        try value.set(.int(20), at: pointer("/list/1"))
        #expect(try value.value(at: pointer("/list")) == .array([.int(1), .int(20), .int(3)]))
        try value.set(.int(4), at: pointer("/list/3"))
        try value.set(.int(5), at: pointer("/list/-"))
        #expect(try value.value(at: pointer("/list")) == .array([.int(1), .int(20), .int(3), .int(4), .int(5)]))

        var empty = Value.array([])
        try empty.set(.string("x"), at: pointer("/0"))
        try empty.set(.string("y"), at: pointer("/-"))
        #expect(empty == .array([.string("x"), .string("y")]))
    }

    @Test func setErrorsAndLeavesValueUnchanged() throws {
        let cases: [(String, ErrorCode, String?)] = [
            ("/list/4", .outOfRange, "/list/4: index 4 is out of range for the array at /list, which has 3 elements"),
            ("/list/99999999999999999999", .outOfRange, nil),
            ("/list/01", .badPath, nil),
            ("/list/x", .badPath, nil),
            ("/missing/x", .notFound, #"/missing/x: no member "missing" at the root"#),
            ("/a/missing/x", .notFound, #"/a/missing/x: no member "missing" at /a"#),
            ("/a/b/1/c/d", .wrongType, "/a/b/1/c/d: /a/b/1/c is a bool, not an object or array"),
            ("/a/n/x", .wrongType, "/a/n/x: /a/n is an int, not an object or array"),
            ("/a/b/5/c", .outOfRange, nil),
            ("/a/b/-/c", .badPath, nil),  // "-" names no element, so nothing can be below it
            ("/a/b/1/c/d/e/f", .wrongType, nil),
        ]
        for (text, code, message) in cases {
            var value = sample
            let error = thrown { try value.set(.int(0), at: pointer(text)) }
            #expect(error?.code == code, "\(text)")
            if let message { #expect(error?.message == message) }
            #expect(value == sample, "\(text) changed the value")
            #expect(keys(value) == keys(sample))
            #expect(try value.jsonString() == sample.jsonString(), "order kept too")
        }
    }

    @Test func setOnScalarRootIsWrongType() throws {
        var value = Value.string("s")
        let error = thrown { try value.set(.int(1), at: pointer("/a")) }
        #expect(error?.code == .wrongType)
        #expect(error?.message == "/a: the root is a string, not an object or array")
        #expect(value == .string("s"))
    }

    @Test func setHasValueSemantics() throws {
        let original = sample
        var copy = original
        try copy.set(.int(99), at: pointer("/a/b/0"))
        #expect(try original.value(at: pointer("/a/b/0")) == .int(10))
        #expect(try copy.value(at: pointer("/a/b/0")) == .int(99))
    }

    @Test func setMutatesUniqueStorageInPlace() throws {
        var value: Value = .object(ValueObject(["outer": .array([.array(Array(repeating: .int(0), count: 1000))])]))
        func innerBuffer(_ v: Value) -> UnsafeRawPointer? {
            guard case .object(let o) = v, case .array(let outer)? = o["outer"], case .array(let inner) = outer[0] else { return nil }
            return inner.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        }
        func outerBuffer(_ v: Value) -> UnsafeRawPointer? {
            guard case .object(let o) = v, case .array(let outer)? = o["outer"] else { return nil }
            return outer.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        }
        let innerBefore = innerBuffer(value)
        let outerBefore = outerBuffer(value)
        try value.set(.int(7), at: pointer("/outer/0/500"))
        #expect(innerBuffer(value) == innerBefore, "the 1000-element array was copied")
        #expect(outerBuffer(value) == outerBefore)
        #expect(try value.value(at: pointer("/outer/0/500")) == .int(7))
        try value.remove(at: pointer("/outer/0/999"))
        #expect(innerBuffer(value) == innerBefore)
        // A failed write must not copy either.
        _ = thrown { try value.set(.int(1), at: pointer("/outer/0/5000")) }
        #expect(innerBuffer(value) == innerBefore)
    }

    @Test func manyWritesIntoLargeContainersStayLinear() throws {
        // Were each write to copy the containers on its path, this would copy
        // 10^10 array elements and 10^9 object members.
        let count = 100_000
        var members = ValueObject()
        for i in 0..<30_000 { members["k\(i)"] = .array([.null]) }
        members["list"] = .array([.array(Array(repeating: .null, count: count))])
        var value = Value.object(members)
        for i in 0..<count {
            try value.set(.int(Int64(i)), at: JSONPointer(tokens: ["list", "0", String(i)]))
        }
        for i in 0..<30_000 {
            try value.set(.int(Int64(i)), at: JSONPointer(tokens: ["k\(i)", "-"]))
            try value.remove(at: JSONPointer(tokens: ["k\(i)", "0"]))
        }
        #expect(try value.value(at: pointer("/list/0/99999")) == .int(99999))
        #expect(try value.value(at: pointer("/k29999")) == .array([.int(29999)]))
    }

    @Test func removeObjectMemberKeepsOtherOrder() throws {
        var value: Value = .object(ValueObject(["x": .int(1), "y": .int(2), "z": .int(3)]))
        let removed = try value.remove(at: pointer("/y"))
        #expect(removed == .int(2))
        #expect(keys(value) == ["x", "z"])
    }

    @Test func removeArrayElementShiftsLaterOnes() throws {
        var value = sample
        #expect(try value.remove(at: pointer("/list/0")) == .int(1))
        #expect(try value.value(at: pointer("/list")) == .array([.int(2), .int(3)]))
        #expect(try value.remove(at: pointer("/a/b/1/c")) == .bool(true))
        #expect(try value.value(at: pointer("/a/b/1")) == .object(ValueObject()))
        #expect(try value.remove(at: pointer("/a")) == sample.value(at: pointer("/a")).with { try $0.remove(at: pointer("/b/1/c")) })
    }

    @Test func removeErrorsAndLeavesValueUnchanged() throws {
        let cases: [(String, ErrorCode)] = [
            ("", .invalidArgument),
            ("/nope", .notFound),
            ("/a/nope", .notFound),
            ("/list/3", .outOfRange),
            ("/list/-", .badPath),
            ("/list/01", .badPath),
            ("/a/n/x", .wrongType),
            ("/a/b/9/c", .outOfRange),
            ("/a/q/r", .notFound),
        ]
        for (text, code) in cases {
            var value = sample
            let error = thrown { try value.remove(at: pointer(text)) }
            #expect(error?.code == code, "\(text)")
            #expect(value == sample)
            #expect(try value.jsonString() == sample.jsonString())
        }
        var value = sample
        let root = thrown { try value.remove(at: .root) }
        #expect(root?.message.contains("root") == true)
    }

    @Test func deepPathsUseNoRecursion() throws {
        // A pointer 50,000 tokens deep through a value as deep: walking it must
        // not depend on the call stack.
        let depth = 50_000
        var value = Value.array([])
        for _ in 0..<depth { value = .array([value]) }
        let tokens = Array(repeating: "0", count: depth)
        #expect(try value.value(at: JSONPointer(tokens: tokens)) == .array([]))
        try value.set(.string("bottom"), at: JSONPointer(tokens: tokens + ["-"]))
        #expect(try value.value(at: JSONPointer(tokens: tokens + ["0"])) == .string("bottom"))
        #expect(value.valueIfPresent(at: JSONPointer(tokens: tokens + ["1"])) == nil)
        let error = thrown { try value.set(.null, at: JSONPointer(tokens: tokens + ["0", "x"])) }
        #expect(error?.code == .wrongType)
        #expect(try value.remove(at: JSONPointer(tokens: tokens + ["0"])) == .string("bottom"))
        #expect(try value.value(at: JSONPointer(tokens: tokens)) == .array([]))
        unnest(&value)
    }
}

/// Frees a deeply nested array from the top down: freeing it whole would
/// recurse once per level.
func unnest(_ value: inout Value) {
    while case .array(let elements) = value, let first = elements.first {
        value = first
    }
}

private extension Value {
    func with(_ change: (inout Value) throws -> Void) rethrows -> Value {
        var copy = self
        try change(&copy)
        return copy
    }
}
