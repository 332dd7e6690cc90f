/// Ints written as bytes exactly as TetherCore's writer (`Value.writeJSON`,
/// `JSONWriter.writeInt`) writes them, for the writers that skip `Value`
/// trees (ByteWriter for log rows, WriteReplyBytes). Through that writer
/// an int cost ~360 instructions (it is built for whole trees); appended
/// digit by digit to an array, ~180.
enum JSONBytes {
    /// The longest: "-9223372036854775808".
    static let maxIntBytes = 20

    /// Writes `n` at `p` (room for `maxIntBytes`): decimal, a minus sign
    /// when negative. Returns the bytes written. (The digits are made from
    /// the lowest, then turned round.)
    static func writeInt(_ n: Int64, at p: UnsafeMutablePointer<UInt8>) -> Int {
        var count = 0
        if n < 0 {
            p[0] = UInt8(ascii: "-")
            count = 1
        }
        var rest = n.magnitude
        var low = count
        repeat {
            p[count] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
            count += 1
        } while rest > 0
        var high = count - 1
        while low < high {
            let b = p[low]
            p[low] = p[high]
            p[high] = b
            low += 1
            high -= 1
        }
        return count
    }
}
