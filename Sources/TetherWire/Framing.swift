// Framing.swift — Varlink's framing: each message is followed by one NUL byte on the stream.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TetherCore

/// Splits a byte stream into messages at NUL bytes, fed chunks of any size
/// as a socket delivers them: a message may arrive in many chunks, and one
/// chunk may hold many messages and the start of the next.
///
/// A message that grows past `maxMessage` bytes is refused as soon as it is
/// known to, before its NUL arrives: the decoder does not buffer a peer's
/// stream without end. After that error the stream cannot be trusted (where
/// the next message starts is unknown), so every later call throws the
/// same error: send it and close the connection.
///
/// Two NULs in a row make an empty message; it is handed out like any
/// other (`Call(parsing:)` refuses it with a clear error).
public struct MessageDecoder: Sendable {
    public let maxMessage: Int
    private var buffer: [UInt8] = []
    /// Where the pending message starts in `buffer`.
    private var start = 0
    /// Bytes from `start` already known to hold no NUL, so that a message
    /// fed byte by byte is scanned once, not once per byte.
    private var scanned = 0
    private var failure: VarlinkError?

    public init(maxMessage: Int = Limits.defaults.maxMessage) {
        precondition(maxMessage >= 0, "maxMessage must not be negative")
        self.maxMessage = maxMessage
    }

    /// Bytes received and not yet handed out as messages.
    public var pendingCount: Int { buffer.count - start }

    static let keptCapacity = 64 << 10

    /// Appends the next bytes of the stream.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Drops what was handed out once that is at least half the buffer, so
    /// moving the rest costs no more than the bytes already consumed.
    private mutating func compact() {
        guard start > 0 else { return }
        if start == buffer.count {
            // An idle connection keeps a small buffer, not the one its
            // largest call needed: the daemon counts a uid's unfinished
            // input against a cap, and capacity kept here would not count.
            if buffer.capacity > MessageDecoder.keptCapacity { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
            start = 0
        } else if start >= buffer.count - start {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }

    /// Calls `body` with the next complete message (its bytes without the
    /// NUL, valid only during the call) and returns what it returns; nil
    /// when no complete message is buffered. Throws io.tether.LimitExceeded
    /// (limit "message") when the pending message is longer than
    /// `maxMessage`, and from then on.
    public mutating func nextMessage<R>(_ body: (UnsafeRawBufferPointer) -> R) throws(VarlinkError) -> R? {
        if let failure { throw failure }
        let found = buffer.withUnsafeBytes { raw in
            MessageDecoder.firstNUL(in: raw, from: start + scanned)
        }
        guard let end = found else {
            if start == buffer.count { compact() }  // every message handed out: let a large buffer go now
            scanned = buffer.count - start
            if scanned > maxMessage { throw fail(length: scanned, complete: false) }
            return nil
        }
        let length = end - start
        if length > maxMessage { throw fail(length: length, complete: true) }
        let result = buffer.withUnsafeBytes { raw in
            body(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
        }
        start = end + 1
        scanned = 0
        return result
    }

    /// The next complete message as an array, or nil; see `nextMessage(_:)`.
    public mutating func next() throws(VarlinkError) -> [UInt8]? {
        try nextMessage { Array($0) }
    }

    /// Whether a whole message is buffered (a NUL after the handed-out ones).
    public var hasCompleteMessage: Bool {
        guard failure == nil else { return true }  // nextMessage throws it
        return buffer.withUnsafeBytes { raw in MessageDecoder.firstNUL(in: raw, from: start + scanned) } != nil
    }

    /// Call at the end of the stream, once `next` has returned nil: throws
    /// io.tether.InvalidCall when bytes without a NUL remain (the peer
    /// closed in the middle of a message), or the error `next` threw.
    public func finish() throws(VarlinkError) {
        if let failure { throw failure }
        let pending = pendingCount
        if pending > 0 {
            throw .invalidCall(field: nil, "the stream ended inside a message: \(pending) byte\(pending == 1 ? "" : "s") without a terminating NUL")
        }
    }

    private mutating func fail(length: Int, complete: Bool) -> VarlinkError {
        let error = VarlinkError.limitExceeded(
            .message, maximum: maxMessage, actual: length,
            complete
                ? "a message of \(length) bytes; the limit is \(maxMessage)"
                : "a message of more than \(maxMessage) bytes (\(length) so far, no NUL yet); the limit is \(maxMessage)")
        failure = error
        buffer = []
        start = 0
        scanned = 0
        return error
    }

    /// The offset of the first zero byte at or after `from`: libc's memchr,
    /// vectorized (a word-at-a-time loop here was ~130 instructions for a
    /// 70-byte Set, memchr ~25; callgrind, docs/daemon-performance.md).
    static func firstNUL(in raw: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard let base = raw.baseAddress, from < raw.count else { return nil }
        guard let hit = memchr(base + from, 0, raw.count - from) else { return nil }
        return UnsafeRawPointer(hit) - base
    }
}

/// Writes messages for the stream: the JSON of each, then a NUL.
public enum MessageEncoder {
    /// Appends a message's bytes and its NUL. The bytes must not contain a
    /// NUL (JSON text never does: a NUL in a string is written "\u0000").
    public static func append(message bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        precondition(!bytes.contains(0), "a Varlink message cannot contain a NUL byte")
        out.append(contentsOf: bytes)
        out.append(0)
    }

    public static func append(_ call: Call, to out: inout [UInt8]) throws(VarlinkError) {
        try call.writeJSON(into: &out)
        out.append(0)
    }

    public static func append(_ reply: Reply, to out: inout [UInt8]) throws(VarlinkError) {
        try reply.writeJSON(into: &out)
        out.append(0)
    }
}
