// Limits.swift — the sizes the protocol bounds, with their defaults.

import TetherCore

/// What the daemon bounds, so that one client cannot make it buffer, parse
/// or fan out without end. The defaults follow etcd (1.5 MiB values, 128
/// operations per transaction); `docs/protocol.md` states them.
public struct Limits: Sendable, Equatable {
    /// The largest message a reader accepts, in bytes, without its NUL. The
    /// daemon reads calls with this limit; past it the stream cannot be
    /// trusted and the connection is closed.
    public var maxMessage: Int
    /// The largest reply a client must be ready to read. A snapshot reply
    /// holds one value (at most `maxValue`); a change reply holds what one
    /// commit wrote, which came in one call of at most `maxMessage` but may
    /// be longer when written back (JSON "1e9" comes back as
    /// "1000000000.0").
    public var maxReply: Int
    /// The largest value a state may hold, as compact JSON.
    public var maxValue: Int
    /// The most ops, and the most preconditions, in one transaction.
    public var maxOps: Int
    /// The most names one Watch may list.
    public var maxNames: Int
    /// The longest state name, in bytes of UTF-8.
    public var maxNameLength: Int
    /// The most states one List reply holds (its default and its cap).
    public var maxList: Int
    /// How deeply arrays and objects may nest in a message: a value's own
    /// limit (`Value.maxNesting`) plus the levels of the call around it
    /// (call, parameters, ops, op, value).
    public var maxDepth: Int

    public init(maxMessage: Int = 2 << 20, maxReply: Int = 16 << 20, maxValue: Int = 3 << 19,
                maxOps: Int = 128, maxNames: Int = 1024, maxNameLength: Int = 256, maxList: Int = 1000,
                maxDepth: Int = Value.maxNesting + 8) {
        self.maxMessage = maxMessage
        self.maxReply = maxReply
        self.maxValue = maxValue
        self.maxOps = maxOps
        self.maxNames = maxNames
        self.maxNameLength = maxNameLength
        self.maxList = maxList
        self.maxDepth = maxDepth
    }

    /// 2 MiB messages, 16 MiB replies, 1.5 MiB values, 128 ops, 1024 watched
    /// names, 256-byte names, 1000 states per List, 520 levels of nesting.
    public static let defaults = Limits()
}
