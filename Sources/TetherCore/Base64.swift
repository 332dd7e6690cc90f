// Base64.swift — base64 (RFC 4648) for bytes values in JSON.

/// RFC 4648 base64, standard alphabet, padded: how bytes values appear in JSON.
public enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// 0...63 for alphabet bytes, 0xFF for everything else.
    private static let decoding: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, b) in alphabet.enumerated() { table[Int(b)] = UInt8(i) }
        return table
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        encode(bytes, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the encoding to `out`, for writers that build JSON in a buffer.
    public static func encode(_ bytes: [UInt8], into out: inout [UInt8]) {
        out.reserveGrowing((bytes.count + 2) / 3 * 4)
        alphabet.withUnsafeBufferPointer { table in
            var i = 0
            while i + 3 <= bytes.count {
                let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                out.append(table[Int(n >> 18)])
                out.append(table[Int(n >> 12 & 63)])
                out.append(table[Int(n >> 6 & 63)])
                out.append(table[Int(n & 63)])
                i += 3
            }
            let rest = bytes.count - i
            if rest == 1 {
                let n = UInt32(bytes[i]) << 16
                out.append(table[Int(n >> 18)])
                out.append(table[Int(n >> 12 & 63)])
                out.append(UInt8(ascii: "="))
                out.append(UInt8(ascii: "="))
            } else if rest == 2 {
                let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
                out.append(table[Int(n >> 18)])
                out.append(table[Int(n >> 12 & 63)])
                out.append(table[Int(n >> 6 & 63)])
                out.append(UInt8(ascii: "="))
            }
        }
    }

    /// Strict decoding: length a multiple of 4, padding only at the end, no
    /// whitespace, and unused bits of the last symbol zero, so that each byte
    /// string has exactly one accepted encoding.
    public static func decode(_ text: String) throws(TetherError) -> [UInt8] {
        let input = Array(text.utf8)
        func failure(_ what: String) -> TetherError {
            TetherError(.invalidArgument, "invalid base64: \(what)")
        }
        guard input.count % 4 == 0 else {
            throw failure("length \(input.count) is not a multiple of 4")
        }
        var out: [UInt8] = []
        out.reserveCapacity(input.count / 4 * 3)
        var i = 0
        while i < input.count {
            let isLast = i + 4 == input.count
            var symbols: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
            var padding = 0
            for j in 0..<4 {
                let b = input[i + j]
                var symbol: UInt32 = 0
                if b == UInt8(ascii: "=") {
                    // Padding may only fill the last one or two places of the final group.
                    guard isLast, j >= 2 else { throw failure("misplaced \"=\" at offset \(i + j)") }
                    padding += 1
                } else {
                    guard padding == 0 else { throw failure("data after \"=\" at offset \(i + j)") }
                    let v = decoding[Int(b)]
                    guard v != 0xFF else { throw failure("byte \(hexByte(b)) at offset \(i + j) is not in the base64 alphabet") }
                    symbol = UInt32(v)
                }
                switch j {
                case 0: symbols.0 = symbol
                case 1: symbols.1 = symbol
                case 2: symbols.2 = symbol
                default: symbols.3 = symbol
                }
            }
            let n = symbols.0 << 18 | symbols.1 << 12 | symbols.2 << 6 | symbols.3
            out.append(UInt8(n >> 16))
            if padding < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(n & 0xFF)) }
            let unusedBits: UInt32 = padding == 2 ? n & 0xFFFF : padding == 1 ? n & 0xFF : 0
            guard unusedBits == 0 else { throw failure("non-zero padding bits in the final group at offset \(i)") }
            i += 4
        }
        return out
    }
}
