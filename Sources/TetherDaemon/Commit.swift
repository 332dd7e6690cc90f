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

    /// The value `changes` set when they are one change setting one
    /// state's whole value (`changes[0].name`), or nil: the case the log's
    /// short forms and the size shortcut take (`LogRowText.commit`,
    /// `LogRowText.imageFollows`, `SQLiteStore.decodeImages`,
    /// `approximateBytes`). The value alone: returning the name too cost a
    /// Set ~30 instructions (its retain and release; callgrind).
    @inline(__always)
    static func wholeSet(_ changes: [Change]) -> Value? {
        guard changes.count == 1, changes[0].path.isRoot, case .set(let value) = changes[0].write else { return nil }
        return value
    }

    /// About how much memory the commit holds (what the log counts).
    var approximateBytes: Int {
        if let value = Commit.wholeSet(changes) {
            return Commit.approximateBytes(ofWholeSet: changes[0].name, value) + (tag?.utf8.count ?? 0)
        }
        var total = 64 + (tag?.utf8.count ?? 0)
        for change in changes {
            total += 48 + change.name.utf8.count
            if !change.path.isRoot { total += change.path.tokens.reduce(0) { $0 + $1.utf8.count + 16 } }
            if case .set(let value) = change.write { total += Commit.approximateBytes(of: value) }
        }
        return total
    }

    /// `approximateBytes` of an untagged commit that sets one state whole
    /// (a tagged one adds its tag's bytes).
    @inline(__always)
    static func approximateBytes(ofWholeSet name: String, _ value: Value) -> Int {
        64 + 48 + name.utf8.count + approximateBytes(of: value)
    }

    static func approximateBytes(of value: Value) -> Int {
        switch value {
        case .string(let s): return 16 + s.utf8.count
        case .bytes(let b): return 16 + b.count
        case .array(let items): return items.reduce(32) { $0 + approximateBytes(of: $1) }
        case .object(let o):
            let table = o.members
            return table.values.reduce(32 + 24 * table.count) { $0 + approximateBytes(of: $1) }
        default: return 16
        }
    }
}

/// A state as a commit left it, for a durable sink: its whole value (nil:
/// the commit removed it), the commit's revision and its descriptor.
public struct StateImage: Sendable {
    public let name: String
    public let value: Value?
    public let modified: UInt64
    public let descriptor: Descriptor

    public init(name: String, value: Value?, modified: UInt64, descriptor: Descriptor) {
        self.name = name
        self.value = value
        self.modified = modified
        self.descriptor = descriptor
    }
}

/// Where commits go before they are acknowledged: the daemon calls
/// `record` for each commit as it is made (in revision order), with every
/// state it changed, and `sync` once per loop turn, before any reply of
/// that turn is written, so a durable sink acknowledges nothing that is
/// not on disk (group commit). `describe` records a descriptor change
/// that made no commit.
public protocol CommitSink: AnyObject {
    func record(_ commit: Commit, states: [StateImage]) throws
    /// `record(commit, states: [state])`, for the commonest commit (one
    /// state), without making the array.
    func record(_ commit: Commit, state: StateImage) throws
    func describe(_ name: String, _ descriptor: Descriptor) throws
    func sync() throws
    /// Forgets the logged commits up to and including `revision`.
    func compact(through revision: UInt64) throws
    /// Writes a consistent copy of everything to `path` (which must not
    /// exist); returns its size in bytes.
    func snapshot(to path: String) throws -> UInt64
}

extension CommitSink {
    public func record(_ commit: Commit, state: StateImage) throws {
        try record(commit, states: [state])
    }
}

/// A sink whose `sync` comes in two halves, so that the slow half (the
/// fsync) can run on another thread while the loop writes the next group:
/// `commit` writes the group where a crash of the process cannot lose it
/// (the loop thread; `sync` is `commit` then `makeDurable`), and
/// `makeDurable` makes everything committed before it began survive a
/// power cut. One thread at a time calls `makeDurable`, and it may run
/// while the loop thread calls `commit` and everything else.
public protocol SplitSyncSink: CommitSink {
    /// False when `commit` is durable by itself (nothing to overlap).
    var syncsInTwoHalves: Bool { get }
    func commit() throws
    func makeDurable() throws
}

/// The recent commits, oldest first, that a Watch resumes from (and that a
/// watch fallen behind reads when its peer drains). Bounded by a count of
/// commits and by bytes; a watch asking for history older than it gets a
/// resync instead (never a silent gap).
struct CommitLog {
    let capacity: Int
    let maxBytes: Int
    /// nil: evicted (its values released at once, before the dead prefix
    /// is dropped from the array).
    private var commits: [Commit?] = []
    private var sizes: [Int] = []
    private var head = 0  // index of the oldest commit held
    private(set) var bytes = 0

    init(capacity: Int, maxBytes: Int = 64 << 20) {
        self.capacity = max(1, capacity)
        self.maxBytes = max(1, maxBytes)
    }

    var count: Int { commits.count - head }

    mutating func append(_ commit: Commit) {
        append(commit, bytes: commit.approximateBytes)
    }

    /// `append(commit)` whose `approximateBytes` the caller knows (a Set's
    /// write: reading them back from the commit's change array cost ~200
    /// instructions, its copies counted in and out).
    mutating func append(_ commit: Commit, bytes size: Int) {
        commits.append(commit)
        sizes.append(size)
        bytes += size
        // The newest commit always stays: a watch one revision behind resumes.
        while count > 1 && (count > capacity || bytes > maxBytes) {
            bytes -= sizes[head]
            commits[head] = nil
            head += 1
        }
        // Drop the dead prefix now and then (amortized O(1) per append).
        if head > 4096 && head * 2 > commits.count {
            commits.removeFirst(head)
            sizes.removeFirst(head)
            head = 0
        }
    }

    /// Forgets the commits after `revision` (a group the store refused,
    /// undone: `Store.rollBackGroup`).
    mutating func dropAfter(_ revision: UInt64) {
        while count > 0, let newest = commits[commits.count - 1], newest.revision > revision {
            commits.removeLast()
            bytes -= sizes.removeLast()
        }
    }

    /// Forgets the commits up to and including `revision` (the newest one
    /// always stays).
    mutating func compact(through revision: UInt64) {
        while count > 1, let oldest = commits[head], oldest.revision <= revision {
            bytes -= sizes[head]
            commits[head] = nil
            head += 1
        }
    }

    /// The oldest revision a watch can resume from, given the current one:
    /// every commit after it is held.
    func oldestResumable(current: UInt64) -> UInt64 {
        guard count > 0 else { return current }
        return max(commits[head]!.revision, 1) - 1  // 0 only from a damaged store: never a wrap
    }

    /// The commits after `revision`, oldest first; nil when some of them
    /// are no longer held.
    func commits(after revision: UInt64, current: UInt64) -> [Commit]? {
        if revision >= current { return [] }
        guard revision >= oldestResumable(current: current) else { return nil }
        // Revisions in the log are consecutive: index arithmetic, no search.
        let first = head + Int(revision - oldestResumable(current: current))
        return commits[first...].map { $0! }
    }
}
