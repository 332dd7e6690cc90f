import TetherCore

/// Small pieces of JSON appended to bytes exactly as TetherCore's writer
/// (`Value.writeJSON`) writes them, for the writers that skip `Value` trees
/// (LogRowText, WriteReplyBytes). Why not that writer: through it a string
/// or an int cost ~360 instructions (it is built for whole trees), and a
/// fixed key appended from a StaticString ~180; these are a loop each.
enum JSONBytes {
    /// An int as `JSONWriter.writeInt`: decimal, a minus sign when negative.
    static func int(_ n: Int64, _ out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for UInt64.max's 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var i = buffer.count
            repeat {
                i -= 1
                buffer[i] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[i...]))
        }
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
