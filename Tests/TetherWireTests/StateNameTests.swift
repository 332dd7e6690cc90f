import Testing
import TetherCore
@testable import TetherWire

/// State names refuse what would change how a listing of them reads
/// (issue 29): control characters C0 and C1, the line and paragraph
/// separators, and the bidirectional formatting characters. Checked
/// against a plain model of that set over every scalar up to U+3000 and
/// beyond, at every place in a name, so that the byte-level scan neither
/// misses one nor refuses a neighbour.
@Suite struct StateNameTests {
    static func refused(_ scalar: Unicode.Scalar) -> String? {
        switch scalar.value {
        case 0x00...0x1F, 0x7F, 0x80...0x9F: return "control characters"
        case 0x2028, 0x2029: return "line or paragraph separators"
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return "bidirectional formatting characters"
        default: return nil
        }
    }

    static func problem(_ name: String) -> VarlinkError? {
        do {
            try StateName.check(name, parameter: "name")
            return nil
        } catch {
            return error
        }
    }

    @Test func refusesExactlyTheModelsCharacters() {
        let scalars = (0...0x3000).compactMap(Unicode.Scalar.init)
            + [0xFEFF, 0xFFFD, 0x1F600, 0xE0001, 0x10FFFF].compactMap(Unicode.Scalar.init)
        for scalar in scalars {
            // Alone, after a prefix (the byte offset is the prefix's
            // length), and followed by more.
            for (prefix, suffix) in [("", ""), ("ab", "c"), ("\u{E9}", "\u{2027}")] {
                let name = prefix + String(Character(scalar)) + suffix
                let error = Self.problem(name)
                if let expected = Self.refused(scalar) {
                    #expect(error?.name == "org.varlink.service.InvalidParameter", "U+\(String(scalar.value, radix: 16))")
                    #expect(error?.parameter == "name")
                    #expect(error?.detail == "a state name cannot hold \(expected) (one at byte \(prefix.utf8.count))",
                            "U+\(String(scalar.value, radix: 16)): \(error?.detail ?? "accepted")")
                } else {
                    #expect(error == nil, "U+\(String(scalar.value, radix: 16)) refused: \(error?.detail ?? "")")
                }
            }
        }
    }

    @Test func aSpoofedListingIsRefused() {
        // "txt.exe" shown as "exe.txt": the override reverses what follows.
        #expect(Self.problem("report\u{202E}txt.exe")?.detail
                == "a state name cannot hold bidirectional formatting characters (one at byte 6)")
        #expect(Self.problem("a\u{2066}b\u{2069}")?.detail.hasSuffix("(one at byte 1)") == true)
        #expect(Self.problem("line\u{2028}two")?.detail
                == "a state name cannot hold line or paragraph separators (one at byte 4)")
        #expect(Self.problem("csi\u{9B}31m")?.detail == "a state name cannot hold control characters (one at byte 3)")
        // Names in any script, emoji sequences (U+200D joins them) and
        // the no-break space stay valid.
        for name in ["\u{627}\u{644}\u{639}\u{631}\u{628}\u{64A}\u{629}", "\u{5E9}\u{5DC}\u{5D5}\u{5DD}.a", "\u{1F469}\u{200D}\u{1F4BB}",
                     "a\u{A0}b", "\u{65E5}\u{672C}", "caf\u{E9}/x"] {
            #expect(Self.problem(name) == nil, "\(name)")
        }
    }
}
