import Testing
import TetherCore

@Suite struct JSONPointerTests {
    @Test func emptyTextIsTheRoot() throws {
        let root = try JSONPointer(parsing: "")
        #expect(root.tokens.isEmpty)
        #expect(root.isRoot)
        #expect(root == JSONPointer.root)
        #expect(root.description == "")
    }

    @Test(arguments: [
        ("/", [""]),
        ("//", ["", ""]),
        ("/a", ["a"]),
        ("/a/b/c", ["a", "b", "c"]),
        ("/foo/0", ["foo", "0"]),
        ("/a~1b", ["a/b"]),
        ("/m~0n", ["m~n"]),
        ("/~01", ["~1"]),        // "~0" is decoded first: this is "~" then "1", never "/"
        ("/~10", ["/0"]),
        ("/~0~1~0~1", ["~/~/"]),
        ("/ ", [" "]),
        ("/c%d/e^f/g|h/i\\j/k\"l", ["c%d", "e^f", "g|h", "i\\j", "k\"l"]),
        ("/é/😀", ["é", "😀"]),
        ("/a/", ["a", ""]),
    ])
    func parsesTokens(text: String, tokens: [String]) throws {
        let pointer = try JSONPointer(parsing: text)
        #expect(pointer.tokens == tokens)
        #expect(!pointer.isRoot)
        #expect(pointer.description == text)
    }

    /// The C face parses a C string's bytes directly (`parsingUTF8`): the
    /// same tokens and the same errors as parsing the text.
    @Test(arguments: ["", "/", "//", "/a/b", "/a~1b", "/~01", "/~0~1~0~1", "/é/😀", "/a/", "a", "/~2", "/a~"])
    func parsingBytesMatchesParsingText(text: String) {
        let fromText = Result { () throws(TetherError) in try JSONPointer(parsing: text) }
        var copy = text
        let fromBytes = copy.withUTF8 { bytes in
            Result { () throws(TetherError) in try JSONPointer(parsingUTF8: UnsafeRawBufferPointer(bytes)) }
        }
        switch (fromText, fromBytes) {
        case let (.success(a), .success(b)): #expect(a == b)
        case let (.failure(a), .failure(b)): #expect(a == b)
        default: Issue.record("\(text): parsing the text and its bytes disagree")
        }
    }

    @Test(arguments: ["a", "a/b", " /a", "#/a", "~0"])
    func rejectsTextWithoutLeadingSlash(text: String) {
        let error = #expect(throws: TetherError.self) { try JSONPointer(parsing: text) }
        #expect(error?.code == .badPath)
        #expect(error?.message.contains("must be empty or start with \"/\"") == true)
        #expect(error?.message.contains("\"\(text)\"") == true)
    }

    @Test(arguments: [
        ("/~", 1),
        ("/a~", 2),
        ("/~2", 1),
        ("/a~x/b", 2),
        ("/ok/~/x", 4),
        ("/a~01~", 5),
        ("/~~0", 1),
    ])
    func rejectsBadTildeEscapes(text: String, offset: Int) {
        let error = #expect(throws: TetherError.self) { try JSONPointer(parsing: text) }
        #expect(error?.code == .badPath)
        #expect(error?.message.contains("at byte \(offset)") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("\"\(text)\"") == true)
    }

    @Test func messageQuotesPointerTextSafely() {
        let error = #expect(throws: TetherError.self) { try JSONPointer(parsing: "/a\"\n~") }
        #expect(error?.message == #"invalid JSON pointer "/a\"\n~": "~" at byte 4 must be followed by 0 or 1 (write "~0" for "~" and "~1" for "/")"#)
    }

    @Test func descriptionEscapesAndRoundTrips() throws {
        let cases: [[String]] = [[], [""], ["a/b", "m~n"], ["~1"], ["/", "~", ""], ["~/~/"], ["x", "", "y"]]
        for tokens in cases {
            let pointer = JSONPointer(tokens: tokens)
            let reparsed = try JSONPointer(parsing: pointer.description)
            #expect(reparsed == pointer, "\(tokens) -> \(pointer.description)")
        }
        #expect(JSONPointer(tokens: ["a/b", "m~n"]).description == "/a~1b/m~0n")
        #expect(JSONPointer(tokens: ["~1"]).description == "/~01")
    }

    @Test func prefixes() throws {
        let root = JSONPointer.root
        let a = try JSONPointer(parsing: "/a")
        let ab = try JSONPointer(parsing: "/a/b")
        let abc = try JSONPointer(parsing: "/a/b/c")
        let ax = try JSONPointer(parsing: "/ab")
        let b = try JSONPointer(parsing: "/b")
        let empty = try JSONPointer(parsing: "/")

        #expect(root.isPrefix(of: root))
        #expect(root.isPrefix(of: abc))
        #expect(root.isPrefix(of: empty))
        #expect(a.isPrefix(of: a))
        #expect(a.isPrefix(of: ab))
        #expect(a.isPrefix(of: abc))
        #expect(!a.isPrefix(of: ax), "token prefix, not text prefix")
        #expect(!ab.isPrefix(of: a))
        #expect(!a.isPrefix(of: b))
        #expect(!a.isPrefix(of: root))
        #expect(!empty.isPrefix(of: a), "\"/\" is the member named \"\", not the root")
    }

    @Test func overlapsIsAncestorOrDescendant() throws {
        let p = { (s: String) throws -> JSONPointer in try JSONPointer(parsing: s) }
        #expect(try p("/a").overlaps(p("/a/b")))
        #expect(try p("/a/b").overlaps(p("/a")))
        #expect(try p("/a/b").overlaps(p("/a/b")))
        #expect(try JSONPointer.root.overlaps(p("/x/y")))
        #expect(try p("/x/y").overlaps(.root))
        #expect(try !p("/a/b").overlaps(p("/a/c")), "siblings do not overlap")
        #expect(try !p("/a").overlaps(p("/b/a")))
        #expect(try !p("/a/0").overlaps(p("/a/1")))
        #expect(try !p("/a").overlaps(p("/ab")))
    }

    @Test func hashableFollowsTokens() throws {
        let set: Set<JSONPointer> = [try JSONPointer(parsing: "/a~1b"), JSONPointer(tokens: ["a/b"]), try JSONPointer(parsing: "/a/b")]
        #expect(set.count == 2)
        #expect(try JSONPointer(parsing: "/a~1b").hashValue == JSONPointer(tokens: ["a/b"]).hashValue)
        #expect(JSONPointer(tokens: ["a", "b"]) != JSONPointer(tokens: ["a/b"]))
    }

    @Test func appendingAndParent() throws {
        let ab = JSONPointer.root.appending("a").appending("b/c")
        #expect(ab.tokens == ["a", "b/c"])
        #expect(ab.description == "/a/b~1c")
        #expect(ab.parent == JSONPointer(tokens: ["a"]))
        #expect(ab.parent?.parent == .root)
        #expect(JSONPointer.root.parent == nil)
    }
}
