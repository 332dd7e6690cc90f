import TetherCore

/// A growable byte buffer written through a pointer, for text built a few
/// bytes at a time on a hot path (a log row's JSON, LogRowText).
///
/// Why not `[UInt8]`: every `append` to an array checks uniqueness and
/// capacity and goes through generic code; a log row of ~130 bytes in ~20
/// pieces cost ~3 k instructions that way (callgrind,
/// docs/daemon-performance.md). Here a piece is one capacity check and a
/// copy. Noncopyable: the buffer has one owner, which frees it.
struct ByteWriter: ~Copyable {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private(set) var capacity: Int

    init(capacity: Int = 4096) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The bytes written, from `start` to `end` (valid until the next write).
    func bytes(_ start: Int, _ end: Int) -> UnsafeBufferPointer<UInt8> {
        precondition(0 <= start && start <= end && end <= count)
        return UnsafeBufferPointer(start: base + start, count: end - start)
    }

    /// Forgets the bytes, keeping the memory.
    mutating func removeAll() { count = 0 }

    /// Room for `n` more bytes.
    @inline(__always)
    mutating func reserve(_ n: Int) {
        if capacity - count < n { grow(n) }
    }

    private mutating func grow(_ n: Int) {
        let newCapacity = max(capacity * 2, count + n)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.initialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let from = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        UnsafeMutableRawPointer(base + count).copyMemory(from: from, byteCount: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// An int as `JSONWriter.writeInt` writes it.
    @inline(__always)
    mutating func appendInt(_ n: Int64) {
        reserve(JSONBytes.maxIntBytes)
        count += JSONBytes.writeInt(n, at: base + count)
    }

    /// A string as `JSONWriter.writeString` writes it: its bytes between
    /// quotes when none needs an escape (none below 0x20, no `"` or `\`),
    /// else through that writer.
    mutating func appendString(_ s: String) throws(TetherError) {
        // Byte by byte from the UTF-8 view (withUTF8's closure, for a name
        // of a few bytes, cost more than the copy).
        let utf8 = s.utf8
        reserve(utf8.count + 2)
        let start = count
        base[count] = UInt8(ascii: "\"")
        count += 1
        for b in utf8 {
            if b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
                count = start
                var escaped: [UInt8] = []
                try Value.string(s).writeJSON(into: &escaped)
                append(escaped)
                return
            }
            base[count] = b
            count += 1
        }
        base[count] = UInt8(ascii: "\"")
        count += 1
    }

    /// A value as `Value.writeJSON` writes it (an int written here).
    mutating func appendValue(_ value: Value) throws(TetherError) {
        if case .int(let n) = value {
            appendInt(n)
        } else {
            var text: [UInt8] = []
            try value.writeJSON(into: &text)
            append(text)
        }
    }
}
