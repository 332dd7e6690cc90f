import Testing
import TetherCore

private func json(_ value: Value, pretty: Bool = false) throws -> String {
    try value.jsonString(pretty: pretty)
}

private func object(_ members: KeyValuePairs<String, Value>) -> Value {
    var result = ValueObject()
    for (key, value) in members { result[key] = value }
    return .object(result)
}

/// SplitMix64: a fixed sequence, so any failure reproduces.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct JSONWriterTests {
    @Test func writesCompactByDefault() throws {
        let value = object(["a": .int(1), "b": .array([.bool(true), .null])])
        #expect(try json(value) == #"{"a":1,"b":[true,null]}"#)
    }

    @Test func writesScalars() throws {
        #expect(try json(.null) == "null")
        #expect(try json(.bool(true)) == "true")
        #expect(try json(.bool(false)) == "false")
        #expect(try json(.int(0)) == "0")
        #expect(try json(.int(-1)) == "-1")
        #expect(try json(.int(1_234_567_890)) == "1234567890")
        #expect(try json(.int(.max)) == "9223372036854775807")
        #expect(try json(.int(.min)) == "-9223372036854775808")
        #expect(try json(.string("hi")) == "\"hi\"")
        #expect(try json(.array([])) == "[]")
        #expect(try json(.object(ValueObject())) == "{}")
    }

    @Test func writesMembersInInsertionOrder() throws {
        var members = ValueObject()
        members["z"] = .int(1)
        members["a"] = .int(2)
        members["m"] = .int(3)
        members["z"] = .int(4)  // replacing keeps the place
        #expect(try json(.object(members)) == #"{"z":4,"a":2,"m":3}"#)
    }

    @Test func writesPrettyWithTwoSpaces() throws {
        let value = object([
            "a": .int(1),
            "b": .array([.bool(true), .null, .array([]), .object(ValueObject())]),
            "c": object(["d": .string("x"), "e": .array([.array([.int(2)])])]),
            "f": .object(ValueObject()),
        ])
        let expected = """
            {
              "a": 1,
              "b": [
                true,
                null,
                [],
                {}
              ],
              "c": {
                "d": "x",
                "e": [
                  [
                    2
                  ]
                ]
              },
              "f": {}
            }
            """
        #expect(try json(value, pretty: true) == expected)
        #expect(try json(.array([]), pretty: true) == "[]")
        #expect(try json(.int(3), pretty: true) == "3")
        #expect(try json(.array([.int(1)]), pretty: true) == "[\n  1\n]")
    }

    @Test func escapesStrings() throws {
        #expect(try json(.string("\"\\")) == #""\"\\""#)
        #expect(try json(.string("\n\r\t\u{08}\u{0C}")) == #""\n\r\t\b\f""#)
        #expect(try json(.string("\u{00}\u{01}\u{0B}\u{1A}\u{1F}")) == #""\u0000\u0001\u000b\u001a\u001f""#)
        #expect(try json(.string("/")) == #""/""#, "the solidus needs no escape")
        #expect(try json(.string("\u{7F} é中😀\u{2028}")) == "\"\u{7F} é中😀\u{2028}\"", "non-ASCII is written raw")
        #expect(try json(.string("a\0b")) == #""a\u0000b""#)
        #expect(try json(.string("")) == #""""#)
    }

    @Test func escapesKeys() throws {
        #expect(try json(object(["a\"b": .int(1), "\n": .int(2), "é": .int(3)])) == #"{"a\"b":1,"\n":2,"é":3}"#)
    }

    @Test func everyControlCharacterRoundTrips() throws {
        let all = String(decoding: Array(0..<0x80 as Range<UInt8>), as: UTF8.self)
        let text = try json(.string(all))
        #expect(!text.utf8.dropFirst().dropLast().contains { $0 < 0x20 })
        #expect(try Value(json: text) == .string(all))
    }

    @Test(arguments: [
        (1.0, "1.0"),
        (-1.0, "-1.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (100.0, "100.0"),
        (0.1, "0.1"),
        (1.5, "1.5"),
        (1e-5, "1e-05"),
        (1e-7, "1e-07"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16"),
        (1e20, "1e+20"),
        (1e300, "1e+300"),
        (9_007_199_254_740_992.0, "9007199254740992.0"),
        (.leastNonzeroMagnitude, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.30000000000000004, "0.30000000000000004"),
    ])
    func writesShortestDoubles(value: Double, expected: String) throws {
        let text = try json(.double(value))
        #expect(text == expected)
        guard case .double(let back) = try Value(json: text) else { Issue.record("\(text) did not read back as a double"); return }
        #expect(back.bitPattern == value.bitPattern)
    }

    @Test func doublesRoundTripExactly() throws {
        var rng = SeededGenerator(state: 42)
        var checked = 0
        var out: [UInt8] = []
        while checked < 20_000 {
            // Random bit patterns cover every exponent; decimals cover common values.
            let d = checked % 2 == 0
                ? Double(bitPattern: rng.next())
                : Double(Int64.random(in: -1_000_000...1_000_000, using: &rng)) / 1000
            guard d.isFinite else { continue }
            out.removeAll(keepingCapacity: true)
            try Value.double(d).writeJSON(into: &out)
            let back = try parseJSON(bytes: out)
            guard case .double(let e) = back, e.bitPattern == d.bitPattern else {
                Issue.record("\(d) wrote \(String(decoding: out, as: UTF8.self)) and read back \(back)")
                return
            }
            checked += 1
        }
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, .signalingNaN])
    func nonFiniteDoublesAreOutOfRange(d: Double) throws {
        let value = object(["a": .array([.int(1), object(["b/c": .double(d)])])])
        var out = Array("prefix".utf8)
        let error = #expect(throws: TetherError.self) { try value.writeJSON(into: &out) }
        #expect(error?.code == .outOfRange)
        #expect(error?.message == "JSON cannot represent the double \(d) at /a/1/b~1c")
        #expect(out == Array("prefix".utf8), "a failed write leaves the buffer as it was")

        let atRoot = #expect(throws: TetherError.self) { try Value.double(d).jsonString(pretty: true) }
        #expect(atRoot?.message == "JSON cannot represent the double \(d) at the root")
    }

    @Test func nonFinitePathPointsAtTheRightElement() throws {
        let value = Value.array([.double(1), .array([]), .array([.double(2), .double(.nan)])])
        let error = #expect(throws: TetherError.self) { try value.jsonString() }
        #expect(error?.message == "JSON cannot represent the double nan at /2/1")
    }

    @Test func writeJSONAppends() throws {
        var out = Array("x=".utf8)
        try Value.array([.int(1)]).writeJSON(into: &out)
        try Value.bool(true).writeJSON(into: &out, pretty: true)
        #expect(String(decoding: out, as: UTF8.self) == "x=[1]true")
    }

    @Test func bytesAreWrittenAsBase64() throws {
        #expect(try json(.bytes([])) == #""""#)
        #expect(try json(.bytes(Array("f".utf8))) == #""Zg==""#)
        #expect(try json(.bytes(Array("fo".utf8))) == #""Zm8=""#)
        #expect(try json(.bytes(Array("foo".utf8))) == #""Zm9v""#)
        #expect(try json(.bytes(Array("foobar".utf8))) == #""Zm9vYmFy""#)
        #expect(try json(.bytes([0xFB, 0xFF, 0xBF])) == #""+/+/""#, "standard alphabet, not URL-safe")
        #expect(try json(object(["k": .bytes([0, 0, 0])])) == #"{"k":"AAAA"}"#)
    }

    @Test func roundTripsThroughTheParser() throws {
        let value = object([
            "null": .null, "t": .bool(true), "f": .bool(false),
            "ints": .array([.int(0), .int(-5), .int(.max), .int(.min)]),
            "doubles": .array([.double(1), .double(-0.0), .double(1e-300), .double(6.02214076e23)]),
            "s": .string("line\nquote\" tab\t é 😀 \u{0}"),
            "nested": object(["a": .array([object(["b": .array([])])]), "": .object(ValueObject())]),
        ])
        for pretty in [false, true] {
            let text = try json(value, pretty: pretty)
            let back = try Value(json: text)
            #expect(back == value)
            #expect(try json(back, pretty: pretty) == text, "writing is stable")
        }
    }

    @Test(arguments: [
        #"{"a":1,"b":[true,null]}"#,
        #"[1,-2,3.5,1e+20,"x",{},[],{"":null}]"#,
        #""\u0000\"\\\n""#,
        #"{"z":{"y":{"x":[[[]]]}}}"#,
    ])
    func canonicalTextIsReproduced(text: String) throws {
        #expect(try json(Value(json: text)) == text)
    }

    @Test func veryDeepValuesAreWrittenWithoutRecursion() throws {
        let depth = 100_000
        var value = Value.int(1)
        for _ in 0..<depth { value = .array([value]) }
        let text = try json(value)
        #expect(text == String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth))
        // Pretty output grows with the square of the depth: check it on a shallower value.
        var shallower = Value.int(1)
        for _ in 0..<1_000 { shallower = .array([shallower]) }
        let pretty = try json(shallower, pretty: true)
        #expect(pretty.hasPrefix("[\n  [\n    [\n"))
        #expect(pretty.hasSuffix("\n    ]\n  ]\n]"))
        #expect(pretty.contains("\n" + String(repeating: " ", count: 2_000) + "1\n"))
        unnest(&shallower)
        var error: Value = value
        try error.set(.double(.infinity), at: JSONPointer(tokens: Array(repeating: "0", count: depth)))
        let thrown = #expect(throws: TetherError.self) { try error.jsonString() }
        #expect(thrown?.message.hasPrefix("JSON cannot represent the double inf at /0/0/0/") == true)
        unnest(&value)
        unnest(&error)
    }
}

@Suite struct Base64Tests {
    @Test(arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ])
    func rfc4648Vectors(plain: String, encoded: String) throws {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(try Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func everyByteValueRoundTrips() throws {
        for length in 0..<260 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(try Base64.decode(Base64.encode(bytes)) == bytes)
        }
        let all = (0...255).map(UInt8.init)
        let text = Base64.encode(all)
        #expect(text.utf8.allSatisfy { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "=") || ($0 >= 0x30 && $0 <= 0x7A) })
        #expect(try Base64.decode(text) == all)
    }

    @Test(arguments: [
        "Z", "Zg", "Zg=", "Zm9vY", "Zg==Zg==", "=Zg=", "Z===", "Zg=a", "Zm 9v", "Zm9v\n",
        "Zm-_", "Zh==", "Zm9=", "Zm8 ", "ÿÿÿÿ",
    ])
    func strictDecodingRejects(text: String) {
        let error = #expect(throws: TetherError.self) { try Base64.decode(text) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.hasPrefix("invalid base64: ") == true)
    }
}
