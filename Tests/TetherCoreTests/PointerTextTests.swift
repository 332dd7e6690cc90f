import Testing
@testable import TetherCore

/// Reads at pointer text (walked in place) must give exactly what reads at
/// the parsed `JSONPointer` give: the same value, or the same error, word
/// for word.
@Suite struct PointerTextTests {
    static let document = """
        {"a": {"b": [10, 20, {"c": "deep"}]}, "": {"": 1}, "x/y": 2, "m~n": 3,
         "\u{E9}": "composed", "e\u{301}": "decomposed", "0": "zero", "arr": [[1, 2], []],
         "scalar": 5, "nested": {"0": {"-": true}}}
        """

    /// Either the value or the error, to compare outcomes.
    static func outcome(_ read: () throws(TetherError) -> Value) -> Result<Value, TetherError> {
        do throws(TetherError) { return .success(try read()) } catch { return .failure(error) }
    }

    static func readBoth(_ doc: Value, _ text: String) throws -> (text: Result<Value, TetherError>, parsed: Result<Value, TetherError>) {
        let bytes = Array(text.utf8)
        let byText = bytes.withUnsafeBytes { raw in
            outcome { () throws(TetherError) in try doc.value(at: try PointerText(validating: raw)) }
        }
        let byParsed = outcome { () throws(TetherError) in try doc.value(at: try JSONPointer(parsing: text)) }
        return (byText, byParsed)
    }

    @Test(arguments: [
        "", "/a", "/a/b", "/a/b/0", "/a/b/2/c", "/", "//", "/x~1y", "/m~0n", "/\u{E9}", "/e\u{301}", "/0",
        "/arr/0/1", "/arr/1", "/nested/0/-",
        // names nothing: each error must read as the parsed pointer's
        "/missing", "/a/missing", "/a/b/3", "/a/b/-", "/a/b/01", "/a/b/x", "/a/b/-1", "/arr/1/0",
        "/scalar/0", "/a/b/0/c", "/x/y", "/e", "/a/b/99999999999999999999999",
        // bad syntax: the same message as the parser's
        "a", "/~", "/~2", "/a~", "x/",
    ])
    func readsAsTheParsedPointerDoes(_ text: String) throws {
        let doc = try Value(json: Self.document)
        let (byText, byParsed) = try Self.readBoth(doc, text)
        #expect(byText == byParsed, "\(text)")
    }

    /// The typed getters' read in place (`scalar(at:)`) gives what reading
    /// the value gives, as a scalar: the same scalar, type or error.
    @Test(arguments: [
        "", "/a", "/a/b", "/a/b/0", "/a/b/2/c", "/", "//", "/x~1y", "/m~0n", "/\u{E9}", "/0",
        "/arr/0/1", "/arr/1", "/nested/0/-", "/scalar",
        "/missing", "/a/b/3", "/a/b/-", "/a/b/01", "/scalar/0", "/arr/1/0", "a", "/~2",
    ])
    func scalarsReadInPlaceAsTheValueReads(_ text: String) throws {
        let doc = try Value(json: Self.document)
        let bytes = Array(text.utf8)
        let inPlace: Result<ScalarValue, TetherError> = bytes.withUnsafeBytes { raw in
            do throws(TetherError) { return .success(try doc.scalar(at: try PointerText(validating: raw))) } catch {
                return .failure(error)
            }
        }
        let (byText, _) = try Self.readBoth(doc, text)
        #expect(inPlace == byText.map(\.scalar), "\(text)")
    }

    @Test func findsMembersInLargeObjectsAndNamesPastEightBytes() throws {
        var object = ValueObject()
        for i in 0..<200 { object["member-name-\(i)"] = .int(Int64(i)) }
        let doc = Value.object(object)
        for i in [0, 7, 8, 9, 199] {
            let (byText, byParsed) = try Self.readBoth(doc, "/member-name-\(i)")
            #expect(byText == .success(.int(Int64(i))))
            #expect(byText == byParsed)
        }
        let (missing, parsedMissing) = try Self.readBoth(doc, "/member-name-200")
        #expect(missing == parsedMissing)
        #expect((try? missing.get()) == nil)
    }

    @Test func escapesAreRecognisedWhileChecking() throws {
        for (text, escaped) in [("/a~0b", true), ("/a~1b", true), ("/ab", false), ("", false), ("/", false)] {
            let bytes = Array(text.utf8)
            let found = try bytes.withUnsafeBytes { raw throws(TetherError) in try PointerText(validating: raw).hasEscapes }
            #expect(found == escaped, "\(text)")
        }
    }
}
