@testable import TetherCore
import XCTest

/// `JSONWriter.firstToEscape` (eight bytes at a time) never skips a byte
/// that needs an escape, and strings are written exactly as the byte loop
/// alone wrote them.
final class StringEscapeScanTests: XCTestCase {
    private static func needsEscape(_ b: UInt8) -> Bool {
        b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\")
    }

    /// The writer before the scan: a byte at a time.
    private static func reference(_ s: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out += Array(#"\""#.utf8)
            case UInt8(ascii: "\\"): out += Array(#"\\"#.utf8)
            case UInt8(ascii: "\n"): out += Array(#"\n"#.utf8)
            case UInt8(ascii: "\r"): out += Array(#"\r"#.utf8)
            case UInt8(ascii: "\t"): out += Array(#"\t"#.utf8)
            case 0x08: out += Array(#"\b"#.utf8)
            case 0x0C: out += Array(#"\f"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array(#"\u00"#.utf8) + [hex[Int(b >> 4)], hex[Int(b & 0xF)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
        return out
    }

    func testEveryByteAtEveryPositionOfAWord() {
        // Fillers that need no escape, around the bytes the masks look at.
        for filler: UInt8 in [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF, UInt8(ascii: "a")] {
            for b in 0...255 {
                for p in 0..<19 {
                    var bytes = [UInt8](repeating: filler, count: 19)
                    bytes[p] = UInt8(b)
                    let found = bytes.withUnsafeBufferPointer { JSONWriter.firstToEscape($0) }
                    let first = bytes.firstIndex(where: Self.needsEscape) ?? bytes.count
                    XCTAssertLessThanOrEqual(found, first, "byte \(b) at \(p) after \(filler)")
                    if Self.needsEscape(UInt8(b)) && p < 16 {
                        XCTAssertEqual(found, p / 8 * 8, "byte \(b) at \(p)")
                    }
                }
            }
        }
    }

    func testStringsAreWrittenAsByteByByte() {
        var rng = SystemRandomNumberGenerator()
        let pieces = ["a", "é", "\u{1F600}", "\"", "\\", "\n", "\u{0}", "\u{1F}", " ", "~", "\u{7F}", "xxxxxxxxxxxx", "ü\u{8}\u{C}\r\t"]
        for _ in 0..<2000 {
            var s = ""
            for _ in 0..<Int.random(in: 0..<40, using: &rng) { s += pieces.randomElement(using: &rng)! }
            var out: [UInt8] = []
            JSONWriter.writeString(s, into: &out)
            XCTAssertEqual(out, Self.reference(s), s.debugDescription)
        }
        let long = String(repeating: "abcdefgh", count: 100_000) + "\"end"
        var out: [UInt8] = []
        JSONWriter.writeString(long, into: &out)
        XCTAssertTrue(out == Self.reference(long))
    }
}
