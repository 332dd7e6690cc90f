import Glibc

/// The offsets of an input's NULs (where its messages end), found with
/// memchr: the fuzzer's own loops over the input's bytes are instrumented
/// like the daemon's, so a `where byte == 0` test was a traced comparison
/// per byte, several passes per input, telling libFuzzer nothing about the
/// daemon.
struct NULs: Sequence, IteratorProtocol {
    let bytes: UnsafeRawBufferPointer
    private var from = 0

    init(in bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    mutating func next() -> Int? {
        guard from < bytes.count, let base = bytes.baseAddress,
              let hit = memchr(base + from, 0, bytes.count - from) else { return nil }
        let offset = base.distance(to: UnsafeRawPointer(hit))
        from = offset + 1
        return offset
    }
}
