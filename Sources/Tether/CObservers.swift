import CTether
import Glibc
import TetherCore
import TetherRuntime

// The observer functions of include/tether.h.

/// "" for observers of the whole value; allocated once, never freed.
private let rootPathCString: UnsafeMutablePointer<CChar> = strdup("")!

/// An observer's path as C reads it. Freed with the sink that holds it,
/// so a sink dropped unreleased (a registration that failed) leaks nothing.
private final class ObservedPath {
    let text: UnsafeMutablePointer<CChar>
    init(_ path: JSONPointer?) { text = path.map { strdup($0.description)! } ?? rootPathCString }
    deinit { if text != rootPathCString { free(text) } }
}

/// The sink of a C observer: calls its function with a `tether_change_t`
/// (values lent in place), and its destroy function once on release.
/// `binding`: the binding observed (0 for none); `showState`: false when
/// the observed state is a constant binding's private one.
final class CObserverSink: ObserverSink {
    private let fn: tether_observer_fn
    private let userData: UnsafeMutableRawPointer?
    private let destroy: tether_destroy_fn?
    private let slot: Int
    private let observed: ObservedPath
    /// `observed.text`, kept here: one load a call, not two.
    private let pathText: UnsafePointer<CChar>
    private let binding: UInt64
    private let showState: Bool
    private var released = false

    init(slot: Int, fn: @escaping tether_observer_fn, userData: UnsafeMutableRawPointer?,
         destroy: tether_destroy_fn?, path: JSONPointer?, binding: UInt64, showState: Bool) {
        self.fn = fn
        self.userData = userData
        self.destroy = destroy
        self.slot = slot
        observed = ObservedPath(path)
        pathText = UnsafePointer(observed.text)
        self.binding = binding
        self.showState = showState
        super.init()
    }

    /// The handles of the calls, encoded when the observer is registered
    /// (`attached`; profiled: encoding them per call was a fifth of a SYNC
    /// delivery's cost here). Three words per observer, not a whole
    /// `tether_change_t` template (88 bytes more per observer, for ~5
    /// instructions a call).
    private var observerHandle: UInt64 = 0
    private var stateHandle: UInt64 = 0
    private var computedHandle: UInt64 = 0

    override func deliver(_ change: borrowing Change) {
        withUnsafePointer(to: change) { deliver(at: $0) }
    }

    override func deliver(at change: UnsafePointer<Change>) {
        var c = tether_change_t()
        c.observer = tether_observer_t(id: observerHandle)
        c.state = tether_state_t(id: stateHandle)
        c.computed = tether_computed_t(id: computedHandle)
        c.path = pathText
        c.binding = tether_binding_t(id: binding)
        c.revision = change.pointee.revision
        c.flags = change.pointee.isInitial ? UInt32(TETHER_CHANGE_INITIAL) : 0
        c.transaction = TransactionMeta.info(of: change.pointee.cause)
        // Values lent in place, where the owner keeps them for the call: an
        // `Optional<Value>` holding a value has the same layout as the
        // `Value` (Swift stores `.none` in a spare tag value of the payload,
        // the extra inhabitant), so its address is the value's. (Copying
        // them out first was ~14 instructions a call: profiled.)
        let base = UnsafeRawPointer(change)
        if case .some = change.pointee.oldValue { c.old_value = OpaquePointer(base + MemoryLayout<Change>.offset(of: \Change.oldValue).unsafelyUnwrapped) }
        if case .some = change.pointee.newValue { c.new_value = OpaquePointer(base + MemoryLayout<Change>.offset(of: \Change.newValue).unsafelyUnwrapped) }
        // The change is lent for the call only, and the callback cannot
        // write past it (it gets a pointer to const): no stack-protector
        // check (`&c` asked for one: five instructions a call, profiled).
        _withUnprotectedUnsafePointer(to: &c) { fn($0, userData) }
    }

    /// `deliver(at:)` for a direct call: what it always is (a state's
    /// change, both values present, not INITIAL, outside transactions) is
    /// not tested, and what every direct call of the graph has alike (where
    /// the values are, the flags, no computed, no transaction) was written
    /// once, into the graph's `directLentChange`, when the first C observer
    /// was registered (`attached(to:)`; `tether_change_t` is lent, valid
    /// only during the call, so every callback may get the same one). Each
    /// call sets its observer's fields and the revision there.
    override func deliverDirect(at change: UnsafeMutablePointer<Change>, observer: ObserverID,
                                lending lent: UnsafeMutableRawPointer) {
        let c = CObserverSink.lentChange(lent)
        c.pointee.observer = tether_observer_t(id: observerHandle)
        c.pointee.state = tether_state_t(id: stateHandle)
        c.pointee.path = pathText
        c.pointee.binding = tether_binding_t(id: binding)
        c.pointee.revision = change.pointee.revision
        fn(c, userData)
    }

    /// Encodes the handles the calls report, and writes what every direct
    /// call of `graph` shares into its `directLentChange` (once per graph).
    override func attached(to graph: Graph, as observer: ObserverID, state: StateID?, computed: DerivedID?) {
        observerHandle = HandleCodec.observer(slot, observer)
        stateHandle = showState ? state.map { HandleCodec.state(slot, $0) } ?? 0 : 0
        computedHandle = computed.map { HandleCodec.derived(slot, .computed, $0) } ?? 0
        let lent = graph.directLentChange
        guard lent.load(as: UInt64.self) != CObserverSink.lentReady else { return }
        let base = UnsafeRawPointer(graph.directDelivery) + MemoryLayout<Delivery>.offset(of: \Delivery.change).unsafelyUnwrapped
        CObserverSink.lentChange(lent).initialize(to: tether_change_t(
            observer: tether_observer_t(id: 0), state: tether_state_t(id: 0), path: nil,
            old_value: OpaquePointer(base + MemoryLayout<Change>.offset(of: \Change.oldValue).unsafelyUnwrapped),
            new_value: OpaquePointer(base + MemoryLayout<Change>.offset(of: \Change.newValue).unsafelyUnwrapped),
            revision: 0, flags: 0, computed: tether_computed_t(id: 0), transaction: nil,
            binding: tether_binding_t(id: 0)))
        lent.storeBytes(of: CObserverSink.lentReady, as: UInt64.self)
    }

    /// `directLentChange`: a word that says whether the shared fields are
    /// written (`lentReady`; the graph starts it at `UInt64.max`), then the
    /// change.
    private static let lentReady: UInt64 = 0

    @inline(__always)
    private static func lentChange(_ lent: UnsafeMutableRawPointer) -> UnsafeMutablePointer<tether_change_t> {
        (lent + MemoryLayout<UInt64>.stride).assumingMemoryBound(to: tether_change_t.self)
    }

    override func runRelease() {
        if released { return }
        released = true
        destroy?(userData)
    }
}

func makeSink(slot: Int, fn: @escaping tether_observer_fn, userData: UnsafeMutableRawPointer?,
              destroy: tether_destroy_fn?, path: JSONPointer?, binding: UInt64 = 0,
              showState: Bool = true) -> ObserverSink {
    CObserverSink(slot: slot, fn: fn, userData: userData, destroy: destroy, path: path,
                  binding: binding, showState: showState)
}

/// The checks every observe function makes before touching its target:
/// out and fn not NULL, known flags, a well-formed pointer. Returns the
/// observed pointer, or nil after reporting the error through `code`.
func observeArguments(_ name: String, _ out: UnsafeMutablePointer<tether_observer_t>?,
                      _ fn: tether_observer_fn?, _ flags: UInt32, _ path: UnsafePointer<CChar>?,
                      _ code: inout Int32) -> JSONPointer? {
    guard out != nil else { code = fail(.invalidArgument, "\(name): out is NULL"); return nil }
    guard fn != nil else { code = fail(.invalidArgument, "\(name): fn is NULL"); return nil }
    let known = UInt32(TETHER_OBSERVE_SYNC | TETHER_OBSERVE_INITIAL | TETHER_OBSERVE_EQUAL)
    guard flags & ~known == 0 else {
        code = fail(.invalidArgument, "\(name): unknown observer flags 0x\(String(flags, radix: 16))")
        return nil
    }
    do { return try pointer(path, nullIsRoot: true) } catch {
        code = fail(TetherError(error.code, "\(name): \(error.message)"))
        return nil
    }
}

@_cdecl("tether_observe")
public func tether_observe(_ s: tether_state_t, _ path: UnsafePointer<CChar>?, _ flags: UInt32,
                           _ fn: tether_observer_fn?, _ userData: UnsafeMutableRawPointer?,
                           _ destroy: tether_destroy_fn?, _ out: UnsafeMutablePointer<tether_observer_t>?) -> Int32 {
    var code: Int32 = 0
    guard let observed = observeArguments("tether_observe", out, fn, flags, path, &code),
          let out, let fn else { return code }
    // On error the sink is dropped unreleased: the caller keeps user_data.
    return call("tether_observe", .state, s.id) { () throws(TetherError) in
        out.pointee = tether_observer_t(id: try Runtimes.observe(state: s.id, path: observed, options: ObserverOptions(rawValue: flags)) {
            makeSink(slot: $0, fn: fn, userData: userData, destroy: destroy, path: observed.isRoot ? nil : observed)
        })
    }
}

@_cdecl("tether_observer_remove")
public func tether_observer_remove(_ o: tether_observer_t) -> Int32 {
    call("tether_observer_remove", .observer, o.id) { () throws(TetherError) in try Runtimes.removeObserver(o.id) }
}
