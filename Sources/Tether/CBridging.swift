import CTether
import Glibc
import TetherCore

// Moving strings, values and paths across the C boundary.

/// A `tether_value_t *` is a pointer to a Swift `Value`: owned ones are
/// allocated here, borrowed ones point at a callback's locals.
@inline(__always)
func valuePointer(_ p: OpaquePointer) -> UnsafeMutablePointer<Value> {
    UnsafeMutablePointer<Value>(p)
}

/// A value the caller owns (`tether_value_free`, `freeOwnedValue`): from
/// malloc, whose 16-byte alignment a `Value` needs no more than, not
/// `UnsafeMutablePointer.allocate`, which this toolchain's runtime sends to
/// posix_memalign (~60 instructions more per box; every
/// tether_computed_get_path and tether_state_get_path returns one).
func newOwnedValue(_ value: Value) -> OpaquePointer {
    guard let raw = malloc(MemoryLayout<Value>.stride) else {
        fatalError("tether: out of memory allocating a value")
    }
    let p = raw.bindMemory(to: Value.self, capacity: 1)
    p.initialize(to: value)
    return OpaquePointer(p)
}

/// Frees a value `newOwnedValue` made.
func freeOwnedValue(_ v: OpaquePointer) {
    let p = valuePointer(v)
    p.deinitialize(count: 1)
    free(UnsafeMutableRawPointer(p))
}

/// Bytes of a C string argument: `len` bytes, or up to the NUL when len is -1.
func cBytes(_ str: UnsafePointer<CChar>?, _ len: Int, _ what: String) throws(TetherError) -> UnsafeRawBufferPointer {
    guard let str else {
        if len == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
        throw TetherError(.invalidArgument, "\(what) is NULL")
    }
    if len == -1 { return UnsafeRawBufferPointer(start: str, count: strlen(str)) }
    guard len >= 0 else { throw TetherError(.invalidArgument, "\(what): length \(len) is negative (use -1 for NUL-terminated)") }
    return UnsafeRawBufferPointer(start: str, count: len)
}

func stringValue(_ str: UnsafePointer<CChar>?, _ len: Int, _ what: String) throws(TetherError) -> Value {
    try Value.string(validatingUTF8: try cBytes(str, len, what))
}

func jsonValue(_ json: UnsafePointer<CChar>?, _ len: Int, _ what: String) throws(TetherError) -> Value {
    try Value(json: try cBytes(json, len, what))
}

func bytesValue(_ data: UnsafeRawPointer?, _ len: Int, _ what: String) throws(TetherError) -> Value {
    guard let data else {
        if len == 0 { return .bytes([]) }
        throw TetherError(.invalidArgument, "\(what) is NULL but length is \(len)")
    }
    return .bytes(Array(UnsafeRawBufferPointer(start: data, count: len)))
}

/// A JSON Pointer argument; NULL is refused unless `nullIsRoot`.
func pointer(_ p: UnsafePointer<CChar>?, nullIsRoot: Bool = false) throws(TetherError) -> JSONPointer {
    guard let p else {
        if nullIsRoot { return .root }
        throw TetherError(.invalidArgument, "path is NULL (use \"\" for the whole value)")
    }
    if p.pointee == 0 { return .root }
    return try JSONPointer(parsingUTF8: UnsafeRawBufferPointer(start: p, count: strlen(p)))
}

/// A path for one read, checked but not parsed (`PointerText`); the bytes
/// are the caller's, valid for the call.
func pointerText(_ p: UnsafePointer<CChar>?) throws(TetherError) -> PointerText {
    guard let p else { throw TetherError(.invalidArgument, "path is NULL (use \"\" for the whole value)") }
    return try PointerText(validating: UnsafeRawBufferPointer(start: p, count: strlen(p)))
}

/// snprintf-style output: at most `size` bytes including a NUL terminator
/// (when `terminate`), `len` gets the full length.
func copyOut(_ bytes: UnsafeRawBufferPointer, _ buf: UnsafeMutableRawPointer?, _ size: Int,
             _ len: UnsafeMutablePointer<Int>?, terminate: Bool) throws(TetherError) {
    if size > 0 && buf == nil { throw TetherError(.invalidArgument, "buffer is NULL but size is \(size)") }
    if size < 0 { throw TetherError(.invalidArgument, "buffer size \(size) is negative") }
    len?.pointee = bytes.count
    guard let buf, size > 0 else { return }
    let n = terminate ? min(bytes.count, size - 1) : min(bytes.count, size)
    if n > 0 { buf.copyMemory(from: bytes.baseAddress!, byteCount: n) }
    if terminate { buf.storeBytes(of: 0, toByteOffset: n, as: UInt8.self) }
}

func copyOut(_ bytes: [UInt8], _ buf: UnsafeMutableRawPointer?, _ size: Int,
             _ len: UnsafeMutablePointer<Int>?, terminate: Bool) throws(TetherError) {
    let r: Result<Void, TetherError> = bytes.withUnsafeBytes { raw in
        Result { () throws(TetherError) in try copyOut(raw, buf, size, len, terminate: terminate) }
    }
    try r.get()
}

func copyOutString(_ s: String, _ buf: UnsafeMutablePointer<CChar>?, _ size: Int,
                   _ len: UnsafeMutablePointer<Int>?) throws(TetherError) {
    var s = s
    let r: Result<Void, TetherError> = s.withUTF8 { u in
        Result { () throws(TetherError) in
            try copyOut(UnsafeRawBufferPointer(u), UnsafeMutableRawPointer(buf), size, len, terminate: true)
        }
    }
    try r.get()
}

func copyOutJSON(_ value: Value, flags: UInt32, _ buf: UnsafeMutablePointer<CChar>?, _ size: Int,
                 _ len: UnsafeMutablePointer<Int>?) throws(TetherError) {
    guard flags & ~UInt32(TETHER_JSON_PRETTY) == 0 else {
        throw TetherError(.invalidArgument, "unknown JSON flags 0x\(String(flags, radix: 16))")
    }
    var out: [UInt8] = []
    try value.writeJSON(into: &out, pretty: flags & UInt32(TETHER_JSON_PRETTY) != 0)
    try copyOut(out, UnsafeMutableRawPointer(buf), size, len, terminate: true)
}

/// Typed scalar reads shared by tether_value_get_* and tether_state_get_*.
enum Scalar {
    static func bool(_ v: ScalarValue) throws(TetherError) -> Bool {
        if case let .bool(b) = v { return b }
        throw mismatch(v.type, "bool")
    }

    static func int(_ v: ScalarValue) throws(TetherError) -> Int64 {
        if case let .int(i) = v { return i }
        throw mismatch(v.type, "int")
    }

    static func double(_ v: ScalarValue) throws(TetherError) -> Double {
        switch v {
        case let .double(d): return d
        case let .int(i): return Double(i)
        default: throw mismatch(v.type, "double")
        }
    }

    static func bool(_ v: Value) throws(TetherError) -> Bool { try bool(v.scalar) }
    static func int(_ v: Value) throws(TetherError) -> Int64 { try int(v.scalar) }
    static func double(_ v: Value) throws(TetherError) -> Double { try double(v.scalar) }

    static func mismatch(_ type: ValueType, _ wanted: String) -> TetherError {
        TetherError(.wrongType, "holds \(type == .int || type == .object || type == .array ? "an" : "a") \(type), not \(wanted == "int" ? "an" : "a") \(wanted)")
    }
}
