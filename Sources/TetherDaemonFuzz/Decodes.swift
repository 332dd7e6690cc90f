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
/// depend on the inputs before it, and its allocations are freed: libFuzzer
/// stops looking for leaks after some 1,000 inputs that end holding more memory
/// than they started with.
enum Decodes {
    nonisolated(unsafe) static var replies = Memo<Result<Reply, VarlinkError>>()
    nonisolated(unsafe) static var watchReplies = Memo<WatchReply?>()
    nonisolated(unsafe) static var calls = Memo<Result<Call, VarlinkError>>()

    static func reset() {
        replies = Memo()
        watchReplies = Memo()
        calls = Memo()
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
        calls.value(Array(message)) { bytes in
            bytes.withUnsafeBytes { raw in
                Result { () throws(VarlinkError) in try Call(parsing: raw, limits: DaemonFuzzer.limits) }
            }
        }
    }
}

/// Values kept by the bytes they were computed from (an input's replies
/// and messages: as many as its bytes bound).
struct Memo<Value> {
    private var table: [Key: Value] = [:]

    mutating func value(_ key: [UInt8], _ compute: ([UInt8]) -> Value) -> Value {
        if let kept = table[Key(bytes: key)] { return kept }
        let value = compute(key)
        table[Key(bytes: key)] = value
        return value
    }

    /// The bytes as a dictionary key, hashed and compared as one block:
    /// `[UInt8]`'s own Hashable feeds the hasher a byte at a time, and its
    /// == compares a byte at a time, both specialized in this module and
    /// so instrumented (a traced comparison per byte): the lookups were
    /// 14% of an input of empty messages (perf), more than the parses
    /// they save.
    struct Key: Hashable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }

        static func == (a: Key, b: Key) -> Bool {
            guard a.bytes.count == b.bytes.count else { return false }
            return a.bytes.withUnsafeBytes { x in
                b.bytes.withUnsafeBytes { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
            }
        }
    }
}
