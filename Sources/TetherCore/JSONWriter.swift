// JSONWriter.swift — JSON text out of a value, compact or indented.

/// JSON text out of a value: compact by default, or 2-space indented.
extension Value {
    /// Appends the JSON text of this value to `out`. A double that JSON cannot
    /// hold (NaN, infinity) throws .outOfRange naming its path; `out` is then
    /// left as it was. Bytes are written as a base64 string.
    public func writeJSON(into out: inout [UInt8], pretty: Bool = false) throws(TetherError) {
        let start = out.count
        do {
            try JSONWriter(pretty: pretty).write(self, into: &out)
        } catch {
            out.removeSubrange(start...)
            throw error
        }
    }

    public func jsonString(pretty: Bool = false) throws(TetherError) -> String {
        var out: [UInt8] = []
        try writeJSON(into: &out, pretty: pretty)
        return String(decoding: out, as: UTF8.self)
    }
}

/// A string as a JSON string literal, for quoting keys and texts in messages.
func jsonQuoted(_ s: String) -> String {
    var out: [UInt8] = []
    JSONWriter.writeString(s, into: &out)
    return String(decoding: out, as: UTF8.self)
}

package struct JSONWriter {
    let pretty: Bool

    /// One open container. The writer keeps its own stack so that no value
    /// is too deep to write.
    private struct Level {
        var elements: [Value] = []
        var object = ValueObject()
        let isObject: Bool
        var next = 0
        var count: Int { isObject ? object.count : elements.count }
    }

    func write(_ root: Value, into out: inout [UInt8]) throws(TetherError) {
        var levels: [Level] = []
        var pending: Value? = root
        while true {
            if let value = pending {
                pending = nil
                switch value {
                case .array(let elements) where !elements.isEmpty:
                    out.append(UInt8(ascii: "["))
                    levels.append(Level(elements: elements, isObject: false))
                case .object(let object) where object.count > 0:
                    out.append(UInt8(ascii: "{"))
                    levels.append(Level(object: object, isObject: true))
                default:
                    try writeScalar(value, into: &out, levels: levels)
                }
            }
            // Move to the next element of the innermost open container, or close it.
            guard let top = levels.indices.last else { return }
            let i = levels[top].next
            if i == levels[top].count {
                let closing = levels[top].isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                levels.removeLast()
                newline(&out, depth: levels.count)
                out.append(closing)
                continue
            }
            if i > 0 { out.append(UInt8(ascii: ",")) }
            newline(&out, depth: levels.count)
            levels[top].next = i + 1
            if levels[top].isObject {
                Self.writeString(levels[top].object.members.keys[i].string, into: &out)
                out.append(UInt8(ascii: ":"))
                if pretty { out.append(UInt8(ascii: " ")) }
                pending = levels[top].object.members.values[i]
            } else {
                pending = levels[top].elements[i]
            }
        }
    }

    private func newline(_ out: inout [UInt8], depth: Int) {
        guard pretty else { return }
        out.append(UInt8(ascii: "\n"))
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
    }

    private func writeScalar(_ value: Value, into out: inout [UInt8], levels: [Level]) throws(TetherError) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let n): Self.writeInt(n, into: &out)
        case .double(let d):
            guard d.isFinite else {
                throw TetherError(.outOfRange, "JSON cannot represent the double \(d) at \(Self.path(of: levels))")
            }
            Self.writeDouble(d, into: &out)
        case .string(let s): Self.writeString(s, into: &out)
        case .bytes(let bytes):
            out.append(UInt8(ascii: "\""))
            Base64.encode(bytes, into: &out)
            out.append(UInt8(ascii: "\""))
        case .array: out.append(contentsOf: "[]".utf8)
        case .object: out.append(contentsOf: "{}".utf8)
        }
    }

    /// The pointer text of the element being written, for error messages.
    private static func path(of levels: [Level]) -> String {
        guard !levels.isEmpty else { return "the root" }
        let tokens = levels.map { level in
            level.isObject ? level.object.members.keys[level.next - 1].string : String(level.next - 1)
        }
        return JSONPointer(tokens: tokens).description
    }

    package static func writeInt(_ n: Int64, into out: inout [UInt8]) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude
        // 20 digits hold UInt64.max; fill from the right, then copy.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var i = 20
            repeat {
                i -= 1
                digits[i] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i...]))
        }
    }

    /// Swift's description is the shortest text that reads back as the same
    /// double, and is JSON syntax for finite values ("1e-05", "1e+20", "-0.0").
    /// It already writes integral doubles as "1.0" or "1e+16"; the check below
    /// keeps "reads back as a double, not an int" true should that ever change.
    package static func writeDouble(_ d: Double, into out: inout [UInt8]) {
        let text = d.description.utf8
        out.append(contentsOf: text)
        if !text.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            out.append(contentsOf: ".0".utf8)
        }
    }

    /// The index of the first byte of `bytes` that needs an escape (below
    /// 0x20, `"` or `\`), or at least the index up to which none does:
    /// eight bytes at a time (a word with none is most of a string's
    /// bytes), then the last few one by one. Every byte before the index
    /// returned needs no escape; the caller's byte loop starts there (a
    /// 1 MB string was scanned a byte at a time: ~1 ms of its Get).
    @inline(__always)
    static func firstToEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        let n = bytes.count
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= n {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            // Nonzero exactly when some byte is below 0x20 (bytes below
            // 0x80 subtracted from; the `& ~w` drops bytes 0x80 and up).
            let control = (w &- ones &* 0x20) & ~w & highs
            // A zero byte of w ^ repeated(c): some byte is c.
            let q = w ^ (ones &* 0x22)
            let quote = (q &- ones) & ~q & highs
            let b = w ^ (ones &* 0x5C)
            let backslash = (b &- ones) & ~b & highs
            if control | quote | backslash != 0 { return i }
            i += 8
        }
        return i
    }

    package static func writeString(_ s: String, into out: inout [UInt8]) {
        var s = s
        s.withUTF8 { bytes in
            out.reserveGrowing(bytes.count + 2)
            out.append(UInt8(ascii: "\""))
            var runStart = 0
            for i in firstToEscape(bytes)..<bytes.count {
                let b = bytes[i]
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                runStart = i + 1
                out.append(UInt8(ascii: "\\"))
                switch b {
                case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "\n"): out.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): out.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): out.append(UInt8(ascii: "t"))
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                default:
                    // Only 0x00...0x1F get here: the high digit is 0 or 1.
                    let low = b & 0xF
                    out.append(contentsOf: "u00".utf8)
                    out.append(UInt8(ascii: "0") + (b >> 4))
                    out.append(low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10)
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
            out.append(UInt8(ascii: "\""))
        }
    }
}
