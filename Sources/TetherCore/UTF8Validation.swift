// UTF8Validation.swift — strict UTF-8 (RFC 3629) validation.

/// Strict UTF-8 (RFC 3629): no overlong forms, no encoded surrogates, nothing
/// above U+10FFFF, no truncated sequences. Shared by the JSON parser and by
/// strings that arrive from C, so both accept exactly the same bytes.
enum UTF8Validation {
    /// The length of the well-formed sequence starting at `p`, or 0 when the
    /// bytes there are not one. `available` bounds how far it may look.
    @inline(__always)
    static func sequenceLength(_ p: UnsafePointer<UInt8>, available: Int) -> Int {
        let b0 = p[0]
        if b0 < 0x80 { return 1 }
        @inline(__always) func isContinuation(_ b: UInt8) -> Bool { b & 0xC0 == 0x80 }
        switch b0 {
        case 0xC2...0xDF:
            guard available >= 2, isContinuation(p[1]) else { return 0 }
            return 2
        case 0xE0...0xEF:
            guard available >= 3 else { return 0 }
            let b1 = p[1]
            // E0 would be overlong below A0; ED would encode surrogates from A0.
            let low: UInt8 = b0 == 0xE0 ? 0xA0 : 0x80
            let high: UInt8 = b0 == 0xED ? 0x9F : 0xBF
            guard b1 >= low, b1 <= high, isContinuation(p[2]) else { return 0 }
            return 3
        case 0xF0...0xF4:
            guard available >= 4 else { return 0 }
            let b1 = p[1]
            // F0 would be overlong below 90; F4 goes past U+10FFFF from 90.
            let low: UInt8 = b0 == 0xF0 ? 0x90 : 0x80
            let high: UInt8 = b0 == 0xF4 ? 0x8F : 0xBF
            guard b1 >= low, b1 <= high, isContinuation(p[2]), isContinuation(p[3]) else { return 0 }
            return 4
        default:
            // 80...BF (stray continuation), C0/C1 (overlong), F5...FF (too large).
            return 0
        }
    }

    /// The offset of the first ill-formed sequence, or nil when all is valid.
    static func firstInvalidOffset(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        let count = bytes.count
        var i = 0
        while i < count {
            // ASCII is the common case: skip it eight bytes at a time.
            while i + 8 <= count,
                  UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                i += 8
            }
            guard i < count else { break }
            let n = sequenceLength(base + i, available: count - i)
            if n == 0 { return i }
            i += n
        }
        return nil
    }
}

extension Value {
    /// A string value from raw bytes that must be valid UTF-8 (embedded NUL
    /// allowed); invalid UTF-8 -> .invalidArgument naming the byte offset.
    public static func string(validatingUTF8 bytes: UnsafeRawBufferPointer) throws(TetherError) -> Value {
        .string(try String(validatingUTF8: bytes))
    }
}

extension String {
    /// The bytes as a `String`, or the error naming the first ill-formed
    /// sequence.
    public init(validatingUTF8 bytes: UnsafeRawBufferPointer) throws(TetherError) {
        try String.checkUTF8(bytes)
        self = String(decoding: bytes, as: UTF8.self)
    }

    /// Throws the error `init(validatingUTF8:)` would, without making the
    /// string.
    public static func checkUTF8(_ bytes: UnsafeRawBufferPointer) throws(TetherError) {
        if let offset = UTF8Validation.firstInvalidOffset(bytes) {
            let b = bytes[offset]
            throw TetherError(.invalidArgument,
                              "string is not valid UTF-8: ill-formed sequence at byte offset \(offset) (byte \(hexByte(b)))")
        }
    }
}

/// "0xC3": how messages show a byte.
func hexByte(_ b: UInt8) -> String {
    let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F"]
    return "0x" + String(digits[Int(b >> 4)]) + String(digits[Int(b & 0xF)])
}
