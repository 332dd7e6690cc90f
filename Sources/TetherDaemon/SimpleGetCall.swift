import Glibc
import TetherCore
import TetherWire

/// A Get call in the one shape nearly every client sends:
/// `{"method":"io.tether.Get","parameters":{"name":"…"}}` (either key
/// order, JSON whitespace between tokens), recognised from its bytes as
/// `SimpleSetCall` recognises a Set, and answered by `Store.appendGet`
/// without a `Value` tree for the envelope or the reply.
///
/// Why: of a Get's 33 k instructions, 0.5 k read the state; parsing the
/// envelope into generic trees, `Call(from:)`, the method lookup,
/// `GetParameters` and the reply's tree were the rest
/// (docs/daemon-performance.md). Anything else (a `path`, `oneway`/`more`/
/// `upgrade`, an escape or non-ASCII in a key, the method or the name, a
/// duplicate key, bad JSON) is nil here and goes the slow way, which has
/// every error message. `SimpleGetCallTests` and the fuzzer's `fastpath`
/// target hold both paths' replies equal.
struct SimpleGetCall {
    var name: String

    static func parse(_ bytes: UnsafeRawBufferPointer) -> SimpleGetCall? {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        // The canonical bytes compared at once, as SimpleSetCall does.
        let prefix: StaticString = #"{"method":"io.tether.Get","parameters":{"name":"#
        let n = prefix.utf8CodeUnitCount
        if bytes.count > n, memcmp(base, prefix.utf8Start, n) == 0 {
            var scan = PlainJSONScanner(base: base, end: bytes.count, pos: n)
            if let name = scan.plainString(), scan.take(UInt8(ascii: "}")), scan.take(UInt8(ascii: "}")), scan.atEnd {
                return SimpleGetCall(name: String(decoding: name, as: UTF8.self))
            }
        }
        return PlainJSONScanner.envelope(base, bytes.count, method: "io.tether.Get") { scan in
            // `{"name":"…"}`, nothing else.
            guard scan.take(UInt8(ascii: "{")), let key = scan.plainString(), PlainJSONScanner.equal(key, "name"),
                  scan.take(UInt8(ascii: ":")), let name = scan.plainString(), scan.take(UInt8(ascii: "}")) else { return nil }
            return SimpleGetCall(name: String(decoding: name, as: UTF8.self))
        }
    }
}
