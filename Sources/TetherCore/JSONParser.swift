// JSONParser.swift — JSON text in: strict RFC 8259 parsing of UTF-8 bytes into values.

/// Strict RFC 8259 JSON in: values from raw UTF-8 bytes.
extension Value {
    /// How deeply arrays and objects may nest in parsed JSON. Parsing itself
    /// never recurses; the limit keeps hostile input from building values too
    /// deep for the recursive code that later compares or frees them.
    public static let defaultMaxJSONDepth: Int = 512

    /// Parses one JSON text. Integers that fit Int64 become .int, every other
    /// number .double; duplicate keys keep the last value at the first key's
    /// place. Errors are .badJSON with line, column and byte of the problem.
    public init(json bytes: UnsafeRawBufferPointer, maxDepth: Int = Value.defaultMaxJSONDepth) throws(TetherError) {
        guard maxDepth >= 0 else {
            throw TetherError(.invalidArgument, "maxDepth must not be negative (got \(maxDepth))")
        }
        var parser = JSONParser(bytes, maxDepth: maxDepth)
        self = try parser.parseDocument()
    }

    public init(json text: String, maxDepth: Int = Value.defaultMaxJSONDepth) throws(TetherError) {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(TetherError) -> Value in
                try Value(json: UnsafeRawBufferPointer(utf8), maxDepth: maxDepth)
            }
        }
        self = try result.get()
    }
}

private extension UInt8 {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let comma = UInt8(ascii: ",")
    static let colon = UInt8(ascii: ":")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let digit0 = UInt8(ascii: "0")
    static let digit9 = UInt8(ascii: "9")
    static let dot = UInt8(ascii: ".")
    static let lowerE = UInt8(ascii: "e")
    static let upperE = UInt8(ascii: "E")
    static let newline = UInt8(ascii: "\n")

    var isDigit: Bool { self >= .digit0 && self <= .digit9 }
}

/// A single pass over the bytes with an explicit stack of open containers,
/// so no input can exhaust the call stack.
struct JSONParser {
    private let base: UnsafePointer<UInt8>
    private let end: Int
    private var pos = 0
    private let maxDepth: Int
    /// Reused buffer for strings that contain escapes.
    private var scratch: [UInt8] = []

    /// An open container: its members so far are `pending[start...]`, an
    /// object's names `pendingKeys[keyStart...]` (while a member's value is
    /// being parsed, its name is there already, one ahead).
    private struct Level {
        let isObject: Bool
        let start: Int
        let keyStart: Int
    }

    /// Stands in for the address of empty input, which may be nil; with
    /// end == 0 it is never read.
    nonisolated(unsafe) private static let emptyInput = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

    init(_ bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        if let start = bytes.baseAddress, bytes.count > 0 {
            base = start.assumingMemoryBound(to: UInt8.self)
            end = bytes.count
        } else {
            base = UnsafePointer(Self.emptyInput)
            end = 0
        }
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(TetherError) -> Value {
        // Every open container's members wait on one stack for the whole
        // parse, and a container is built when it closes, at its exact
        // size: one allocation for an array's elements, two for an
        // object's names and values, where appending to each container's
        // own arrays regrew them at 1, 2, 4... members (6% of a parse's
        // instructions on the fuzzer's corpus: docs/robustness.md, "1,000 a
        // second, reached").
        var levels: [Level] = []
        var pending: [Value] = []
        var pendingKeys: [MemberKey] = []
        var value: Value
        parsing: while true {
            skipWhitespace()
            guard pos < end else { throw failure(at: pos, "expected a value, found end of input") }
            switch base[pos] {
            case .openBrace:
                guard levels.count < maxDepth else { throw tooDeep() }
                pos += 1
                skipWhitespace()
                if pos < end, base[pos] == .closeBrace {
                    pos += 1
                    value = .object(ValueObject())
                } else {
                    if levels.isEmpty { reserveStacks(&levels, &pending, &pendingKeys) }
                    levels.append(Level(isObject: true, start: pending.count, keyStart: pendingKeys.count))
                    pendingKeys.append(MemberKey(try parseKey(afterComma: false)))
                    continue parsing
                }
            case .openBracket:
                guard levels.count < maxDepth else { throw tooDeep() }
                pos += 1
                skipWhitespace()
                if pos < end, base[pos] == .closeBracket {
                    pos += 1
                    value = .array([])
                } else {
                    if levels.isEmpty { reserveStacks(&levels, &pending, &pendingKeys) }
                    levels.append(Level(isObject: false, start: pending.count, keyStart: pendingKeys.count))
                    continue parsing
                }
            case .quote:
                value = .string(try parseString())
            case UInt8(ascii: "t"):
                try parseLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try parseLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try parseLiteral("null")
                value = .null
            case .minus, .digit0 ... .digit9:
                value = try parseNumber()
            default:
                throw failure(at: pos, "expected a value, found \(describe(at: pos))\(hint(at: pos))")
            }

            // A value is complete: store it in its container, closing every
            // container that ends right after it.
            while true {
                guard let top = levels.indices.last else {
                    skipWhitespace()
                    guard pos == end else {
                        throw failure(at: pos, "expected end of input after the top-level value, found \(describe(at: pos))")
                    }
                    return value
                }
                let isObject = levels[top].isObject
                pending.append(value)
                skipWhitespace()
                let close: UInt8 = isObject ? .closeBrace : .closeBracket
                if pos < end, base[pos] == .comma {
                    pos += 1
                    skipWhitespace()
                    if isObject {
                        pendingKeys.append(MemberKey(try parseKey(afterComma: true)))
                    } else if pos < end, base[pos] == .closeBracket {
                        throw failure(at: pos, "expected a value after ',', found ']' (trailing commas are not allowed)")
                    }
                    continue parsing
                }
                guard pos < end, base[pos] == close else {
                    let what = isObject ? "',' or '}' after an object member" : "',' or ']' after an array element"
                    throw failure(at: pos, "expected \(what), found \(describe(at: pos))")
                }
                pos += 1
                let closed = levels.removeLast()
                let start = closed.start
                if isObject {
                    value = .object(ValueObject(Self.members(&pendingKeys, from: closed.keyStart, &pending, from: start)))
                } else {
                    value = .array(Array(pending[start...]))
                    pending.removeSubrange(start...)
                }
            }
        }
    }

    /// Room on the stacks for what most documents hold (a call's envelope
    /// and its parameters), so that they are allocated once, not regrown at
    /// 1, 2, 4... entries; a bigger document grows them as usual.
    private func reserveStacks(_ levels: inout [Level], _ pending: inout [Value], _ pendingKeys: inout [MemberKey]) {
        if levels.capacity == 0 { levels.reserveCapacity(8) }
        if pending.capacity == 0 { pending.reserveCapacity(16) }
        if pendingKeys.capacity == 0 { pendingKeys.reserveCapacity(16) }
    }

    /// The object whose members are the names from `keyStart` on and the
    /// values from `start` on (as many), taken off the stacks: a repeated
    /// name keeps the last value at the first name's place (the table's
    /// `updateValue`).
    private static func members(_ keys: inout [MemberKey], from keyStart: Int,
                                _ values: inout [Value], from start: Int) -> MemberTable {
        var table = MemberTable(reservingCapacity: values.count - start)
        for i in 0..<(values.count - start) {
            table.updateValue(values[start + i], forKey: keys[keyStart + i])
        }
        keys.removeSubrange(keyStart...)
        values.removeSubrange(start...)
        return table
    }

    // MARK: - Pieces

    @inline(__always)
    private mutating func skipWhitespace() {
        while pos < end {
            switch base[pos] {
            case 0x20, 0x09, 0x0A, 0x0D: pos += 1
            default: return
            }
        }
    }

    /// A member name and its colon; `pos` is at the name's opening quote.
    private mutating func parseKey(afterComma: Bool) throws(TetherError) -> String {
        guard pos < end, base[pos] == .quote else {
            let trailing = afterComma && pos < end && base[pos] == .closeBrace
            throw failure(at: pos, "expected a string for an object key, found \(describe(at: pos))"
                + (trailing ? " (trailing commas are not allowed)" : ""))
        }
        let key = try parseString()
        skipWhitespace()
        guard pos < end, base[pos] == .colon else {
            throw failure(at: pos, "expected ':' after an object key, found \(describe(at: pos))")
        }
        pos += 1
        return key
    }

    private mutating func parseLiteral(_ literal: StaticString) throws(TetherError) {
        let bytes = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for i in bytes.indices where pos + i >= end || base[pos + i] != bytes[i] {
            throw failure(at: pos + i, "invalid literal, expected '\(literal)', found \(describe(at: pos + i))")
        }
        pos += bytes.count
    }

    private mutating func parseNumber() throws(TetherError) -> Value {
        let start = pos
        let negative = base[pos] == .minus
        if negative { pos += 1 }
        let digitsStart = pos
        guard pos < end, base[pos].isDigit else {
            throw failure(at: pos, "expected a digit after '-', found \(describe(at: pos))")
        }
        if base[pos] == .digit0 {
            pos += 1
            if pos < end, base[pos].isDigit {
                throw failure(at: start, "numbers cannot have leading zeros")
            }
        } else {
            while pos < end, base[pos].isDigit { pos += 1 }
        }
        let digitsEnd = pos
        var isInteger = true
        if pos < end, base[pos] == .dot {
            isInteger = false
            pos += 1
            guard pos < end, base[pos].isDigit else {
                throw failure(at: pos, "expected a digit after the decimal point, found \(describe(at: pos))")
            }
            while pos < end, base[pos].isDigit { pos += 1 }
        }
        if pos < end, base[pos] == .lowerE || base[pos] == .upperE {
            isInteger = false
            pos += 1
            if pos < end, base[pos] == .plus || base[pos] == .minus { pos += 1 }
            guard pos < end, base[pos].isDigit else {
                throw failure(at: pos, "expected a digit in the exponent, found \(describe(at: pos))")
            }
            while pos < end, base[pos].isDigit { pos += 1 }
        }

        // 19 digits always fit UInt64; whether they fit Int64 is checked below.
        if isInteger, digitsEnd - digitsStart <= 19 {
            var magnitude: UInt64 = 0
            for i in digitsStart..<digitsEnd { magnitude = magnitude * 10 + UInt64(base[i] - .digit0) }
            if negative, magnitude <= UInt64(Int64.max) + 1 {
                return .int(Int64(bitPattern: 0 &- magnitude))
            }
            if !negative, magnitude <= UInt64(Int64.max) {
                return .int(Int64(magnitude))
            }
        }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: pos - start), as: UTF8.self)
        guard let d = Double(text), d.isFinite else {
            let shown = text.utf8.count <= 40 ? text : String(text.prefix(37)) + "..."
            throw failure(at: start, "the number \(shown) is too large for a double")
        }
        return .double(d)
    }

    /// A string whose opening quote is at `pos`. Plain runs are taken from the
    /// input as they are; only escapes go through `scratch`.
    private mutating func parseString() throws(TetherError) -> String {
        pos += 1
        var runStart = pos
        var escaped = false
        while true {
            skipPlainASCII()
            guard pos < end else {
                throw failure(at: pos, "unterminated string, expected '\"' before the end of input")
            }
            let b = base[pos]
            if b == .quote {
                let s: String
                if escaped {
                    scratch.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: pos - runStart))
                    s = String(decoding: scratch, as: UTF8.self)
                } else {
                    s = String(decoding: UnsafeBufferPointer(start: base + runStart, count: pos - runStart), as: UTF8.self)
                }
                pos += 1
                return s
            } else if b == .backslash {
                if !escaped {
                    escaped = true
                    scratch.removeAll(keepingCapacity: true)
                }
                scratch.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: pos - runStart))
                try parseEscape()
                runStart = pos
            } else if b < 0x20 {
                throw failure(at: pos, "control character U+00\(hexDigits(UInt32(b), count: 2)) must be escaped in a string")
            } else if b < 0x80 {
                pos += 1
            } else {
                let n = UTF8Validation.sequenceLength(base + pos, available: end - pos)
                guard n > 0 else { throw failure(at: pos, "invalid UTF-8 in a string (byte \(hexByte(b)))") }
                pos += n
            }
        }
    }

    /// Skips bytes that need no attention in a string, eight at a time.
    @inline(__always)
    private mutating func skipPlainASCII() {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while pos + 8 <= end {
            let w = UnsafeRawPointer(base + pos).loadUnaligned(as: UInt64.self)
            let quotes = w ^ (ones &* UInt64(UInt8.quote))
            let backslashes = w ^ (ones &* UInt64(UInt8.backslash))
            // Per byte, the high bit is set where the byte is zero (or < 0x20).
            let special = (w | ((w &- ones &* 0x20) & ~w)
                | ((quotes &- ones) & ~quotes)
                | ((backslashes &- ones) & ~backslashes)) & highs
            if special != 0 { return }
            pos += 8
        }
    }

    /// An escape whose backslash is at `pos`; appends its UTF-8 to `scratch`.
    private mutating func parseEscape() throws(TetherError) {
        let escapeStart = pos
        guard pos + 1 < end else {
            throw failure(at: pos + 1, "unterminated string, expected an escape after '\\', found end of input")
        }
        let c = base[pos + 1]
        pos += 2
        switch c {
        case .quote, .backslash, UInt8(ascii: "/"): scratch.append(c)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard pos + 1 < end, base[pos] == .backslash, base[pos + 1] == UInt8(ascii: "u") else {
                    throw failure(at: escapeStart,
                                  "lone surrogate \\u\(hexDigits(scalar, count: 4)) in a string (a high surrogate must be followed by a \\u escape of a low surrogate)")
                }
                pos += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw failure(at: escapeStart,
                                  "lone surrogate \\u\(hexDigits(scalar, count: 4)) in a string (followed by \\u\(hexDigits(low, count: 4)), not a low surrogate)")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure(at: escapeStart,
                              "lone surrogate \\u\(hexDigits(scalar, count: 4)) in a string (a low surrogate must follow a high surrogate)")
            }
            appendUTF8(scalar)
        default:
            throw failure(at: escapeStart,
                          "invalid escape '\\' followed by \(describe(at: escapeStart + 1)) in a string (valid: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
        }
    }

    private mutating func parseHex4() throws(TetherError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard pos < end else { throw failure(at: pos, "expected 4 hex digits after \\u, found end of input") }
            let b = base[pos]
            let digit: UInt8
            switch b {
            case .digit0 ... .digit9: digit = b - .digit0
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw failure(at: pos, "expected 4 hex digits after \\u, found \(describe(at: pos))")
            }
            value = value << 4 | UInt32(digit)
            pos += 1
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    // MARK: - Errors (built only when failing)

    private func tooDeep() -> TetherError {
        failure(at: pos, "arrays and objects nest deeper than the limit of \(maxDepth)")
    }

    private func failure(at offset: Int, _ what: String) -> TetherError {
        var line = 1
        var lineStart = 0
        for i in 0..<offset where base[i] == .newline {
            line += 1
            lineStart = i + 1
        }
        // Columns count characters (Unicode scalars), not bytes.
        var column = 1
        for i in lineStart..<offset where base[i] & 0xC0 != 0x80 { column += 1 }
        return TetherError(.badJSON, "invalid JSON at line \(line), column \(column) (byte \(offset)): \(what)")
    }

    /// "'x'", "'é'", "byte 0x0A", "end of input": what was found at `offset`.
    private func describe(at offset: Int) -> String {
        guard offset < end else { return "end of input" }
        let b = base[offset]
        if b > 0x20, b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        if b >= 0x80 {
            let n = UTF8Validation.sequenceLength(base + offset, available: end - offset)
            if n > 0 {
                let text = String(decoding: UnsafeBufferPointer(start: base + offset, count: n), as: UTF8.self)
                let scalar = text.unicodeScalars.first!.value
                return "'\(text)' (U+\(hexDigits(scalar, count: 4)))"
            }
        }
        return "byte \(hexByte(b))"
    }

    /// Why a byte that cannot start a value might be there.
    private func hint(at offset: Int) -> String {
        switch base[offset] {
        case UInt8(ascii: "/"): " (comments are not allowed)"
        case .plus: " (numbers cannot start with '+')"
        case .dot: " (numbers need a digit before the decimal point)"
        case UInt8(ascii: "N"), UInt8(ascii: "I"): " (NaN and Infinity are not JSON)"
        case UInt8(ascii: "'"): " (strings use double quotes)"
        case 0xEF where offset == 0: " (a byte order mark is not allowed)"
        default: ""
        }
    }
}

/// Upper-case hex with at least `count` digits, for messages.
private func hexDigits(_ value: UInt32, count: Int) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, count - digits.count)) + digits
}
