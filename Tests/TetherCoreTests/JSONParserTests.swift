import Testing
import TetherCore

/// The error parsing `text` gives; records an issue when it parses.
private func parseError(_ text: String, maxDepth: Int = Value.defaultMaxJSONDepth,
                        sourceLocation: SourceLocation = #_sourceLocation) -> TetherError? {
    do {
        let value = try Value(json: text, maxDepth: maxDepth)
        Issue.record("parsed \(text.debugDescription) as \(value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

private func parseError(bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> TetherError? {
    do {
        let value = try parseJSON(bytes: bytes)
        Issue.record("parsed \(bytes) as \(value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// Parses bytes through the raw-buffer entry point.
func parseJSON(bytes: [UInt8], maxDepth: Int = Value.defaultMaxJSONDepth) throws(TetherError) -> Value {
    let result = bytes.withUnsafeBytes { buffer in
        Result { () throws(TetherError) in try Value(json: buffer, maxDepth: maxDepth) }
    }
    return try result.get()
}

@Suite struct JSONParserScalarTests {
    @Test(arguments: [
        ("null", Value.null),
        ("true", .bool(true)),
        ("false", .bool(false)),
        ("0", .int(0)),
        ("-0", .int(0)),
        ("7", .int(7)),
        ("-7", .int(-7)),
        ("1234567890", .int(1_234_567_890)),
        ("9223372036854775807", .int(.max)),
        ("-9223372036854775808", .int(.min)),
        ("1.0", .double(1)),
        ("1e2", .double(100)),
        ("1E2", .double(100)),
        ("1e+2", .double(100)),
        ("1e-2", .double(0.01)),
        ("-1.5e-3", .double(-0.0015)),
        ("0.5", .double(0.5)),
        ("0e0", .double(0)),
        ("1e007", .double(1e7)),
        ("\"\"", .string("")),
        ("\"abc\"", .string("abc")),
    ])
    func parsesTopLevelScalars(text: String, expected: Value) throws {
        let value = try Value(json: text)
        #expect(value == expected)
        #expect(value.type == expected.type)
    }

    @Test func integersBeyondInt64BecomeDoubles() throws {
        #expect(try Value(json: "9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try Value(json: "-9223372036854775809") == .double(-0x1p63), "rounds to -2^63")
        #expect(try Value(json: "18446744073709551616") == .double(18_446_744_073_709_551_616))
        #expect(try Value(json: "99999999999999999999") == .double(1e20))
        #expect(try Value(json: "123456789012345678901234567890") == .double(1.2345678901234568e29))
        #expect(try Value(json: "-0.0") == .double(-0.0))
        guard case .double(let negativeZero) = try Value(json: "-0.0") else { Issue.record("not a double"); return }
        #expect(negativeZero.sign == .minus)
    }

    @Test func doubleConversionIsCorrectlyRounded() throws {
        let cases: [(String, Double)] = [
            ("0.1", 0.1),
            ("5e-324", .leastNonzeroMagnitude),
            ("2.2250738585072014e-308", .leastNormalMagnitude),
            ("1.7976931348623157e308", .greatestFiniteMagnitude),
            ("9007199254740993.0", 9_007_199_254_740_992),  // halfway: ties to even
            ("2.4703282292062328e-324", .leastNonzeroMagnitude),  // just above half of the smallest: rounds up
            ("1e-400", 0),  // underflow rounds to zero; it is not out of range
            ("0.30000000000000004", 0.1 + 0.2),
        ]
        for (text, expected) in cases {
            guard case .double(let d) = try Value(json: text) else { Issue.record("\(text) is not a double"); continue }
            #expect(d.bitPattern == expected.bitPattern, "\(text) -> \(d)")
        }
    }

    @Test(arguments: ["1e400", "-1e400", "1.8e308", "123456789e999999999999", String(repeating: "9", count: 400)])
    func numbersTooLargeForADoubleAreRejected(text: String) {
        let error = parseError(text)
        #expect(error?.code == .badJSON)
        #expect(error?.message.hasPrefix("invalid JSON at line 1, column 1 (byte 0): the number ") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("too large for a double") == true)
    }

    @Test func whitespaceAroundValuesIsAllowed() throws {
        #expect(try Value(json: " \t\r\n 1 \n\t\r ") == .int(1))
        #expect(try Value(json: "[ 1 , 2 ]") == .array([.int(1), .int(2)]))
        #expect(try Value(json: "{ \"a\" : 1 , \"b\"\n:\n2 }") == .object(ValueObject(["a": .int(1), "b": .int(2)])))
    }
}

@Suite struct JSONParserStringTests {
    @Test(arguments: [
        (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{08}\u{0C}\n\r\t"),
        (#""\u0041\u00e9\u00E9\u4e2d""#, "Aéé中"),
        (#""\ud83d\ude00""#, "😀"),
        (#""\uD83D\uDE00x""#, "😀x"),
        (#""\udbff\udfff""#, "\u{10FFFF}"),
        (#""a\u0000b""#, "a\0b"),
        (#""\u001f""#, "\u{1F}"),
        (#""\uFFFF\uFEFF""#, "\u{FFFF}\u{FEFF}"),
        ("\"é中😀\"", "é中😀"),
        ("\"\u{7F}\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{FFFD}\u{10000}\u{10FFFF}\"",
         "\u{7F}\u{80}\u{7FF}\u{800}\u{D7FF}\u{E000}\u{FFFD}\u{10000}\u{10FFFF}"),
        (#""long plain text with an escape near the end\n""#, "long plain text with an escape near the end\n"),
        (#""\nescape at the start of a long string""#, "\nescape at the start of a long string"),
    ])
    func decodesStrings(json: String, expected: String) throws {
        let value = try Value(json: json)
        #expect(value == .string(expected))
        // Same scalars, not just canonically equivalent text.
        if case .string(let s) = value { #expect(Array(s.unicodeScalars) == Array(expected.unicodeScalars)) }
    }

    @Test func embeddedNulSurvives() throws {
        guard case .string(let s) = try Value(json: #""\u0000\u0000""#) else { Issue.record("not a string"); return }
        #expect(Array(s.utf8) == [0, 0])
    }

    @Test func escapedStringsDoNotLeakIntoEachOther() throws {
        let value = try Value(json: #"["a\nb", "plain", "c\td", "\u00e9", "", "x\\"]"#)
        #expect(value == .array(["a\nb", "plain", "c\td", "é", "", "x\\"].map(Value.string)))
    }

    @Test func specialBytesAreFoundAtEveryOffset() throws {
        // The string scanner looks at eight bytes at a time: put each kind of
        // special byte at every offset within and across those words.
        for offset in 0..<20 {
            let pad = String(repeating: "a", count: offset)
            let tail = String(repeating: "z", count: 19 - offset)
            #expect(try Value(json: "\"\(pad)\\n\(tail)\"") == .string(pad + "\n" + tail))
            #expect(try Value(json: "\"\(pad)é\(tail)\"") == .string(pad + "é" + tail))
            #expect(try Value(json: "\"\(pad)\"") == .string(pad))
            #expect(parseError("\"\(pad)\n\(tail)\"")?.message.contains("(byte \(offset + 1)): control character U+000A") == true)
            #expect(parseError("\"\(pad)\u{1F}\(tail)\"")?.code == .badJSON)
            #expect(parseError(bytes: Array("\"\(pad)".utf8) + [0xFF] + Array("\(tail)\"".utf8))?.code == .badJSON)
            #expect(parseError(bytes: Array("\"\(pad)".utf8) + [0x00] + Array("\(tail)\"".utf8))?.code == .badJSON)
            #expect(try parseJSON(bytes: Array("\"\(pad)".utf8) + [0x7F, 0x20, 0x21, 0x7E] + Array("\(tail)\"".utf8))
                == .string(pad + "\u{7F} !~" + tail))
        }
    }

    @Test(arguments: [
        ("\"\u{01}\"", "(byte 1): control character U+0001 must be escaped in a string"),
        ("\"a\tb\"", "(byte 2): control character U+0009 must be escaped in a string"),
        ("\"a\nb\"", "(byte 2): control character U+000A must be escaped in a string"),
        (#""\x""#, "(byte 1): invalid escape '\\' followed by 'x' in a string"),
        (#""\'""#, "(byte 1): invalid escape '\\' followed by"),
        (#""\U0041""#, "(byte 1): invalid escape"),
        (#""\u12""#, "(byte 5): expected 4 hex digits after \\u, found '\"'"),
        (#""\u12G4""#, "(byte 5): expected 4 hex digits after \\u, found 'G'"),
        (#""\u""#, "(byte 3): expected 4 hex digits after \\u, found '\"'"),
        (#""\ud800""#, "(byte 1): lone surrogate \\uD800 in a string"),
        (#""\ud800x""#, "(byte 1): lone surrogate \\uD800"),
        (#""\ud800\n""#, "(byte 1): lone surrogate \\uD800"),
        (#""\ud800\u0041""#, "(byte 1): lone surrogate \\uD800 in a string (followed by \\u0041, not a low surrogate)"),
        (#""\ud800\ud800""#, "(byte 1): lone surrogate \\uD800"),
        (#""\udc00""#, "(byte 1): lone surrogate \\uDC00 in a string (a low surrogate must follow a high surrogate)"),
        (#""ok\udfff\ud800""#, "(byte 3): lone surrogate \\uDFFF"),
        (#""\ud800\u12""#, "(byte 11): expected 4 hex digits"),
        ("\"abc", "(byte 4): unterminated string, expected '\"' before the end of input"),
        ("\"", "(byte 1): unterminated string"),
        ("\"abc\\", "(byte 5): unterminated string, expected an escape after '\\', found end of input"),
        ("\"abc\\\"", "(byte 6): unterminated string"),
    ])
    func rejectsBadStrings(text: String, fragment: String) {
        let error = parseError(text)
        #expect(error?.code == .badJSON)
        #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "no error")")
    }

    @Test(arguments: [
        [0xC0, 0x80],              // overlong NUL
        [0xC1, 0xBF],              // overlong
        [0xE0, 0x80, 0x80],        // overlong
        [0xE0, 0x9F, 0xBF],        // overlong U+07FF
        [0xF0, 0x80, 0x80, 0x80],  // overlong
        [0xF0, 0x8F, 0xBF, 0xBF],  // overlong U+FFFF
        [0xED, 0xA0, 0x80],        // U+D800 encoded
        [0xED, 0xBF, 0xBF],        // U+DFFF encoded
        [0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80],  // CESU-8 surrogate pair
        [0xF4, 0x90, 0x80, 0x80],  // U+110000
        [0xF5, 0x80, 0x80, 0x80],
        [0xF8, 0x88, 0x80, 0x80, 0x80],
        [0xFE], [0xFF],
        [0x80],                    // stray continuation
        [0xBF],
        [0xC3],                    // truncated before the quote
        [0xE4, 0xB8],
        [0xF0, 0x9F, 0x98],
        [0xC3, 0x41],              // lead byte followed by ASCII
        [0xE4, 0x41, 0x80],
        [0xF0, 0x9F, 0x41, 0x80],
    ] as [[UInt8]])
    func rejectsInvalidUTF8InStrings(bad: [UInt8]) {
        let error = parseError(bytes: [0x22, 0x61] + bad + [0x22])
        #expect(error?.code == .badJSON)
        #expect(error?.message.contains("(byte 2): invalid UTF-8 in a string") == true, "\(error?.message ?? "no error")")
    }

    @Test func rejectsTruncatedUTF8AtEndOfInput() {
        for bytes: [UInt8] in [[0x22, 0xC3], [0x22, 0xE4, 0xB8], [0x22, 0xF0, 0x9F, 0x98]] {
            let error = parseError(bytes: bytes)
            #expect(error?.message.contains("(byte 1): invalid UTF-8 in a string") == true, "\(error?.message ?? "no error")")
        }
    }
}

@Suite struct JSONParserStructureTests {
    @Test func parsesNestedContainers() throws {
        let value = try Value(json: #"{"a":[1,2.5,"x",{"b":null}],"c":{},"d":[],"e":[[]],"f":true}"#)
        let expected: Value = .object(ValueObject([
            "a": .array([.int(1), .double(2.5), .string("x"), .object(ValueObject(["b": .null]))]),
            "c": .object(ValueObject()),
            "d": .array([]),
            "e": .array([.array([])]),
            "f": .bool(true),
        ]))
        #expect(value == expected)
    }

    @Test func keepsMemberOrder() throws {
        guard case .object(let object) = try Value(json: #"{"z":1,"a":2,"m":3,"":4}"#) else { Issue.record("not an object"); return }
        #expect(Array(object.members.keys) == ["z", "a", "m", ""])
    }

    @Test func duplicateKeysLastWinsAtFirstPosition() throws {
        guard case .object(let object) = try Value(json: #"{"a":1,"b":2,"a":3,"c":4,"b":{"x":1}}"#) else {
            Issue.record("not an object"); return
        }
        #expect(Array(object.members.keys) == ["a", "b", "c"])
        #expect(object["a"] == .int(3))
        #expect(object["b"] == .object(ValueObject(["x": .int(1)])))
    }

    /// Every open container's members wait on one stack (and objects'
    /// names on another) until it closes: objects inside arrays inside
    /// objects, each with members before and after the nested ones, and
    /// repeated names at every level, take exactly their own members.
    @Test func nestedContainersTakeOnlyTheirOwnMembers() throws {
        let json = #"[1,{"a":[2,{"b":3,"c":[4,5],"b":6},7],"d":{"e":{}},"a":[8]},[9,[10,[]]],{"f":1},11]"#
        let expected: Value = .array([
            .int(1),
            .object(ValueObject(["a": .array([.int(8)]), "d": .object(ValueObject(["e": .object(ValueObject())]))])),
            .array([.int(9), .array([.int(10), .array([])])]),
            .object(ValueObject(["f": .int(1)])),
            .int(11),
        ])
        #expect(try Value(json: json) == expected)
        // Inside the first "a" before it was replaced: the inner object's own repeat.
        let inner = try Value(json: #"{"x":[{"b":3,"c":[4,5],"b":6},{"b":7}]}"#)
        #expect(inner == .object(ValueObject(["x": .array([
            .object(ValueObject(["b": .int(6), "c": .array([.int(4), .int(5)])])),
            .object(ValueObject(["b": .int(7)])),
        ])])))
    }

    /// Past the table's linear limit (8 members) the names are indexed:
    /// repeats among 40 members still keep the last value at the first place.
    @Test func largeObjectsWithRepeatedNames() throws {
        let members = (0..<40).map { "\"k\($0 % 25)\":\($0)" }.joined(separator: ",")
        guard case .array(let elements) = try Value(json: "[{\(members)},{}]"), case .object(let object)? = elements.first else {
            Issue.record("not an array of an object"); return
        }
        #expect(Array(object.members.keys) == (0..<25).map { MemberKey("k\($0)") })
        for k in 0..<25 { #expect(object["k\(k)"] == .int(Int64(k < 15 ? k + 25 : k))) }
    }

    @Test func keysWithEscapesAreDecoded() throws {
        let value = try Value(json: #"{"a\/b":1,"\u00e9":2,"\"":3,"\u0000":4}"#)
        #expect(value == .object(ValueObject(["a/b": .int(1), "é": .int(2), "\"": .int(3), "\0": .int(4)])))
    }

    @Test(arguments: [
        ("", "line 1, column 1 (byte 0): expected a value, found end of input"),
        ("   ", "line 1, column 4 (byte 3): expected a value, found end of input"),
        ("\n\n", "line 3, column 1 (byte 2): expected a value, found end of input"),
        ("[", "(byte 1): expected a value, found end of input"),
        ("]", "(byte 0): expected a value, found ']'"),
        ("{", "(byte 1): expected a string for an object key, found end of input"),
        ("}", "(byte 0): expected a value, found '}'"),
        ("[1,]", "(byte 3): expected a value after ',', found ']' (trailing commas are not allowed)"),
        ("{\"a\":1,}", "(byte 7): expected a string for an object key, found '}' (trailing commas are not allowed)"),
        ("[1 2]", "(byte 3): expected ',' or ']' after an array element, found '2'"),
        ("[1", "(byte 2): expected ',' or ']' after an array element, found end of input"),
        ("[1,", "(byte 3): expected a value, found end of input"),
        ("[1:2]", "(byte 2): expected ',' or ']' after an array element, found ':'"),
        ("{\"a\" 1}", "(byte 5): expected ':' after an object key, found '1'"),
        ("{\"a\"", "(byte 4): expected ':' after an object key, found end of input"),
        ("{\"a\":}", "(byte 5): expected a value, found '}'"),
        ("{\"a\":1 \"b\":2}", "(byte 7): expected ',' or '}' after an object member, found '\"'"),
        ("{\"a\":1]", "(byte 6): expected ',' or '}' after an object member, found ']'"),
        ("[1}", "(byte 2): expected ',' or ']' after an array element, found '}'"),
        ("{a:1}", "(byte 1): expected a string for an object key, found 'a'"),
        ("{'a':1}", "(byte 1): expected a string for an object key, found '''"),
        ("{1:1}", "(byte 1): expected a string for an object key, found '1'"),
        ("{,}", "(byte 1): expected a string for an object key, found ','"),
        ("[,1]", "(byte 1): expected a value, found ','"),
        ("[1,,2]", "(byte 3): expected a value, found ','"),
        ("01", "(byte 0): numbers cannot have leading zeros"),
        ("-01", "(byte 0): numbers cannot have leading zeros"),
        ("[00]", "(byte 1): numbers cannot have leading zeros"),
        ("+1", "(byte 0): expected a value, found '+' (numbers cannot start with '+')"),
        (".5", "(byte 0): expected a value, found '.' (numbers need a digit before the decimal point)"),
        ("1.", "(byte 2): expected a digit after the decimal point, found end of input"),
        ("1.e5", "(byte 2): expected a digit after the decimal point, found 'e'"),
        ("1e", "(byte 2): expected a digit in the exponent, found end of input"),
        ("1e+", "(byte 3): expected a digit in the exponent, found end of input"),
        ("1e+-1", "(byte 3): expected a digit in the exponent, found '-'"),
        ("-", "(byte 1): expected a digit after '-', found end of input"),
        ("--1", "(byte 1): expected a digit after '-', found '-'"),
        ("- 1", "(byte 1): expected a digit after '-', found byte 0x20"),
        ("-Infinity", "(byte 1): expected a digit after '-', found 'I'"),
        ("NaN", "(byte 0): expected a value, found 'N' (NaN and Infinity are not JSON)"),
        ("Infinity", "(byte 0): expected a value, found 'I' (NaN and Infinity are not JSON)"),
        ("nan", "(byte 1): invalid literal, expected 'null', found 'a'"),
        ("inf", "(byte 0): expected a value, found 'i'"),
        ("0x10", "(byte 1): expected end of input after the top-level value, found 'x'"),
        ("1_000", "(byte 1): expected end of input after the top-level value, found '_'"),
        ("tru", "(byte 3): invalid literal, expected 'true', found end of input"),
        ("trUe", "(byte 2): invalid literal, expected 'true', found 'U'"),
        ("True", "(byte 0): expected a value, found 'T'"),
        ("NULL", "(byte 0): expected a value, found 'N'"),
        ("nul", "(byte 3): invalid literal, expected 'null', found end of input"),
        ("fals", "(byte 4): invalid literal, expected 'false', found end of input"),
        ("truex", "(byte 4): expected end of input after the top-level value, found 'x'"),
        ("[true false]", "(byte 6): expected ',' or ']' after an array element, found 'f'"),
        ("nullnull", "(byte 4): expected end of input after the top-level value, found 'n'"),
        ("[1]x", "(byte 3): expected end of input after the top-level value, found 'x'"),
        ("1 2", "(byte 2): expected end of input after the top-level value, found '2'"),
        ("{} {}", "(byte 3): expected end of input after the top-level value, found '{'"),
        ("\"a\" \"b\"", "(byte 4): expected end of input after the top-level value, found '\"'"),
        ("// c\n1", "(byte 0): expected a value, found '/' (comments are not allowed)"),
        ("/* c */ 1", "(byte 0): expected a value, found '/' (comments are not allowed)"),
        ("[1] // c", "(byte 4): expected end of input after the top-level value, found '/'"),
        ("'a'", "(byte 0): expected a value, found ''' (strings use double quotes)"),
        ("\u{FEFF}1", "(byte 0): expected a value, found '\u{FEFF}' (U+FEFF) (a byte order mark is not allowed)"),
        ("\u{0B}1", "(byte 0): expected a value, found byte 0x0B"),
        ("\u{0C}1", "(byte 0): expected a value, found byte 0x0C"),
        ("\u{A0}1", "(byte 0): expected a value, found '\u{A0}' (U+00A0)"),
        ("[1,\u{2028}2]", "(byte 3): expected a value, found '\u{2028}' (U+2028)"),
        ("\u{0}", "(byte 0): expected a value, found byte 0x00"),
        ("[\u{0}]", "(byte 1): expected a value, found byte 0x00"),
        ("1\u{0}", "(byte 1): expected end of input after the top-level value, found byte 0x00"),
    ])
    func rejectsMalformedStructure(text: String, fragment: String) {
        let error = parseError(text)
        #expect(error?.code == .badJSON)
        #expect(error?.message.hasPrefix("invalid JSON at line ") == true)
        #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "no error")")
    }

    @Test func rejectsNonUTF8OutsideStrings() {
        #expect(parseError(bytes: [0xFF])?.message == "invalid JSON at line 1, column 1 (byte 0): expected a value, found byte 0xFF")
        #expect(parseError(bytes: [0x5B, 0xC3, 0xA9, 0x5D])?.message
            == "invalid JSON at line 1, column 2 (byte 1): expected a value, found 'é' (U+00E9)")
        #expect(parseError(bytes: [0x31, 0x20, 0xC3])?.message
            == "invalid JSON at line 1, column 3 (byte 2): expected end of input after the top-level value, found byte 0xC3")
    }

    @Test func locationsCountLinesAndCharacters() {
        #expect(parseError("[1,\n  2,\n  x]")?.message
            == "invalid JSON at line 3, column 3 (byte 11): expected a value, found 'x'")
        // Columns count characters: "é" is two bytes but one column.
        #expect(parseError("\"é\" x")?.message
            == "invalid JSON at line 1, column 5 (byte 5): expected end of input after the top-level value, found 'x'")
        #expect(parseError("{\"😀\":\n\"é\" ,}")?.message
            == "invalid JSON at line 2, column 6 (byte 15): expected a string for an object key, found '}' (trailing commas are not allowed)")
        #expect(parseError("\r\n\r\n  !")?.message
            == "invalid JSON at line 3, column 3 (byte 6): expected a value, found '!'")
    }

    @Test func emptyBufferWithoutAddressIsAnError() {
        let error = #expect(throws: TetherError.self) {
            try Value(json: UnsafeRawBufferPointer(start: nil, count: 0))
        }
        #expect(error?.code == .badJSON)
        #expect(error?.message == "invalid JSON at line 1, column 1 (byte 0): expected a value, found end of input")
    }

    @Test func parsesFromARawBufferSlice() throws {
        // The parser must stop at the buffer's end, not at a NUL or the array's end.
        let bytes = Array("[1,2]trailing".utf8)
        let value = bytes.withUnsafeBytes { all in
            Result { () throws(TetherError) in try Value(json: UnsafeRawBufferPointer(rebasing: all[0..<5])) }
        }
        #expect(try value.get() == .array([.int(1), .int(2)]))
        let cut = bytes.withUnsafeBytes { all in
            Result { () throws(TetherError) in try Value(json: UnsafeRawBufferPointer(rebasing: all[0..<4])) }
        }
        #expect(throws: TetherError.self) { try cut.get() }
    }
}

@Suite struct JSONParserDepthTests {
    private func nested(_ depth: Int, open: String = "[", close: String = "]", leaf: String = "") -> String {
        String(repeating: open, count: depth) + leaf + String(repeating: close, count: depth)
    }

    @Test func defaultDepthIs512() throws {
        #expect(Value.defaultMaxJSONDepth == 512)
        var value = try Value(json: nested(512))
        unnest(&value)
        let error = parseError(nested(513))
        #expect(error?.code == .badJSON)
        #expect(error?.message == "invalid JSON at line 1, column 513 (byte 512): arrays and objects nest deeper than the limit of 512")
    }

    @Test func depthCountsArraysAndObjectsTogether() throws {
        let mixed3 = #"{"a":[{"b":1}]}"#
        #expect(try Value(json: mixed3, maxDepth: 3) == .object(ValueObject(["a": .array([.object(ValueObject(["b": .int(1)]))])])))
        #expect(parseError(mixed3, maxDepth: 2)?.message.contains("(byte 6): arrays and objects nest deeper than the limit of 2") == true)
        #expect(try Value(json: "[[],[],{}]", maxDepth: 2) == .array([.array([]), .array([]), .object(ValueObject())]))
        #expect(parseError("[[],[[]]]", maxDepth: 2)?.code == .badJSON)
        #expect(try Value(json: #"{"a":{"b":{}}}"#, maxDepth: 3) != .null)
        #expect(parseError(#"{"a":{"b":{}}}"#, maxDepth: 2)?.code == .badJSON)
    }

    @Test func zeroDepthAllowsOnlyScalars() throws {
        #expect(try Value(json: "\"s\"", maxDepth: 0) == .string("s"))
        #expect(parseError("[]", maxDepth: 0)?.code == .badJSON)
        #expect(parseError("{}", maxDepth: 0)?.code == .badJSON)
    }

    @Test func negativeDepthIsAnInvalidArgument() {
        let error = #expect(throws: TetherError.self) { try Value(json: "1", maxDepth: -1) }
        #expect(error?.code == .invalidArgument)
    }

    @Test func hugeNestingFailsWithoutCrashing() {
        #expect(parseError(String(repeating: "[", count: 1_000_000))?.code == .badJSON)
        #expect(parseError(String(repeating: "{\"a\":", count: 200_000))?.code == .badJSON)
        #expect(parseError(nested(100_000, leaf: "1"))?.message.contains("nest deeper than the limit of 512") == true)
    }

    @Test func largeLimitParsesDeepInputIteratively() throws {
        // Well past what a recursive parser survives on a 512 KiB thread stack.
        var value = try Value(json: nested(100_000, leaf: "7"), maxDepth: 100_000)
        var depth = 0
        while case .array(let elements) = value, elements.count == 1 {
            value = elements[0]
            depth += 1
        }
        #expect(depth == 100_000)
        #expect(value == .int(7))
        #expect(parseError(nested(100_001), maxDepth: 100_000)?.code == .badJSON)
    }
}

@Suite struct StringValidatingUTF8Tests {
    private func make(_ bytes: [UInt8]) throws(TetherError) -> Value {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(TetherError) in try Value.string(validatingUTF8: buffer) }
        }
        return try result.get()
    }

    @Test func acceptsValidUTF8WithEmbeddedNul() throws {
        #expect(try make([]) == .string(""))
        #expect(try Value.string(validatingUTF8: UnsafeRawBufferPointer(start: nil, count: 0)) == .string(""))
        #expect(try make([0x61, 0x00, 0x62]) == .string("a\0b"))
        let text = "plain ASCII, then é 中 😀 \u{10FFFF} and more ASCII after it"
        #expect(try make(Array(text.utf8)) == .string(text))
        guard case .string(let s) = try make([0, 0, 0]) else { Issue.record("not a string"); return }
        #expect(s.utf8.count == 3)
    }

    @Test func rejectsInvalidUTF8NamingTheOffset() {
        let bad: [[UInt8]] = [
            [0xC0, 0x80], [0xE0, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0x80], [0xFF], [0xC3], [0xE4, 0xB8], [0xC3, 0x41],
        ]
        for sequence in bad {
            // Offsets across the eight-byte ASCII skip.
            for offset in [0, 1, 7, 8, 9, 13, 16] {
                let bytes = Array(repeating: UInt8(ascii: "a"), count: offset) + sequence
                let error = #expect(throws: TetherError.self) { try make(bytes) }
                #expect(error?.code == .invalidArgument)
                #expect(error?.message.contains("at byte offset \(offset) ") == true, "\(sequence) at \(offset): \(error?.message ?? "")")
                // Valid text after the bad bytes changes nothing.
                #expect(throws: TetherError.self) { try make(bytes + Array("tail text".utf8)) }
            }
        }
    }

    @Test func messageNamesTheByte() {
        let error = #expect(throws: TetherError.self) { try make([0x61, 0x62, 0xC0, 0xAF]) }
        #expect(error?.message == "string is not valid UTF-8: ill-formed sequence at byte offset 2 (byte 0xC0)")
    }
}
