import TetherCore

/// Small pieces of JSON appended to bytes exactly as TetherCore's writer
/// (`Value.writeJSON`) writes them, for the writers that skip `Value` trees
/// (LogRowText, WriteReplyBytes). Why not that writer: through it a string
/// or an int cost ~360 instructions (it is built for whole trees), and a
/// fixed key appended from a StaticString ~180; these are a loop each.
enum JSONBytes {
    /// An int as `JSONWriter.writeInt`: decimal, a minus sign when negative.
    /// (Digits appended one by one from the highest: copying them from a
    /// scratch buffer went through the generic append, ~400 instructions.)
    static func int(_ n: Int64, _ out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var rest = n.magnitude
        var unit: UInt64 = 1
        while unit <= rest / 10 { unit *= 10 }
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / unit))
            rest %= unit
            unit /= 10
        } while unit > 0
    }

    /// A string as `JSONWriter.writeString` writes it: its bytes between
    /// quotes when none needs an escape (none below 0x20, no `"` or `\`),
    /// else through that writer.
    static func string(_ s: String, _ out: inout [UInt8]) throws(TetherError) {
        var s = s
        let plain = s.withUTF8 { bytes in
            for b in bytes where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { return false }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: bytes)
            out.append(UInt8(ascii: "\""))
            return true
        }
        if !plain { try Value.string(s).writeJSON(into: &out) }
    }

    /// A value: an int written here, anything else by `Value.writeJSON`.
    static func value(_ value: Value, _ out: inout [UInt8]) throws(TetherError) {
        if case .int(let n) = value {
            int(n, &out)
        } else {
            try value.writeJSON(into: &out)
        }
    }
}
