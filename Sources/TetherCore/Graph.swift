// Graph.swift — the Graph class: its storage, side tables and call-out hooks; states: create, free, read.
import Synchronization

/// The reactive graph: states and their observers in contiguous storage,
/// addressed by index. Single-threaded by design: the runtime that owns a
/// graph serialises access to it (one lock per runtime), which keeps this type
/// testable alone and lets a single-threaded runtime skip locking entirely.
///
/// Callbacks are never called from here. Writes only mark observers pending
/// and queue them; the owner takes deliveries out (`takeBatch`) and calls
/// them outside its lock, so a callback may call back into the graph.
open class Graph {
    /// 56 bytes: fields ordered so the 17-byte value is followed by the
    /// one-byte flags and the four-byte fields pack behind it; the rarely
    /// needed epoch base lives in `bases`; the subscriber list has no tail
    /// and the free list reuses its head (benchmark target: at most 64
    /// bytes per state, including the storage's growth slack).
    @usableFromInline
    struct StateNode {
        @usableFromInline var value: Value
        @usableFromInline var typeLocked: Bool
        /// DescriptorFlags; details in `descriptors` (packs into padding).
        @usableFromInline var described: DescriptorFlags = []
        /// Readers read parts of this state by path: its path trie
        /// (GraphPaths.swift) hangs off its `StateBase`. In padding: the
        /// node stays 56 bytes.
        @usableFromInline var pathReaders = false
        /// `StateNode.freed` while the slot is free: no handle carries it
        /// (a handle's generation has `GenerationCounter.bits`, and the
        /// counter never issues 0), so a handle's generation compared with
        /// this one needs no test of its own for a free slot (the plain
        /// path's read and write: two instructions each).
        @usableFromInline var generation: UInt32
        @usableFromInline var revision: UInt64
        /// Changes when the value changes, and goes back to an earlier version
        /// when the value goes back to what it was at the start of the current
        /// delivery epoch (42 -> 0 -> 42 in one batch is no change to readers).
        @usableFromInline var version: UInt64 = 0
        @usableFromInline var firstObserver: UInt32    // intrusive list, registration order
        var lastObserver: UInt32
        /// Readers (computeds, effects, trackings): a Link list, newest
        /// first (no tail index: 4 bytes per state; the order readers are
        /// marked in does not matter, calls are sorted by registration).
        /// While the slot is free (`freed`) it links the free slots.
        @usableFromInline var firstSub: UInt32 = noIndex
        /// Index into `bases`, or noIndex: made the first time a state with
        /// readers is written.
        var base: UInt32 = noIndex

        init(value: Value, typeLocked: Bool, generation: UInt32, revision: UInt64) {
            self.value = value
            self.typeLocked = typeLocked
            self.generation = generation
            self.revision = revision
            firstObserver = noIndex
            lastObserver = noIndex
        }

        /// The generation of a free slot.
        @usableFromInline static let freed = UInt32.max

        /// The next free slot, while this one is free.
        var nextFree: UInt32 {
            get { firstSub }
            set { firstSub = newValue }
        }
    }

    /// What a state was at the start of the current epoch, for the version
    /// revert above.
    struct StateBase {
        var epoch: UInt64
        var version: UInt64
        var value: Value
        var nextFree: UInt32
        /// The root ("") of the state's path trie, or noIndex: the parts
        /// readers read by path (GraphPaths.swift). Here, not in every state
        /// node: only states read by path need it.
        var pathRoot: UInt32 = noIndex
    }

    @usableFromInline
    struct ObserverRecord {
        @usableFromInline var generation: UInt32
        var target: UInt32           // NodeRef: a state or a computed
        var prev: UInt32
        var next: UInt32
        var nextFree: UInt32
        var options: ObserverOptions
        var path: JSONPointer?       // nil observes the whole value
        var sequence: UInt64         // registration order, the delivery order
        @usableFromInline var sink: ObserverSink?
        // Pending delivery (coalesced): first old value, latest revision.
        var pending: Bool
        /// Not a SYNC observer of the whole value (fixed at registration):
        /// never owed a direct call. Beside `pending`, so the direct call's
        /// walk tests both in one 16-bit load (`mayCallDirectly`;
        /// `ObserverLayoutTests` pins it).
        var notDirect: Bool
        var pendingInitial: Bool
        var pendingOld: Value?
        var pendingRevision: UInt64
        var pendingRound: UInt32
        // Calls in flight; a removal during a call defers the release to its end.
        @usableFromInline var running: UInt32
        @usableFromInline var removed: Bool
        /// Its place in the direct call being made (`directTargets`), or
        /// noIndex: a removal then asks how far the owner's calls got
        /// (GraphDirect.swift, "Pinned calls"). In the padding after `removed`.
        @usableFromInline var pinnedAt: UInt32 = noIndex
        /// The cause of the latest pending write (see `Cause`).
        var pendingMeta: AnyObject? = nil
        var pendingWave: UInt64 = 0
    }

    // Node storage (the layouts of derived nodes and links: GraphNodes.swift).
    @usableFromInline final var states = NodeBuffer<StateNode>()
    @usableFromInline final var observers = NodeBuffer<ObserverRecord>()
    @usableFromInline final var derived = NodeBuffer<DerivedNode>()
    var bases = NodeBuffer<StateBase>()
    var firstFreeBase: UInt32 = noIndex
    @usableFromInline final var links = NodeBuffer<Link>()
    /// Parts of states read by path (GraphPaths.swift).
    var pathNodes = NodeBuffer<PathNode>()
    var firstFreePath: UInt32 = noIndex
    /// Path nodes in use (tests: the trie does not outlive its readers).
    public internal(set) var livePathNodes = 0
    /// The walk over a path subtree when a write wakes it (kept: no
    /// allocation per write).
    var pathStack = NodeBuffer<Int>()
    var firstFreeState: UInt32 = noIndex
    var firstFreeObserver: UInt32 = noIndex
    var firstFreeDerived: UInt32 = noIndex
    var firstFreeLink: UInt32 = noIndex
    @usableFromInline final var nextVersion: UInt64 = 1
    /// Advanced whenever a delivery round starts; see StateNode.version.
    var epoch: UInt64 = 0
    /// The derived node being evaluated innermost, or -1. The frames it
    /// interrupted are saved on the native stack by the evaluation that
    /// began it (`beginEvaluation` returns them, `endEvaluation` takes them
    /// back): a heap stack pushed and popped per evaluation was ~30
    /// instructions of each recompute (issue 16, sixth round).
    var evalTop = -1
    /// Reads inside tether_untracked_begin/end are not recorded.
    public internal(set) var untrackedDepth: Int {
        get { untracked }
        set {
            untracked = newValue
            trackTarget = newValue == 0 ? evalTop : -1
        }
    }
    /// `untrackedDepth`'s storage, which `beginEvaluation` and
    /// `endEvaluation` set beside `trackTarget` without the setter's test.
    final var untracked = 0
    /// The node a read is recorded for now: the innermost evaluation, or -1
    /// (none, or untracked). Kept beside evalTop and untrackedDepth so a
    /// read tests one word (three loads and a multiply before; profiled).
    @usableFromInline final var trackTarget = -1
    /// Validators running now: a write from one is refused.
    public internal(set) var validatingDepth = 0
    /// Set (under the owner's lock) while the owner applies what a remote
    /// state's daemon committed: the one time a mirror may be written.
    public var applyingRemote = false
    /// How messages spell a state's handle (the C face: "0x…"); nil: "#index".
    public var stateHandleText: ((StateID) -> String)?
    /// Whether the writing thread may run a validator now (nil: always).
    /// See `Graph.validatorNeedsOwner`.
    public var callbacksReady: (() -> Bool)?
    var propagateStack = NodeBuffer<Int>()
    /// Held-back deliveries: nothing is delivered while a batch is open.
    /// Final, so the batch functions' plain path (`plainBatchBegin`) reaches
    /// it without an accessor call.
    public final var batchDepth = 0
    public internal(set) var liveDerived = 0
    var pendingSinkReleases: [ObserverSink] = [] {
        didSet { deferredReleasesChanged() }
    }
    /// The cause of the latest write that queued an effect or tracking, by
    /// derived index, kept only when it is not the plain one (no metadata,
    /// its own revision as the wave): a side table, so computed nodes do not
    /// grow for what only queued callbacks need.
    var derivedCauses: [UInt32: Cause] = [:] {
        didSet { hasDerivedCauses = !derivedCauses.isEmpty }
    }
    /// Whether `derivedCauses` has entries, tested on every effect run and
    /// queueing instead of `derivedCauses.isEmpty` (which retained and
    /// released the dictionary's storage each time; profiled).
    var hasDerivedCauses = false
    /// The cached errors of computeds whose last evaluation failed
    /// (`DerivedFlags.failed`), by derived index: rare, so not in every node.
    var derivedErrors: [UInt32: TetherError] = [:]
    /// Descriptors of described states, by state index.
    var descriptors: [UInt32: StateDescriptor] = [:]
    /// What the writes being made now were caused by; the owner sets it
    /// before writing and it is copied into every call those writes queue.
    public var cause = Cause() {
        didSet { causeIsPlain = cause.meta == nil && cause.wave == 0 }
    }
    /// `cause` carries nothing (no metadata, no wave): what nearly every
    /// write sees. Tested instead of `cause.meta`, whose read retained it.
    var causeIsPlain = true
    var pendingBodyReleases: [DerivedBody] = [] {
        didSet { deferredReleasesChanged() }
    }
    /// Whether either list above has entries: asked after every read from
    /// inside a callback, where testing the arrays retained their storage.
    public internal(set) final var hasDeferredReleases = false

    /// After either list changed: `hasDeferredReleases`, and a direct call
    /// being made runs them before its next call, as a drain does.
    private func deferredReleasesChanged() {
        hasDeferredReleases = !pendingSinkReleases.isEmpty || !pendingBodyReleases.isEmpty
        if hasDeferredReleases { directStop.store(1, ordering: .relaxed) }
    }

    /// Runs a user callback; alone (tests) it just calls. The owner
    /// overrides `callOut` instead (see there). Tests set it to watch calls.
    public var gate: (_ round: UInt32, _ cause: Cause, _ body: () -> Void) -> Bool = { _, _, body in body(); return true }
    /// Tracing (GraphTrace.swift); traced nodes' bodies carry `DerivedBody.traced`.
    var traceMode: TraceMode = .off
    var traceSink: ((TraceEvent) -> Void)?
    /// Nodes marked for `TraceMode.marked`: index -> generation.
    var tracedNodes: [UInt32: UInt32] = [:]
    /// The revision at each traced node's last traced run.
    var traceRevisions: [UInt32: UInt64] = [:]
    /// Levels of the pull's recursion on this thread now (`updateNeeded`).
    var pullDepth = 0
    /// The iterative pull's frames (`pullIteratively`), innermost last.
    var pullStack = NodeBuffer<PullFrame>()

    // MARK: Calling out

    /// A removal's fence against the owner of the direct call, between its
    /// store and its load (GraphDirect.swift, "Asymmetric fences"): none
    /// needed here, where `asymmetricFences` is false.
    open func fenceAgainstDirectCaller() {}

    /// Runs a user callback (effect body, cleanup, validator, tracking
    /// apply) as a callback of `round` caused by `cause`. The runtime
    /// overrides it to release its lock around the call and mark the thread
    /// as inside a callback; it may refuse (false): the thread is out of
    /// stack for another nested callback. An overridable method rather than
    /// a stored closure: calling a stored closure retained its context each
    /// time (profiled, once per recompute).
    open func callOut(_ round: UInt32, _ cause: Cause, _ body: () -> Void) -> Bool {
        gate(round, cause, body)
    }

    /// Runs a computed's compute (or a custom binding's get) into `result`,
    /// as `callOut` does (round `maxRounds`: a compute may not write).
    /// Returns false when refused; `failure` is set when the compute failed.
    /// The runtime overrides it to call a C compute function directly.
    open func callCompute(_ body: DerivedBody, _ result: inout Value, _ failure: inout TetherError?) -> Bool {
        if body.traced && !traceEvaluation(.recompute, cause: Cause()) { return true }
        guard let compute = body.compute else { return true }
        return gate(maxRounds, Cause()) { failure = compute(&result) }
    }

    /// An effect is about to run again (its cleanup is owed): the owner
    /// frees what the previous run created (nested effects, computeds,
    /// scopes), before that cleanup. Called with the graph lock held.
    open func effectWillRerun(_ body: DerivedBody, round: UInt32) {}

    /// The body of the effect whose run is the innermost evaluation (nil
    /// when that is a computed, or nothing is being evaluated): the owner
    /// of what the running callback creates.
    public var runningEffectBody: DerivedBody? {
        let top = evalTop
        guard top >= 0, derived[top].kind == .effect,
              derived[top].flags.contains(.computing) else { return nil }
        return derived[top].body
    }

    /// Runs an effect's body (or a tracking's on_change) with `revision`, as
    /// `callOut` does. The runtime overrides it to call the body without a
    /// closure in between (profiled: ~15 instructions per effect run).
    open func callBody(_ body: DerivedBody, _ revision: UInt64, _ round: UInt32, _ cause: Cause) -> Bool {
        if body.traced && !traceEvaluation(.effectRun, cause: cause) { return true }
        return callOut(round, cause) { body.runBody(revision) }
    }
    var generations: GenerationCounter
    var nextSequence: UInt64 = 0

    /// Advanced by one for every write that changed a value.
    public final var revision: UInt64 { revisionCount }
    /// `revision`'s storage, advanced by the writes (inlined into the C
    /// face by the plain write: GraphPlainScalar.swift).
    @usableFromInline final var revisionCount: UInt64 = 0
    /// Writes made from a callback `maxRounds` deep are refused (feedback loop).
    public var maxRounds: UInt32
    public internal(set) var liveStates = 0
    public internal(set) var liveObservers = 0

    @usableFromInline final let syncQueue = IndexQueue()
    @usableFromInline final let loopQueue = IndexQueue()
    /// SYNC calls a write left to its writer (GraphDirect.swift).
    @usableFromInline var directCall: DirectCall?
    /// The call every observer of the direct call gets (its observer set
    /// per call): filled by `recordDirectCall`, used by the owner (which
    /// holds the delivery lock) while it makes the calls. Scalars only, so
    /// it holds no reference between direct calls. Followed, in the same
    /// allocation, by `directLentChange`.
    public final let directDelivery: UnsafeMutablePointer<Delivery> = {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<Delivery>.stride + Graph.lentChangeBytes,
                                                   alignment: 16)
        let p = raw.bindMemory(to: Delivery.self, capacity: 1)
        p.initialize(to: Delivery())
        (raw + MemoryLayout<Delivery>.stride).storeBytes(of: UInt64.max, as: UInt64.self)
        return p
    }()
    /// Room for what a sink lends the callbacks of a direct call, filled
    /// once per direct call and in part per call (`ObserverSink.deliverDirect`:
    /// the C face's `tether_change_t`). Its first 8 bytes say whether the
    /// sink has filled it (`UInt64.max` at first: not yet).
    public static let lentChangeBytes = 128
    @inlinable
    public final var directLentChange: UnsafeMutableRawPointer { UnsafeMutableRawPointer(directDelivery + 1) }
    /// The observers the direct call owes (`directTargetCount` of them),
    /// and what a removal did to each (`DirectRemoval`, under the lock);
    /// both `directCapacity` long, grown together.
    @usableFromInline final var directTargets: UnsafeMutablePointer<DirectTarget>?
    @usableFromInline final var directTargetCount = 0
    final var directRemovals: UnsafeMutablePointer<DirectRemoval>?
    /// A removal wrote `directRemovals` during this direct call: its end
    /// sets them back to `.none` (so the pin, per observer, need not).
    @usableFromInline final var directRemovalsDirty = false
    final var directCapacity = 0
    /// 1 + the index of the call the owner claimed last (0: none yet).
    /// Written by the owner without the lock; read by a removal, under it,
    /// past the handshake's fence (GraphDirect.swift, "Pinned calls").
    @usableFromInline final let directCurrent = Atomic<UInt32>(0)
    /// Targets a removal freed before the owner reached them: until it
    /// has passed them all, `directStop` stays set (under the lock).
    final var directSkips = 0
    /// Nonzero when the owner, making direct calls without the lock, must
    /// take it and look before its next call: SYNC work queued, releases
    /// deferred, the runtime freed, an observer of the calls removed. Set
    /// under the lock.
    @usableFromInline final let directStop = Atomic<UInt32>(0)
    /// Whether a removal's `fenceAgainstDirectCaller` leaves the owner's
    /// half of the handshake a compiler barrier (GraphDirect.swift,
    /// "Asymmetric fences"); false: sequentially consistent operations on
    /// both sides. Set once, before the graph is shared.
    public final var asymmetricFences = false
    /// Set when the loop queue went from empty to non-empty: the owner must
    /// wake its loop. Cleared by `takeLoopWakeRequest`.
    @usableFromInline final var loopWakeRequested = false

    /// Index space is limited by the C face's handle layout (24 bits).
    public static let maxNodes = 1 << 24

    /// The id of the runtime that owns this graph (0 for a graph alone):
    /// the plain path tracks a read from a callback only of this runtime.
    @usableFromInline final let ownerID: UInt64

    public init(maxRounds: UInt32 = 100, firstGeneration: UInt32 = 1, ownerID: UInt64 = 0) {
        self.ownerID = ownerID
        self.maxRounds = maxRounds
        self.generations = GenerationCounter(startingAt: firstGeneration)
    }

    deinit {
        directDelivery.deinitialize(count: 1)
        UnsafeMutableRawPointer(directDelivery).deallocate()
        directRemovals?.deallocate()  // trivial elements too
        directTargets?.deallocate()  // trivial elements: nothing to deinitialize
        states.destroy()
        observers.destroy()
        derived.destroy()
        links.destroy()
        pathNodes.destroy()
        pathStack.destroy()
        bases.destroy()
        propagateStack.destroy()
        pullStack.destroy()
    }

    /// Where generations continue, so a later graph in the same runtime slot
    /// never reissues a handle of this one.
    public var nextGeneration: UInt32 { generations.next }

    /// A generation for an object the owner keeps outside the graph
    /// (bindings, transactions, scopes), from the same sequence, so no two
    /// handles of one runtime slot ever share one.
    public func takeGeneration() -> UInt32 { generations.take() }

    // MARK: States

    public func createState(_ value: Value, typeLocked: Bool = false) throws(TetherError) -> StateID {
        let generation = generations.take()
        let index: UInt32
        // The node is built in each branch, not once before: a shared local
        // was copied in and destroyed (a value-witness copy per state).
        if firstFreeState != noIndex {
            index = firstFreeState
            firstFreeState = states[Int(index)].nextFree
            states[Int(index)] = StateNode(value: value, typeLocked: typeLocked, generation: generation,
                                           revision: revision)
        } else {
            guard states.count < Graph.maxNodes else {
                throw TetherError(.noMemory, "too many live states (limit \(Graph.maxNodes))")
            }
            index = UInt32(states.count)
            states.append(StateNode(value: value, typeLocked: typeLocked, generation: generation,
                                    revision: revision))
        }
        liveStates += 1
        return StateID(index: index, generation: generation)
    }

    @inlinable @inline(__always)
    final func resolve(_ id: StateID) throws(TetherError) -> Int {
        let i = Int(id.index)
        guard i < states.count, id.generation != 0, states[i].generation == id.generation else {
            throw Graph.staleState()
        }
        return i
    }

    /// Out of line: the message is built only on the failure path.
    @usableFromInline @inline(never)
    static func staleState() -> TetherError {
        TetherError(.stale, "state handle is stale: it was freed, or never existed")
    }

    /// Frees a state and its observers. Returns the sinks whose release the
    /// caller must run outside its lock (sinks still running are released by
    /// `finish` instead).
    public func freeState(_ id: StateID) throws(TetherError) -> [ObserverSink] {
        let i = try resolve(id)
        var released: [ObserverSink] = []
        var o = states[i].firstObserver
        while o != noIndex {
            let next = observers[Int(o)].next
            if let sink = detachObserver(Int(o)) { released.append(sink) }
            o = next
        }
        unlinkSubscribers(of: NodeRef.state(i))
        if states[i].pathReaders { unlinkPathReaders(of: i) }
        assert(!states[i].pathReaders, "a path trie outlived its readers")
        if let validator = removeDescriptor(i) { released.append(validator.releaser) }
        states[i].generation = StateNode.freed
        states[i].value = .null
        if states[i].base != noIndex {
            let b = Int(states[i].base)
            bases[b].value = .null
            bases[b].nextFree = firstFreeBase
            firstFreeBase = UInt32(b)
            states[i].base = noIndex
        }
        states[i].firstObserver = noIndex
        states[i].lastObserver = noIndex
        states[i].nextFree = firstFreeState
        firstFreeState = UInt32(i)
        liveStates -= 1
        return released
    }

    /// Reads a state. `tracked`: the reader is the thread evaluating a
    /// computed or effect, so the read becomes one of its dependencies.
    public func read(_ id: StateID, tracked: Bool = false) throws(TetherError) -> Value {
        let i = try resolve(id)
        if tracked { track(NodeRef.state(i), version: states[i].version) }
        return states[i].value
    }

    /// The part at `path`. When `tracked`, the read depends on that part
    /// only (GraphPaths.swift): writes elsewhere in the state do not wake
    /// the reader. It is recorded even when the path names nothing yet.
    public func read(_ id: StateID, at path: JSONPointer, tracked: Bool = false) throws(TetherError) -> Value {
        let i = try resolve(id)
        if tracked { trackPath(i, path) }
        return try states[i].value.value(at: path)
    }

    /// The whole value, for a reader that uses only the part at `path` (a
    /// projection binding walks it itself): tracked as a read of that part.
    public func read(_ id: StateID, dependingOn path: JSONPointer, tracked: Bool = false) throws(TetherError) -> Value {
        let i = try resolve(id)
        if tracked { trackPath(i, path) }
        return states[i].value
    }

    public func stateRevision(_ id: StateID) throws(TetherError) -> UInt64 {
        states[try resolve(id)].revision
    }
}

extension Graph {
    /// Whether an id still names a live node (for owners that keep lists of
    /// handles, such as scopes, to drop dead entries).
    public func isLive(_ id: StateID) -> Bool {
        let i = Int(id.index)
        return i < states.count && id.generation != 0 && states[i].generation == id.generation
    }

    public func isLive(_ id: ObserverID) -> Bool { resolve(id) != nil }

    public func isLive(_ id: DerivedID) -> Bool {
        let i = Int(id.index)
        return i < derived.count && id.generation != 0 && derived[i].generation == id.generation
            && !derived[i].flags.contains(.disposed)
    }
}
