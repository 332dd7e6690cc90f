@_exported import TetherCore

/// A Tether runtime for Swift programs: one reactive graph and one libuv
/// loop, the same runtime C programs get from `tether_runtime_new` (the
/// C face calls the very same operations, `Runtimes`).
///
///     let rt = try Runtime()                    // its own loop thread
///     let count = rt.state(0)                   // @State var count = 0
///     let doubled = rt.computed { count.value * 2 }
///     let view = count.observe { print($0.old ?? 0, "->", $0.new ?? 0) }
///     count.value = 3
///     try rt.flush()                            // the observer has run
///
/// Every method may be called from any thread, including from inside any
/// callback; callbacks never run concurrently with each other. Observers
/// run on the loop thread (coalesced per loop turn) unless `.sync`, and
/// effects re-run when what they read changes.
///
/// Lifetimes: the runtime lives as long as this object (or, for one made
/// elsewhere and wrapped with `init(unowned:)`, as long as its maker keeps
/// it). States, computeds, effects and observers hold only its handle, so
/// they never keep it alive: once it is freed, using them reports
/// `ErrorCode.stale`. Keep the `Runtime` for as long as you use what it made.
public final class Runtime: @unchecked Sendable {
    /// How the runtime's loop runs.
    public enum Loop: Sendable {
        /// On the runtime's own background thread (the default).
        case ownThread
        /// By the host: poll `fileDescriptor`, then call `runOnce()`.
        case host
    }

    public struct Options: Sendable {
        public var loop: Loop
        /// Rounds of callbacks that write each other before the chain is
        /// cut with `ErrorCode.feedbackLoop`.
        public var maxRounds: Int
        /// No locks at all: only the creating thread may call (needs `.host`).
        public var singleThreaded: Bool

        public init(loop: Loop = .ownThread, maxRounds: Int = 100, singleThreaded: Bool = false) {
            self.loop = loop
            self.maxRounds = maxRounds
            self.singleThreaded = singleThreaded
        }
    }

    /// The runtime's handle: the `id` of the C `tether_runtime_t` naming it.
    public let handle: UInt64
    private let owned: Bool

    /// A new runtime and its loop (started on its own thread by default).
    public init(_ options: Options = Options()) throws(TetherError) {
        guard options.maxRounds > 0, options.maxRounds <= Int(UInt32.max) else {
            throw TetherError(.invalidArgument, "maxRounds \(options.maxRounds) must be positive")
        }
        handle = try Runtimes.newRuntime(loop: options.loop == .host ? .host : .thread,
                                         maxRounds: UInt32(options.maxRounds),
                                         singleThread: options.singleThreaded)
        owned = true
    }

    /// Wraps a runtime made elsewhere (by C, `tether_runtime_new`): this
    /// object does not free it.
    public init(unowned handle: UInt64) {
        self.handle = handle
        owned = false
    }

    deinit {
        if owned { try? Runtimes.freeRuntime(handle) }
    }

    /// Frees the runtime now: everything it made is freed and every
    /// destroy runs once; its handles are stale from now on. Idempotent.
    public func free() {
        try? Runtimes.freeRuntime(handle)
    }

    /// Blocks until every callback owed for earlier writes has run: how
    /// programs and tests wait, instead of sleeping.
    public func flush() throws(TetherError) {
        try Runtimes.flush(handle)
    }

    /// The runtime's revision: one step per applied write or commit.
    public var revision: UInt64 {
        get throws(TetherError) { try Runtimes.revision(handle) }
    }

    /// The runtime's graph now, as Graphviz DOT text (`dot -Tsvg` draws
    /// it): states, computeds, effects, trackings, observers, bindings and
    /// scopes, with the JSON Pointer each read on its edge and nodes waiting
    /// to be brought up to date drawn dashed. Any thread, callbacks too.
    public func graph() throws(TetherError) -> String {
        try Runtimes.graphDOT(handle)
    }

    /// How many states the runtime holds now (the daemon's tests hold it
    /// to the number of its records: nothing leaks, nothing is freed twice).
    package var liveStates: Int {
        get throws(TetherError) { try Runtimes.liveStates(handle) }
    }

    /// `.host` loop: the descriptor to poll before `runOnce()`.
    public var fileDescriptor: Int32 {
        get throws(TetherError) { try Runtimes.backendFD(handle) }
    }

    /// `.host` loop: one non-blocking turn (delivers what is owed).
    public func runOnce() throws(TetherError) {
        try Runtimes.runOnce(handle)
    }

    /// Holds every delivery back until `body` returns, then delivers once
    /// (observers see the last value; SYNC ones run before this returns).
    public func batch<R>(_ body: () throws -> R) rethrows -> R {
        try? Runtimes.beginBatch(handle)
        defer { try? Runtimes.endBatch(handle) }
        return try body()
    }

    /// Runs `body` without recording what it reads as dependencies of the
    /// computed or effect running it.
    public func untracked<R>(_ body: () throws -> R) rethrows -> R {
        try? Runtimes.beginUntracked(handle)
        defer { try? Runtimes.endUntracked(handle) }
        return try body()
    }
}
