/// Ints written as bytes exactly as TetherCore's writer (`Value.writeJSON`,
/// `JSONWriter.writeInt`) writes them, for the writers that skip `Value`
/// trees (ByteWriter for log rows, WriteReplyBytes). Through that writer
/// an int cost ~360 instructions (it is built for whole trees); appended
/// digit by digit to an array, ~180.
enum JSONBytes {
    /// The longest: "-9223372036854775808".
    static let maxIntBytes = 20

    /// Writes `n` at `p` (room for `maxIntBytes`): decimal, a minus sign
    /// when negative. Returns the bytes written. The digits are counted
    /// first, then written from the last, two at a time from a table of the
    /// pairs "00" to "99" (one division per two digits).
    static func writeInt(_ n: Int64, at p: UnsafeMutablePointer<UInt8>) -> Int {
        var start = 0
        if n < 0 {
            p[0] = UInt8(ascii: "-")
            start = 1
        }
        var rest = n.magnitude
        var digits = 1
        var bound: UInt64 = 10
        while digits < 20 && rest >= bound {
            digits += 1
            bound = bound &* 10
        }
        let pairs = digitPairs.utf8Start
        var i = start + digits
        while rest >= 100 {
            let pair = Int(rest % 100) &* 2
            rest /= 100
            i -= 2
            p[i] = pairs[pair]
            p[i + 1] = pairs[pair + 1]
        }
        if rest >= 10 {
            let pair = Int(rest) &* 2
            p[i - 2] = pairs[pair]
            p[i - 1] = pairs[pair + 1]
        } else {
            p[i - 1] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest)
        }
        return start + digits
    }

    /// "00", "01", … "99", one after the other (a StaticString: its bytes
    /// are in the binary, no lazy global to check at each use).
    private static var digitPairs: StaticString {
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
    }
}
