// ObserverSink.swift — what an observer is told (Change, Cause), its callback (ObserverSink) and its options.

/// What an observer is told; borrowed by the callback for the call's duration.
public struct Change {
    public var observer: ObserverID
    /// The state observed, or nil for an observer of a computed.
    public var state: StateID?
    /// The computed observed, or nil for an observer of a state.
    public var computed: DerivedID?
    public var path: JSONPointer?
    public var oldValue: Value?
    public var newValue: Value?
    public var revision: UInt64
    public var isInitial: Bool
    /// What caused the (last) write this call reports.
    public var cause: Cause
}

/// What caused a write: the transaction's metadata (opaque to the core; the
/// C face keeps its tether_transaction_info_t there) and the wave — the
/// revision of the write from outside any callback that started a chain of
/// callback writes. Transform bindings use the wave to carry a change across
/// at most once per direction, so rings settle.
public struct Cause {
    public var meta: AnyObject?
    /// 0 for a write from outside callbacks: its own revision becomes the wave.
    public var wave: UInt64

    public init(meta: AnyObject? = nil, wave: UInt64 = 0) {
        self.meta = meta
        self.wave = wave
    }
}

/// The callback of one observer and the release of whatever it captured.
/// `release` runs exactly once: when the observer is removed, its state or
/// graph is freed, or the last running call ends after such a removal.
///
/// The owner calls it through `deliver` and `runRelease`, which the C face
/// overrides for C observers: one object per observer holding the function
/// pointers, instead of this object plus two closure contexts (profiled: a
/// retain of the closure context per call).
open class ObserverSink {
    public let call: (borrowing Change) -> Void
    private var release: (() -> Void)?

    public init(call: @escaping (borrowing Change) -> Void, release: (() -> Void)? = nil) {
        self.call = call
        self.release = release
    }

    /// For subclasses that override `deliver` and `runRelease`.
    public init() {
        call = { _ in }
        release = nil
    }

    /// Calls the observer with `change`.
    open func deliver(_ change: borrowing Change) { call(change) }

    /// `deliver` with the change at an address that stays valid for the
    /// call (the owner's `Delivery`): a sink that lends parts of it to a
    /// callback (the C sink lends the values) can point into it rather
    /// than copy them first.
    open func deliver(at change: UnsafePointer<Change>) { deliver(change.pointee) }

    /// Called once, under the graph's lock, when the sink's observer is
    /// registered on `graph` as `observer`, of `state` or `computed`:
    /// before any call (the C sink encodes its handles here, and prepares
    /// the graph's `directLentChange`, so its calls need not ask).
    open func attached(to graph: Graph, as observer: ObserverID, state: StateID?, computed: DerivedID?) {}

    /// `deliver(at:)` for a direct call (GraphDirect.swift), which is
    /// always the same kind of change: a state's whole value, old and new
    /// both scalars, not INITIAL, no metadata. A sink may skip testing
    /// those (the C sink: ~12 instructions a call). `lent`: the graph's
    /// `directLentChange`, where a sink may keep what it lends every call
    /// of the direct call alike (the C sink's `tether_change_t`, filled
    /// once per direct call: ~10 instructions a call). The change's
    /// `observer` is this call's `observer` once the sink stores it (the C
    /// sink, which knows its own, does not: one store a call fewer).
    open func deliverDirect(at change: UnsafeMutablePointer<Change>, observer: ObserverID,
                            lending lent: UnsafeMutableRawPointer) {
        change.pointee.observer = observer
        deliver(at: change)
    }

    /// Idempotent, so a sink handed to several cleanup paths still releases once.
    open func runRelease() {
        let r = release
        release = nil
        r?()
    }
}

public struct ObserverOptions: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Deliver at the end of the writer's write instead of on the loop.
    public static let sync = ObserverOptions(rawValue: 1)
    /// Deliver once right away with the current value.
    public static let initial = ObserverOptions(rawValue: 2)
    /// Deliver even when a write leaves the observed part equal.
    public static let equal = ObserverOptions(rawValue: 4)
}

/// Which queue an observer's calls go to.
public enum DeliveryQueue: Sendable {
    case sync, loop
}
