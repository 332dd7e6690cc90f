import TetherCore
import TetherWire

/// The protocol's Change (TetherCore has a Change of its own: an observer's).
public typealias Change = TetherWire.Change

/// One commit of the daemon: everything one Set, Remove, Transaction or
/// creating Declare changed, under one revision. It is what watchers are
/// sent (filtered to what they watch) and what a store makes durable.
public struct Commit: Sendable {
    public let revision: UInt64
    /// The writes, in the order they were applied, each as stored (an int
    /// written to a double state is a double here).
    public let changes: [Change]
    public let tag: String?
    public let origin: UInt64?

    public init(revision: UInt64, changes: [Change], tag: String?, origin: UInt64?) {
        self.revision = revision
        self.changes = changes
        self.tag = tag
        self.origin = origin
    }
}

/// A state as a commit left it, for a durable sink: its whole value (nil:
/// the commit removed it), the commit's revision and its descriptor.
public struct StateImage: Sendable {
    public let name: String
    public let value: Value?
    public let modified: UInt64
    public let descriptor: Descriptor
}

/// Where commits go before they are acknowledged: the daemon calls
/// `record` for each commit as it is made (in revision order), with every
/// state it changed, and `sync` once per loop turn, before any reply of
/// that turn is written, so a durable sink acknowledges nothing that is
/// not on disk (group commit). `describe` records a descriptor change
/// that made no commit.
public protocol CommitSink: AnyObject {
    func record(_ commit: Commit, states: [StateImage]) throws
    func describe(_ name: String, _ descriptor: Descriptor) throws
    func sync() throws
}

/// The sink of a daemon without a store (`--memory`): it keeps nothing.
public final class MemorySink: CommitSink {
    public init() {}
    public func record(_ commit: Commit, states: [StateImage]) throws {}
    public func describe(_ name: String, _ descriptor: Descriptor) throws {}
    public func sync() throws {}
}

/// The recent commits, oldest first, that a Watch resumes from. Bounded by
/// a count of commits; a watch asking for history older than it gets a
/// resync instead (never a silent gap).
struct CommitLog {
    let capacity: Int
    private var ring: [Commit] = []
    private var head = 0  // index of the oldest commit once the ring is full

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        ring.reserveCapacity(min(self.capacity, 4096))
    }

    mutating func append(_ commit: Commit) {
        if ring.count < capacity {
            ring.append(commit)
        } else {
            ring[head] = commit
            head = (head + 1) % capacity
        }
    }

    /// The oldest revision a watch can resume from, given the current one:
    /// every commit after it is held.
    func oldestResumable(current: UInt64) -> UInt64 {
        guard !ring.isEmpty else { return current }
        return ring[head].revision - 1
    }

    /// The commits after `revision`, oldest first; nil when some of them
    /// are no longer held.
    func commits(after revision: UInt64, current: UInt64) -> [Commit]? {
        if revision >= current { return [] }
        guard revision >= oldestResumable(current: current) else { return nil }
        var result: [Commit] = []
        result.reserveCapacity(Int(current - revision))
        for i in 0..<ring.count {
            let commit = ring[(head + i) % ring.count]
            if commit.revision > revision { result.append(commit) }
        }
        return result
    }
}
