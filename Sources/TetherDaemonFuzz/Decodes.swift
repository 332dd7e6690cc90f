import Glibc
import TetherCore
import TetherWire

/// The fuzzer's own decodes of the bytes it checks: a reply the daemon
/// wrote, a watch event in it, a message of the input read as a call. Each
/// is a pure function of its bytes, and the same bytes come back again and
/// again (every empty message is answered with the same InvalidCall, every
/// idle tick sends each watch the same progress: most of an input's
/// messages are empty, where libFuzzer put a run of NULs), so each is
/// decoded once per input and kept by its bytes: an input then costs the
/// daemon's work, not that plus a JSON parse of every reply (a third of the
/// fast target's time, perf). Every reply is still checked: a kept decode
/// is what decoding those bytes again would give.
///
/// Emptied after each input (`reset`), so that an input's coverage does not
/// depend on the inputs before it, and its values are freed: libFuzzer
/// stops looking for leaks after some 1,000 inputs that end holding more
/// memory than they started with (the tables keep their room, which grows
/// only a few times in a run).
enum Decodes {
    nonisolated(unsafe) static var replies = Memo<Result<Reply, VarlinkError>>()
    nonisolated(unsafe) static var watchReplies = Memo<WatchReply?>()
    nonisolated(unsafe) static var calls = Memo<Result<Call, VarlinkError>>()

    static func reset() {
        replies.removeAll()
        watchReplies.removeAll()
        calls.removeAll()
    }

    /// A reply, as `Reply(parsing:limits:)` reads it.
    static func reply(_ message: [UInt8]) -> Result<Reply, VarlinkError> {
        replies.value(message) { message in
            Result { () throws(VarlinkError) in try Reply(parsing: message, limits: DaemonFuzzer.limits) }
        }
    }

    /// A reply's watch event (nil: the reply is no WatchReply).
    static func watchReply(_ message: [UInt8], _ reply: Reply) -> WatchReply? {
        watchReplies.value(message) { _ in try? WatchReply(parameters: reply.parameters, limits: DaemonFuzzer.limits) }
    }

    /// A message of the input (without its NUL), as the daemon parses a call.
    static func call(_ message: UnsafeRawBufferPointer) -> Result<Call, VarlinkError> {
        calls.value(message) { bytes in
            bytes.withUnsafeBytes { raw in
                Result { () throws(VarlinkError) in try Call(parsing: raw, limits: DaemonFuzzer.limits) }
            }
        }
    }
}

/// Values kept by the bytes they were computed from (an input's replies
/// and messages: as many as its bytes bound).
///
/// Kept by the bytes' hash, each entry with its bytes, compared as one
/// block: `[UInt8]`'s own Hashable feeds the hasher a byte at a time, and
/// its == compares a byte at a time, both specialized in this module and so
/// instrumented (a traced comparison per byte): the lookups were 14% of an
/// input of empty messages (perf), more than the parses they save. A
/// lookup copies nothing; only a new entry keeps a copy of its bytes.
struct Memo<Value> {
    /// A hash's latest entry; each entry links to the one before with its hash.
    private var heads: [Int: Int] = [:]
    private var entries: [(bytes: [UInt8], value: Value, next: Int)] = []

    /// Frees every kept value; the tables keep their room, so that the next
    /// input does not regrow them from nothing (1.6% of the fast target's
    /// instructions). They grow a few times, to the most entries an input
    /// had (then libFuzzer looks for a leak, and finds none).
    mutating func removeAll() {
        heads.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
    }

    mutating func value(_ key: [UInt8], _ compute: ([UInt8]) -> Value) -> Value {
        key.withUnsafeBytes { raw in value(raw, { _ in compute(key) }) }
    }

    /// The value kept for these bytes, or `compute`'s (given the bytes),
    /// then kept.
    mutating func value(_ key: UnsafeRawBufferPointer, _ compute: ([UInt8]) -> Value) -> Value {
        var hasher = Hasher()
        hasher.combine(bytes: key)
        let hash = hasher.finalize()
        var i = heads[hash] ?? -1
        while i >= 0 {
            if Memo.same(entries[i].bytes, key) { return entries[i].value }
            i = entries[i].next
        }
        let bytes = Array(key)
        let value = compute(bytes)
        entries.append((bytes, value, heads[hash] ?? -1))
        heads[hash] = entries.count - 1
        return value
    }

    private static func same(_ kept: [UInt8], _ key: UnsafeRawBufferPointer) -> Bool {
        guard kept.count == key.count else { return false }
        return kept.withUnsafeBytes { x in x.count == 0 || memcmp(x.baseAddress!, key.baseAddress!, x.count) == 0 }
    }
}
