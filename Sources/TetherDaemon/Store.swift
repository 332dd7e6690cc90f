import TetherRuntime
import TetherWire

/// One named state of the daemon: an ordinary state of the daemon's
/// runtime (so type locks, read-only, ranges and paths behave, and fail,
/// exactly as a local state's), the revision of the commit that last
/// changed it, and its descriptor as the protocol states it.
final class StateRecord {
    let name: String
    /// Its state in the daemon's runtime, freed with the record (or before,
    /// by `Store.free`: freeing a freed state again is a stale handle,
    /// refused and ignored, never another state's).
    private(set) var state: RuntimeState
    var modified: UInt64
    /// What most states never have, out of line: a record is one of a
    /// million (`benchmarks/scale`), and a record of these four fields is
    /// 56 bytes, which malloc gives 64; with the size bound and a reference
    /// each for the descriptor and the kept encoding it was 72 (80 given),
    /// and 128 with all inline (docs/benchmarks.d/30-scale.md).
    private var extras: Extras?

    /// The size bound of a record without `extras`: every number, bool
    /// and null is below it, and the short strings and small objects most
    /// states hold (`{"n":123456,"label":"state 123456"}` is 36 bytes).
    /// Only a path write near the value limit needs the bound tighter, and
    /// it then measures the value (TransactionPlan).
    static let smallBound = 64

    /// An upper bound of the value's size as compact JSON, so that a path
    /// write re-measures the whole value only when it might pass the limit.
    /// Up to `smallBound` it is not kept (a value that small needs no
    /// more precise bound).
    var sizeBound: Int {
        get { extras?.sizeBound ?? StateRecord.smallBound }
        set {
            if let extras {
                extras.sizeBound = newValue
                if extras.isEmpty { self.extras = nil }
            } else if newValue > StateRecord.smallBound {
                extras = Extras(sizeBound: newValue)
            }
        }
    }

    init(name: String, state: State<Value>, modified: UInt64, descriptor: Descriptor, sizeBound: Int) {
        self.name = name
        self.state = RuntimeState(handle: state.relinquish())
        self.modified = modified
        self.sizeBound = sizeBound
        self.descriptor = descriptor
    }

    /// Writes `change` to the extras, made when needed and let go when
    /// they hold nothing any more.
    private func withExtras(_ change: (Extras) -> Void) {
        let e = extras ?? Extras(sizeBound: StateRecord.smallBound)
        change(e)
        extras = e.isEmpty ? nil : e
    }

    deinit {
        try? state.free()
    }

    /// The record's state becomes `new` (a Declare that converts the value
    /// or changes the type lock); the old one is freed.
    func replaceState(with new: State<Value>) {
        let old = state
        state = RuntimeState(handle: new.relinquish())
        try? old.free()
    }

    /// Its descriptor as the protocol states it (kept only when it is not
    /// the default one).
    var descriptor: Descriptor {
        get { extras?.descriptor ?? Descriptor() }
        set {
            let plain = newValue.type == nil && !newValue.readOnly && newValue.range == nil
            if plain && extras?.descriptor == nil { return }
            withExtras { $0.descriptor = plain ? nil : newValue }
        }
    }

    /// The value's Get reply fragment, `"value":…[,"bytes_at":[…]],"type":"…"`,
    /// as the reply encoder writes it, kept while the value is unchanged
    /// (EncodedValues.swift); nil: none kept.
    var encoded: [UInt8]? {
        get { extras?.encoded }
        set {
            if newValue == nil && extras?.encoded == nil { return }
            withExtras { $0.encoded = newValue }
        }
    }

    /// `modified` when `encoded` was made: a kept fragment is used only
    /// while they are equal (every commit changing the value moves it).
    var encodedModified: UInt64 {
        get { extras?.encodedModified ?? 0 }
        set { extras?.encodedModified = newValue }
    }

    var value: Value {
        get throws(TetherError) { try state.get() }
    }

    /// The rare fields: a non-default descriptor, a kept Get encoding, a
    /// size bound above `smallBound`.
    private final class Extras {
        var descriptor: Descriptor?
        var encoded: [UInt8]?
        var encodedModified: UInt64 = 0
        var sizeBound: Int

        init(sizeBound: Int) { self.sizeBound = sizeBound }

        var isEmpty: Bool { descriptor == nil && encoded == nil && sizeBound <= StateRecord.smallBound }
    }
}

/// The daemon's states and its one revision counter.
///
/// Every method runs on the daemon's loop thread. A commit advances the
/// revision by exactly one, is handed to the sink, appended to the log
/// watchers resume from, and passed to `onCommit` (the watchers) before the
/// method returns; a call that changes nothing commits nothing.
public final class Store {
    public let limits: Limits
    public internal(set) var revision: UInt64
    public let epoch: String
    /// The daemon's own runtime (a fresh one after `reset`).
    private(set) var runtime: Runtime
    /// The revision a new store starts at (`reset` goes back to it).
    private let startRevision: UInt64
    private(set) var records = RecordTable()
    /// Every name, in byte order (List pages through it).
    /// Every record, in its name's byte order (List pages through it).
    private(set) var sortedRecords = SortedList<StateRecord>()
    /// How many states the daemon holds at most (`--max-states`): a write
    /// that would create one more is refused with LimitExceeded (`states`).
    /// States restored from the store are all kept, even past it.
    public let maxStates: Int
    /// The longest tag a write may carry, in bytes (LimitExceeded `tag`).
    /// An origin is a 64-bit integer: bounded by its type.
    public static let maxTag = 256
    /// Told of an error the store meets but cannot give to a caller (a
    /// state of the daemon's runtime that cannot be freed); the daemon
    /// logs it.
    public var report: ((String) -> Void)?
    var log: CommitLog
    /// Where commits go to disk; nil: nowhere (`--memory`).
    let sink: CommitSink?
    /// The shared ledger that decides commits instead of this store
    /// (Ledger.swift); nil: the store decides (SQLite, --memory).
    public var ledger: Ledger?
    /// Whether reads on a ledger-fed store wait for a read barrier
    /// (linearizable; tetherd --reads linearizable, the default) or are
    /// answered from the host's copy at once (serializable: a read on one
    /// host may not yet show a commit another host acknowledged).
    public var readsAfterBarrier = true
    /// Calls waiting until a revision is installed (`whenInstalled`).
    var installWaiters: [(revision: UInt64, then: () -> Void)] = []
    /// Called with each commit, after the sink has it.
    var onCommit: ((Commit) -> Void)?
    /// Whether `write` takes `setWhole` for a Set of a whole existing
    /// state; off only to compare it with `apply` (SimpleSetCallTests,
    /// the fuzzer).
    public var setsWholeStates = true
    /// Records keeping an encoded Get fragment (EncodedValues.swift), and
    /// those fragments' bytes in all (at most `encodedLimit`).
    var encodedRecords: [ObjectIdentifier: StateRecord] = [:]
    public internal(set) var encodedBytes = 0
    /// Whether whole-state Gets keep encoded fragments (off: every Get is
    /// encoded afresh; tests compare both).
    public var keepsEncodedValues = true
    /// See `Store.defaultEncodedMinimum` and `defaultEncodedLimit`.
    public var encodedMinimum = Store.defaultEncodedMinimum
    public var encodedLimit = Store.defaultEncodedLimit

    public init(limits: Limits = .defaults, logCapacity: Int = 100_000, logBytes: Int = 64 << 20, epoch: String,
                startRevision: UInt64 = 0, sink: CommitSink? = nil, maxStates: Int = 1_000_000) throws(TetherError) {
        self.limits = limits
        self.maxStates = max(1, maxStates)
        self.epoch = epoch
        revision = startRevision
        self.startRevision = startRevision
        log = CommitLog(capacity: logCapacity, maxBytes: logBytes)
        self.sink = sink
        // The daemon's own runtime: driven by nobody (the daemon needs no
        // observers of its own), no locks (one thread touches it).
        runtime = try Store.makeRuntime()
    }

    /// The daemon's own runtime: driven by nobody (the daemon needs no
    /// observers of its own), no locks (one thread touches it).
    private static func makeRuntime() throws(TetherError) -> Runtime {
        let runtime = try Runtime(Runtime.Options(loop: .host, singleThreaded: true))
        try Runtimes.nameStatesWithoutHandles(in: runtime.handle)
        return runtime
    }

    /// Empties an in-memory store: afterwards it holds and answers exactly
    /// what a new store with the same limits, epoch and settings would (no
    /// state, the start revision, an empty log, nothing quarantined, a
    /// fresh runtime). The fuzzer keeps one daemon across its inputs and
    /// resets it before each, so that an input runs as it would alone
    /// (ServiceResetTests). Only for a store without a sink or a ledger:
    /// a durable store's contents are the disk's.
    public func reset() throws(TetherError) {
        precondition(sink == nil && ledger == nil, "Store.reset empties only an in-memory store")
        for r in records.values { free(r) }
        records.removeAll()
        sortedRecords = SortedList()
        encodedRecords = [:]
        encodedBytes = 0
        log = CommitLog(capacity: log.capacity, maxBytes: log.maxBytes)
        revision = startRevision
        quarantined = [:]
        quarantinedModified = [:]
        installWaiters = []
        sinkFailure = nil
        groupStart = 0
        describedInGroup = []
        runtime = try Store.makeRuntime()
    }

    public var count: Int { records.count }

    /// Takes over what a durable store held, before serving: the states,
    /// the revision (the counter continues where it stopped) and the
    /// retained commits (so watches resume across a restart).
    /// `quarantined`: states whose rows could not be read, and why: the
    /// daemon serves the rest, and a read of one of them gets an error
    /// naming it (until a Set at its root replaces it). A state that cannot
    /// be restored joins them: one bad row never keeps the daemon from
    /// starting. Returns every quarantined state and why.
    @discardableResult
    public func restore(states: [StateImage], log commits: [Commit], revision: UInt64,
                        quarantined: [(name: String, reason: String)] = []) throws(TetherError) -> [(name: String, reason: String)] {
        self.revision = revision
        var bad = quarantined
        // Room for them all at once: growing a dictionary of a million
        // names by doubling rehashed each one ~20 times (a tenth of a
        // restart, perf).
        reserveRecords(records.count + states.count)
        for image in states {
            guard let value = image.value else { continue }
            let state: State<Value>
            do {
                state = try makeState(image.name, value, image.descriptor)
            } catch {
                bad.append((image.name, "state '\(image.name)' cannot be restored: \(error.detail)"))
                continue
            }
            insert(StateRecord(name: image.name, state: state, modified: image.modified, descriptor: image.descriptor,
                               sizeBound: (try? Store.size(of: value)) ?? limits.maxValue))
        }
        for commit in commits where commit.revision <= revision { log.append(commit) }
        for (name, reason) in bad where records[name] == nil { self.quarantined[name] = reason }
        return bad
    }

    /// States the store could not read at start, and why (see `restore`).
    public internal(set) var quarantined: [String: String] = [:]
    /// The ledger's revision of each state quarantined from it (`quarantine`).
    var quarantinedModified: [String: UInt64] = [:]

    /// The error a read of a state that does not exist gets: NotFound, or,
    /// for a quarantined one, why it cannot be read.
    func missingState(_ name: String) -> VarlinkError {
        if let reason = quarantined[name] {
            return VarlinkError(TetherError(.badJSON, "the store could not read state '\(name)' when the daemon started (\(reason)); it is quarantined: Set its whole value to replace it"), name: name)
        }
        return VarlinkError(TetherError(.notFound, "no state named '\(name)'"), name: name)
    }

    /// The oldest revision a Watch can resume from.
    public var oldestRevision: UInt64 { log.oldestResumable(current: revision) }

    func record(_ name: String) -> StateRecord? { records[name] }

    // MARK: Reads

    func get(_ name: String, at path: JSONPointer) throws(VarlinkError) -> GetReply {
        guard let r = records[name] else { throw missingState(name) }
        do {
            let whole = try r.value
            let value = path.isRoot ? whole : try whole.value(at: path)
            return GetReply(value: value, revision: revision, modified: r.modified)
        } catch {
            throw VarlinkError(error, name: name)
        }
    }

    func describe(_ name: String) throws(VarlinkError) -> DescribeReply {
        guard let r = records[name] else { throw missingState(name) }
        let type: ValueType
        do { type = try r.value.type } catch { throw VarlinkError(error, name: name) }
        return DescribeReply(descriptor: r.descriptor, type: type, modified: r.modified, revision: revision)
    }

    /// The states whose names start with `prefix`, after `after`, that
    /// `visible` lets through, at most `count`.
    /// A state whose value cannot be read fails the List with an error
    /// naming it (it was listed as `null`).
    func list(prefix: String, after: String?, count: Int, visible: (String) -> Bool) throws(VarlinkError) -> ListReply {
        var at = sortedRecords.lowerBound(prefix)
        if let after, Store.precedes(prefix, after) || prefix == after {
            let from = sortedRecords.lowerBound(after)
            if from > at { at = from }
            if sortedRecords.name(at: at) == after { at = sortedRecords.after(at) }
        }
        var states: [StateInfo] = []
        var truncated = false
        while let r = sortedRecords.entry(at: at) {
            let name = r.name
            guard StateName.has(name, prefix: prefix) else { break }
            if visible(name) {
                if states.count == count { truncated = true; break }
                let type: ValueType
                do { type = try r.value.type } catch { throw VarlinkError(error, name: name) }
                states.append(StateInfo(name: name, type: type, modified: r.modified))
            }
            at = sortedRecords.after(at)
        }
        return ListReply(states: states, revision: revision, truncated: truncated)
    }

    /// The names starting with `prefix`, in byte order.
    func names(withPrefix prefix: String) -> [String] {
        var out: [String] = []
        var at = sortedRecords.lowerBound(prefix)
        while let name = sortedRecords.name(at: at), StateName.has(name, prefix: prefix) {
            out.append(name)
            at = sortedRecords.after(at)
        }
        return out
    }

    // MARK: Maintenance

    /// Forgets the retained commits up to `revision` (nil: all but the
    /// newest), in memory and in the sink.
    func compact(through revision: UInt64?) throws(VarlinkError) -> CompactReply {
        let through = min(revision ?? (self.revision > 0 ? self.revision - 1 : 0), self.revision)
        log.compact(through: through)
        ledger?.compact(through: oldestRevision)
        do {
            try sink?.compact(through: oldestRevision)
        } catch let failure as GroupCommitter.GroupFailure {
            sinkFailure = failure.underlying  // the turn's group is undone at its end
            throw Store.storageFull(failure.underlying)
        } catch {
            throw VarlinkError(TetherError(.loopFailure, "the store could not compact its log: \(error)"))
        }
        return CompactReply(oldestRevision: oldestRevision)
    }

    /// A consistent copy of the store at `path`.
    func snapshot(to path: String) throws(VarlinkError) -> SnapshotReply {
        guard let sink else {
            if ledger != nil { return try mirrorSnapshot(to: path) }
            throw VarlinkError(TetherError(.invalidArgument, "this daemon keeps nothing on disk (--memory): there is no store to copy"))
        }
        do {
            let bytes = try sink.snapshot(to: path)
            return SnapshotReply(revision: revision, bytes: bytes)
        } catch let failure as GroupCommitter.GroupFailure {
            sinkFailure = failure.underlying  // the turn's group is undone at its end
            throw Store.storageFull(failure.underlying)
        } catch let error as TetherError {
            throw VarlinkError(error)
        } catch {
            throw VarlinkError(TetherError(.loopFailure, "\(error)"))
        }
    }

    // MARK: Writes

    /// Applies `ops` as one commit, or nothing (see io.tether.Transaction).

    /// Set and Remove: one write, whose errors name its state but no op
    /// (`op` is a Transaction's index).
    func write(_ op: Op, tag: String?, origin: UInt64?) throws(VarlinkError) -> WriteReply {
        if let sinkFailure { throw Store.storageFull(sinkFailure) }
        if let tag { try Store.checkTag(tag) }
        do {
            if setsWholeStates, case .set(let value) = op.write, op.path.isRoot, limits.maxOps >= 1, let r = records[op.name] {
                return try setWhole(r, to: value, op, tag: tag, origin: origin)
            }
            return try apply([op], preconditions: [], tag: tag, origin: origin)
        } catch {
            guard let tether = error.tetherError else { throw error }
            throw VarlinkError(tether, name: op.name)
        }
    }

    func apply(_ ops: [Op], preconditions: [Precondition], tag: String?, origin: UInt64?) throws(VarlinkError) -> WriteReply {
        if let sinkFailure { throw Store.storageFull(sinkFailure) }
        try checkWrite(ops, preconditions: preconditions, tag: tag)
        var plan = TransactionPlan(store: self)
        do {
            try runtime.transaction(tag: tag, origin: origin ?? 0) {
                for (i, op) in ops.enumerated() {
                    do throws(VarlinkError) { try plan.stage(op, index: i) } catch { throw WrappedVarlinkError(error: error) }
                }
            }
        } catch {
            plan.abandon()
            throw Store.stagingFailure(error, ops)
        }
        let changed = plan.changedNames()
        guard !changed.isEmpty else {
            return WriteReply(revision: revision, changed: false)
        }
        revision += 1
        plan.install(revision: revision, changed: changed)
        let changes = ops.compactMap { op -> Change? in
            guard changed.contains(op.name) else { return nil }
            return Change(name: op.name, path: op.path, write: storedWrite(op))
        }
        try commit(Commit(revision: revision, changes: changes, tag: tag, origin: origin))
        return WriteReply(revision: revision, changed: true)
    }

    /// The error a call gets when staging its ops (or the runtime's
    /// commit of them) failed: a one-op call's names its state.
    static func stagingFailure(_ error: Error, _ ops: [Op]) -> VarlinkError {
        if let wrapped = error as? WrappedVarlinkError { return wrapped.error }
        if let tether = error as? TetherError {
            return VarlinkError(tether, name: ops.count == 1 ? ops[0].name : nil, op: ops.count == 1 ? 0 : nil)
        }
        return VarlinkError(TetherError(.invalidArgument, "\(error)"))
    }

    /// What a write is refused for before any op is staged: its tag, the
    /// states it would create, its counts of ops and preconditions, and a
    /// precondition that does not hold (applied here, or planned for a
    /// ledger: `plan`).
    func checkWrite(_ ops: [Op], preconditions: [Precondition], tag: String?) throws(VarlinkError) {
        if let tag { try Store.checkTag(tag) }
        try checkStateCount(ops)
        if ops.count > limits.maxOps {
            throw .limitExceeded(.ops, maximum: limits.maxOps, actual: ops.count,
                                 "a transaction has at most \(limits.maxOps) ops; this one has \(ops.count)")
        }
        if preconditions.count > limits.maxOps {
            throw .limitExceeded(.preconditions, maximum: limits.maxOps, actual: preconditions.count,
                                 "a transaction has at most \(limits.maxOps) preconditions; this one has \(preconditions.count)")
        }
        for (i, p) in preconditions.enumerated() {
            let actual = records[p.name]?.modified ?? 0
            if actual != p.revision {
                throw .revisionMismatch(name: p.name, expected: p.revision, actual: actual, index: i)
            }
        }
    }

    /// A tag longer than `maxTag` bytes: it is stored in the log with its
    /// commit and sent with every watch event of it, outside max_value.
    static func checkTag(_ tag: String) throws(VarlinkError) {
        let n = tag.utf8.count
        if n > maxTag {
            throw .limitExceeded(.tag, maximum: maxTag, actual: n, "a write's tag is at most \(maxTag) bytes; this one has \(n)")
        }
    }

    /// Refuses ops that would make more than `maxStates` states (only
    /// Sets of names that do not exist count: a write to existing states
    /// costs one dictionary lookup per op).
    func checkStateCount(_ ops: [Op]) throws(VarlinkError) {
        guard records.count + ops.count > maxStates else { return }
        var new = Set<String>()
        for op in ops where records[op.name] == nil {
            if case .set = op.write { new.insert(op.name) }
        }
        if records.count + new.count > maxStates {
            throw .limitExceeded(.states, maximum: maxStates, actual: records.count + new.count,
                                 "the daemon holds at most \(maxStates) states; this write would make \(records.count + new.count)")
        }
    }

    /// `apply([op])` for the commonest write, a Set of the whole value of
    /// a state that exists, without a TransactionPlan: no overlay
    /// dictionary, no `Set` of changed names, no arrays of touched records
    /// (~5 k of a Set's instructions, docs/daemon-performance.md). The same
    /// checks in the same order inside the same runtime transaction (the
    /// name's aside: `write`'s callers made it), and the same errors once
    /// `write` has named them.
    private func setWhole(_ r: StateRecord, to value: Value, _ op: Op, tag: String?, origin: UInt64?) throws(VarlinkError) -> WriteReply {
        /// The checks and the write; whether it changed the value, or nil
        /// when the runtime transaction staged it (decided at its commit).
        func stage() throws -> Bool? {
            let size: Int
            do throws(VarlinkError) {
                // No name check here (apply's plan has one): every caller of
                // `write` checked the name before its peer's rights
                // (SetParameters, Session.handleSimpleSet), and a record of
                // that name exists; a second check was ~90 instructions a Set.
                size = try checkSize(value, name: op.name)
            } catch {
                throw WrappedVarlinkError(error: error)
            }
            // The write says whether it changed the value: no revision read
            // before and after (~380 instructions a Set).
            let changed = try r.state.setReportingChange(value)
            // An upper bound even if the commit is refused later. The size
            // checked above: a composite's is a JSON encoding, not made twice.
            r.sizeBound = max(r.sizeBound, size)
            return changed
        }
        let changed: Bool
        do {
            if tag == nil && origin == nil {
                // One write is a transaction of its own in the runtime: an
                // explicit one only carries the tag and origin, and nothing
                // in the daemon's runtime observes them (~1.5 k instructions).
                // (Nil cannot come back: no transaction is open here.)
                changed = try stage() ?? true
            } else {
                let noted = try r.state.revision
                try runtime.transaction(tag: tag, origin: origin ?? 0) { _ = try stage() }
                // A revision that cannot be read counts as a change: the
                // commit then records the state as it is, so the store
                // never falls behind memory (it said "unchanged" before).
                changed = (try? r.state.revision).map { $0 != noted } ?? true
            }
        } catch let wrapped as WrappedVarlinkError {
            throw wrapped.error
        } catch let error as TetherError {
            throw VarlinkError(error, name: op.name, op: 0)
        } catch {
            throw VarlinkError(TetherError(.invalidArgument, "\(error)"))
        }
        // An equal value changes nothing (TransactionPlan.changedNames).
        guard changed else { return WriteReply(revision: revision, changed: false) }
        dropEncoded(r)
        revision += 1
        r.modified = revision
        let write = storedWrite(op, r)
        var bytes: Int?
        if case .set(let stored) = write { bytes = Commit.approximateBytes(ofWholeSet: op.name, stored) + (tag?.utf8.count ?? 0) }
        try commit(Commit(revision: revision, changes: [Change(name: op.name, path: op.path, write: write)],
                          tag: tag, origin: origin), record: r, bytes: bytes)
        return WriteReply(revision: revision, changed: true)
    }

    /// Sets the descriptor of `name`, creating the state with `value` when
    /// it does not exist (a commit), see io.tether.Declare.
    func declare(_ name: String, _ descriptor: Descriptor, value: Value) throws(VarlinkError) -> DeclareReply {
        if let sinkFailure { throw Store.storageFull(sinkFailure) }
        if let range = descriptor.range, let lo = range.minimum, let hi = range.maximum, lo > hi {
            throw .invalidParameter("descriptor.range", "minimum \(lo) is greater than maximum \(hi)")
        }
        if let r = records[name] {
            let current: Value
            do { current = try r.value } catch { throw VarlinkError(error, name: name) }
            let stored = try Store.conform(current, to: descriptor, name: name)
            if stored != current {
                // An int held by a state now locked to double becomes a
                // double: a change of value, so a commit.
                let replacement = try makeState(name, stored, descriptor)
                free(r)
                dropEncoded(r)
                r.replaceState(with: replacement)
                r.descriptor = descriptor
                revision += 1
                r.modified = revision
                try commit(Commit(revision: revision, changes: [Change(name: name, write: .set(stored))], tag: nil, origin: nil))
                return DeclareReply(revision: revision, created: false)
            }
            if descriptor.type != r.descriptor.type {
                let replacement = try makeState(name, current, descriptor)
                free(r)
                r.replaceState(with: replacement)
            } else {
                try apply(descriptor, to: r.state, name: name)
            }
            r.descriptor = descriptor
            if sink != nil { describedInGroup.append(name) }
            if sinkFailure != nil { throw Store.storageFull(sinkFailure!) }
            do { try sink?.describe(name, descriptor) } catch {
                sinkFailure = error  // undone with the rest of the group
                throw Store.storageFull(error)
            }
            return DeclareReply(revision: revision, created: false)
        }
        try checkSize(value, name: name)
        if records.count >= maxStates {
            throw .limitExceeded(.states, maximum: maxStates, actual: records.count + 1,
                                 "the daemon holds at most \(maxStates) states; this Declare would make \(records.count + 1)")
        }
        let stored = try Store.conform(value, to: descriptor, name: name)
        let state = try makeState(name, stored, descriptor)
        revision += 1
        insert(StateRecord(name: name, state: state, modified: revision, descriptor: descriptor,
                           sizeBound: (try? Store.size(of: stored)) ?? limits.maxValue))
        try commit(Commit(revision: revision, changes: [Change(name: name, write: .set(stored))], tag: nil, origin: nil))
        return DeclareReply(revision: revision, created: true)
    }

    // MARK: Internals shared with TransactionPlan

    /// A new state of the daemon's runtime holding `value`, with the type
    /// lock, read-only flag and range of `descriptor`.
    func makeState(_ name: String, _ value: Value, _ descriptor: Descriptor) throws(VarlinkError) -> State<Value> {
        let state: State<Value>
        do {
            state = try runtime.makeState(value, lockType: descriptor.type != nil)
        } catch {
            throw VarlinkError(error, name: name)
        }
        try apply(descriptor, to: RuntimeState(handle: state.handle), name: name)
        return state
    }

    private func apply(_ descriptor: Descriptor, to state: RuntimeState, name: String) throws(VarlinkError) {
        let range = descriptor.range.map { ($0.minimum ?? -Double.infinity)...($0.maximum ?? Double.infinity) }
        // The runtime keeps a descriptor, in a table beside its states, only
        // to name the state in the errors its type lock, read-only flag and
        // range give; a plain state can give none, and naming it anyway cost
        // ~230 bytes a state (a million plain states: 230 MB; scale.py).
        let named = descriptor.readOnly || range != nil || descriptor.type != nil
        do {
            try state.describe(readOnly: descriptor.readOnly, range: range, name: named ? name : nil)
        } catch {
            throw VarlinkError(error, name: name)
        }
    }

    /// `value` as a state with `descriptor` stores it, or the error a write
    /// of it would get.
    static func conform(_ value: Value, to descriptor: Descriptor, name: String) throws(VarlinkError) -> Value {
        var stored = value
        if let type = descriptor.type, value.type != type {
            if type == .double, case .int(let i) = value {
                stored = .double(Double(i))
            } else {
                throw VarlinkError(TetherError(.wrongType, "the descriptor locks '\(name)' to \(type.wireName); the value is \(value.type.wireName)"), name: name)
            }
        }
        if let range = descriptor.range {
            let number: Double
            switch stored {
            case .int(let i): number = Double(i)
            case .double(let d): number = d
            default:
                throw VarlinkError(TetherError(.wrongType, "the descriptor gives '\(name)' a numeric range; the value is \(stored.type.wireName)"), name: name)
            }
            if let lo = range.minimum, number < lo {
                throw VarlinkError(TetherError(.outOfRange, "\(number) is below the minimum \(lo) of '\(name)'"), name: name)
            }
            if let hi = range.maximum, number > hi {
                throw VarlinkError(TetherError(.outOfRange, "\(number) is above the maximum \(hi) of '\(name)'"), name: name)
            }
        }
        return stored
    }

    /// The write as the state stored it (the type lock turns an int into a
    /// double at the root of a double state).
    func storedWrite(_ op: Op, _ record: StateRecord? = nil) -> Write {
        if op.path.isRoot, case .set(.int(let i)) = op.write, (record ?? records[op.name])?.descriptor.type == .double {
            return .set(.double(Double(i)))
        }
        return op.write
    }

    /// The error a call gets when the store cannot take its commit.
    static func storageFull(_ error: Error) -> VarlinkError {
        .storageFull("the store cannot take the write (\(error)); nothing of it was applied: retry once the disk has room")
    }

    /// Refuses a value over the size limit, or nesting deeper than a
    /// state's value may (`Value.maxNesting`, 512 levels: the one depth
    /// limit of docs/protocol.md, checked here for every write path, so
    /// that every layer behind it — store rows, log rows, replies, watch
    /// events, the clients' parsers — holds whatever passed it); returns
    /// its size.
    @discardableResult
    func checkSize(_ value: Value, name: String) throws(VarlinkError) -> Int {
        switch value {
        case .array, .object:
            let depth = value.nestingDepth
            if depth > Value.maxNesting {
                throw VarlinkError(TetherError(.outOfRange, "a state's value nests at most \(Value.maxNesting) levels of arrays and objects; '\(name)' would nest \(depth)"), name: name)
            }
        default:
            break
        }
        let size: Int
        do { size = try Store.size(of: value) } catch { throw VarlinkError(error, name: name) }
        if size > limits.maxValue {
            throw .limitExceeded(.value, maximum: limits.maxValue, actual: size,
                                 "a state's value is at most \(limits.maxValue) bytes of compact JSON; '\(name)' would hold \(size)")
        }
        return size
    }

    static func size(of value: Value) throws(TetherError) -> Int {
        switch value {
        case .null: return 4
        case .bool(let b): return b ? 4 : 5
        case .int: return 20
        case .double: return 24
        default:
            var out: [UInt8] = []
            try value.writeJSON(into: &out)
            return out.count
        }
    }

    func reserveRecords(_ n: Int) {
        records.reserveCapacity(n)
    }

    func insert(_ r: StateRecord) {
        records.insert(r)
        if !quarantined.isEmpty {
            quarantined[r.name] = nil
            quarantinedModified[r.name] = nil
        }
        sortedRecords.insert(r)
    }

    func delete(_ name: String) {
        guard let r = records.removeValue(forKey: name) else { return }
        dropEncoded(r)
        free(r)
        sortedRecords.remove(name)
    }

    /// Frees a record's runtime state; a failure is reported (it was
    /// swallowed): the state leaks in the daemon's runtime, nothing else.
    private func free(_ r: StateRecord) {
        do {
            try r.state.free()
        } catch {
            report?("state '\(r.name)': its old value could not be freed in the daemon's runtime: \(error.message)")
        }
    }

    /// `record`: the one record a one-change commit changed, when the
    /// caller has it (the sink's image is made without looking it up).
    private func commit(_ commit: Commit, record changed: StateRecord? = nil, bytes: Int? = nil) throws(VarlinkError) {
        if let sink { record(commit, changed, in: sink) }
        if let bytes {
            log.append(commit, bytes: bytes)
        } else {
            log.append(commit)
        }
        onCommit?(commit)
    }

    /// Hands a commit and the states as it left them to the store. A
    /// failure (a full disk) fails the whole group at the end of the turn
    /// (`sinkFailure`): nothing more of the turn goes to the store.
    private func record(_ commit: Commit, _ changed: StateRecord?, in sink: CommitSink) {
        guard sinkFailure == nil else { return }
        do {
            if let r = changed {
                try sink.record(commit, state: StateImage(name: r.name, value: try r.value, modified: r.modified, descriptor: r.descriptor))
            } else if commit.changes.count == 1 {
                try sink.record(commit, state: try image(of: commit.changes[0].name, commit))  // no Set for one name
            } else {
                var images: [StateImage] = []
                var seen = Set<String>()
                for change in commit.changes where seen.insert(change.name).inserted {
                    images.append(try image(of: change.name, commit))
                }
                try sink.record(commit, states: images)
            }
        } catch {
            // The state in memory is ahead of the store: the turn's group
            // is rolled back at its end (Service.groupFailed), in memory
            // too, and its calls are answered StorageFull. (So is a state
            // whose value cannot be read for its image: it was written as
            // removed, and the store then said it was gone.)
            sinkFailure = error
        }
    }

    // MARK: A group the store refused (docs/robustness.md, "A full disk")

    /// Why the store refused a commit of the open group, if it did.
    public internal(set) var sinkFailure: Error?
    /// The revision before the open group's first commit: everything up to
    /// it is committed to the store.
    public private(set) var groupStart: UInt64 = 0
    /// States whose descriptor changed in the open group without a commit.
    private var describedInGroup: [String] = []

    /// The open group was committed (Service, at the end of each turn).
    @inline(__always)
    func groupCommitted() {
        groupStart = revision
        if !describedInGroup.isEmpty { describedInGroup.removeAll() }
    }

    /// Undoes, in memory, every commit of the open group after the store
    /// refused it: each state it touched takes what the store holds again
    /// (`contents`, read back after the rollback), the revision goes back
    /// to `groupStart`, and the log forgets the group's commits. Returns
    /// how many commits were undone.
    func rollBackGroup(to contents: SQLiteStore.Contents) -> UInt64 {
        let good = groupStart
        let undone = revision - good
        var names = Set(describedInGroup)
        if let failed = log.commits(after: good, current: revision) {
            for commit in failed { for change in commit.changes { names.insert(change.name) } }
        } else {
            // The log no longer holds them all: take every state back.
            names.formUnion(records.keys)
            for image in contents.states { names.insert(image.name) }
        }
        var held: [String: StateImage] = [:]
        for image in contents.states where names.contains(image.name) { held[image.name] = image }
        for name in names {
            guard let image = held[name], let value = image.value else {
                delete(name)
                continue
            }
            do {
                let state = try makeState(name, value, image.descriptor)
                let r = StateRecord(name: name, state: state, modified: image.modified, descriptor: image.descriptor,
                                    sizeBound: (try? Store.size(of: value)) ?? limits.maxValue)
                delete(name)
                insert(r)
            } catch {
                delete(name)
                quarantined[name] = "state '\(name)' cannot be restored after a refused group: \(error.detail)"
            }
        }
        revision = good
        log.dropAfter(good)
        sinkFailure = nil
        describedInGroup.removeAll()
        return undone
    }

    /// A state as `commit` left it.
    private func image(of name: String, _ commit: Commit) throws(TetherError) -> StateImage {
        if let r = records[name] {
            return StateImage(name: r.name, value: try r.value, modified: r.modified, descriptor: r.descriptor)
        }
        return StateImage(name: name, value: nil, modified: commit.revision, descriptor: Descriptor())
    }

    /// Byte order of names (Swift's String order is not byte order).
    static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

}

/// What a `SortedList` keeps in its name's byte order: a name, or a
/// record (the store's list: a reference, 8 bytes, where a name is 16).
protocol SortedEntry {
    var sortName: String { get }
}

extension String: SortedEntry {
    var sortName: String { self }
}

extension StateRecord: SortedEntry {
    var sortName: String { name }
}

/// The names of the tests' checks (a list of names alone).
typealias SortedNames = SortedList<String>

/// Entries in their names' byte order, in sorted chunks of at most
/// `chunkLimit` (none empty; every name of a chunk precedes every name of
/// the next). A sorted array moved every name after the new one on each
/// insert: n/2 on average, 500 k string copies per new state at 1 M states.
/// Here an insert is two binary searches (O(log n)), a shift inside one
/// chunk (at most `chunkLimit`) and, when the chunk splits, a shift of the
/// chunk list (n / (chunkLimit / 2) references: 2,000 at 1 M names, the
/// `--max-states` default) — a B-tree of two levels, enough under that
/// bound without swift-collections. Removal is the same; a chunk that
/// empties goes.
///
/// The store keeps its records here, not their names: at a million states
/// the names (16 bytes each, in chunks that kept the room they had before
/// a split) cost 22 MB more (docs/benchmarks.d/30-scale.md).
struct SortedList<Entry: SortedEntry> {
    static var chunkLimit: Int { 1024 }
    private(set) var chunks: [[Entry]] = []
    private(set) var count = 0

    /// Where a name is (or would be): its chunk and index in it;
    /// `chunk == chunks.count` is the end.
    struct Position: Comparable {
        var chunk: Int
        var index: Int
        static func < (a: Position, b: Position) -> Bool {
            a.chunk < b.chunk || (a.chunk == b.chunk && a.index < b.index)
        }
    }

    var end: Position { Position(chunk: chunks.count, index: 0) }

    /// The first entry whose name is not before `name`.
    func lowerBound(_ name: String) -> Position {
        var lo = 0, hi = chunks.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if Store.precedes(chunks[mid][chunks[mid].count - 1].sortName, name) { lo = mid + 1 } else { hi = mid }
        }
        guard lo < chunks.count else { return end }
        let chunk = chunks[lo]
        var a = 0, b = chunk.count
        while a < b {
            let mid = (a + b) / 2
            if Store.precedes(chunk[mid].sortName, name) { a = mid + 1 } else { b = mid }
        }
        return Position(chunk: lo, index: a)  // a < chunk.count: its last name is not before `name`
    }

    func entry(at p: Position) -> Entry? {
        p.chunk < chunks.count ? chunks[p.chunk][p.index] : nil
    }

    func name(at p: Position) -> String? {
        entry(at: p)?.sortName
    }

    func after(_ p: Position) -> Position {
        guard p.chunk < chunks.count else { return end }
        return p.index + 1 < chunks[p.chunk].count ? Position(chunk: p.chunk, index: p.index + 1)
            : Position(chunk: p.chunk + 1, index: 0)
    }

    /// Adds `entry`; false when one of its name is there already.
    @discardableResult
    mutating func insert(_ entry: Entry) -> Bool {
        let name = entry.sortName
        var p = lowerBound(name)
        if name == self.name(at: p) { return false }
        if chunks.isEmpty {
            chunks.append([entry])
            count = 1
            return true
        }
        if p.chunk == chunks.count { p = Position(chunk: chunks.count - 1, index: chunks[chunks.count - 1].count) }
        chunks[p.chunk].insert(entry, at: p.index)
        count += 1
        if chunks[p.chunk].count > Self.chunkLimit {
            // Two new arrays of their size: the full one would keep its
            // room (twice the limit) under the lower half.
            let full = chunks[p.chunk]
            let half = full.count / 2
            chunks[p.chunk] = Array(full[..<half])
            chunks.insert(Array(full[half...]), at: p.chunk + 1)
        }
        return true
    }

    /// Removes the entry named `name`; false when none was there.
    @discardableResult
    mutating func remove(_ name: String) -> Bool {
        let p = lowerBound(name)
        guard name == self.name(at: p) else { return false }
        chunks[p.chunk].remove(at: p.index)
        if chunks[p.chunk].isEmpty { chunks.remove(at: p.chunk) }
        count -= 1
        return true
    }

    /// Every entry, in order.
    var all: [Entry] { chunks.flatMap { $0 } }
}

/// Carries a VarlinkError through the runtime's transaction body, which
/// throws untyped errors.
struct WrappedVarlinkError: Error {
    let error: VarlinkError
}
