/// Token-level reading of JSON bytes, for the fast paths that recognise
/// the commonest calls from their bytes (`SimpleSetCall`, `SimpleGetCall`);
/// every method skips the whitespace before what it reads.
///
/// Why hand-written: see `SimpleSetCall`. It only says yes to what the
/// slow path would read the same way; anything it cannot vouch for is nil,
/// and the call goes the slow way.
struct PlainJSONScanner {
    let base: UnsafePointer<UInt8>
    let end: Int
    var pos = 0

    var atEnd: Bool {
        mutating get {
            skipWhitespace()
            return pos == end
        }
    }

    mutating func skipWhitespace() {
        while pos < end {
            switch base[pos] {
            case 0x20, 0x09, 0x0A, 0x0D: pos += 1
            default: return
            }
        }
    }

    /// Consumes `byte` if it comes next.
    mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard pos < end, base[pos] == byte else { return false }
        pos += 1
        return true
    }

    /// A string of printable ASCII without escapes (its bytes between
    /// the quotes); nil for any other string, so that the bytes are the
    /// string's text and valid UTF-8 without decoding anything.
    mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = pos
        while pos < end {
            let b = base[pos]
            if b == UInt8(ascii: "\"") {
                pos += 1
                return UnsafeBufferPointer(start: base + start, count: pos - 1 - start)
            }
            guard b >= 0x20, b < 0x7F, b != UInt8(ascii: "\\") else { return nil }
            pos += 1
        }
        return nil
    }

    /// The bytes of the JSON value that starts here, found by matching
    /// brackets outside strings (a string's `\"` does not end it). Not
    /// a validation: the caller parses what this returns, and a wrong
    /// guess only fails that parse or the scan of what follows.
    mutating func valueExtent() -> UnsafeBufferPointer<UInt8>? {
        skipWhitespace()
        let start = pos
        var depth = 0
        var inString = false
        while pos < end {
            let b = base[pos]
            if inString {
                if b == UInt8(ascii: "\\") {
                    pos += 1  // the escaped byte cannot end the string
                } else if b == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 { pos += 1; break }
                }
            } else {
                switch b {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return pos > start ? UnsafeBufferPointer(start: base + start, count: pos - start) : nil }
                    depth -= 1
                    if depth == 0 { pos += 1; return UnsafeBufferPointer(start: base + start, count: pos - start) }
                case UInt8(ascii: ","), 0x20, 0x09, 0x0A, 0x0D:
                    if depth == 0 { return pos > start ? UnsafeBufferPointer(start: base + start, count: pos - start) : nil }
                default: break
                }
            }
            pos += 1
        }
        guard !inString, depth == 0, pos > start, pos <= end else { return nil }
        return UnsafeBufferPointer(start: base + start, count: pos - start)
    }

    /// Byte by byte: the keys are a few bytes long (memcmp's call cost more).
    static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount, let base = bytes.baseAddress else { return false }
        let expected = text.utf8Start
        for i in 0..<bytes.count where base[i] != expected[i] { return false }
        return true
    }

    /// The envelope `{"method":"<method>","parameters":{…}}` (either key
    /// order, each once, nothing else), its parameters read by
    /// `parameters`; nil for anything else.
    static func envelope<T>(_ base: UnsafePointer<UInt8>, _ count: Int, method expected: StaticString,
                            parameters read: (inout PlainJSONScanner) -> T?) -> T? {
        var scan = PlainJSONScanner(base: base, end: count)
        var sawMethod = false
        var call: T?
        guard scan.take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let key = scan.plainString() else { return nil }
            guard scan.take(UInt8(ascii: ":")) else { return nil }
            if equal(key, "method") && !sawMethod {
                guard let method = scan.plainString(), equal(method, expected) else { return nil }
                sawMethod = true
            } else if equal(key, "parameters") && call == nil {
                guard let parameters = read(&scan) else { return nil }
                call = parameters
            } else {
                return nil
            }
        } while scan.take(UInt8(ascii: ","))
        guard scan.take(UInt8(ascii: "}")), scan.atEnd, sawMethod else { return nil }
        return call
    }
}
