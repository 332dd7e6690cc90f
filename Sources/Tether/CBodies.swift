import CTether
import TetherCore
import TetherRuntime

/// The body of a C computed: its compute function and user data (in the
/// base class, called directly by RuntimeGraph.callCompute) and its destroy.
/// One object per computed, no closures.
final class CComputeBody: DerivedBody {
    private let destroy: tether_destroy_fn?
    private var released = false

    init(_ fn: @escaping tether_compute_fn, _ userData: UnsafeMutableRawPointer?, _ destroy: tether_destroy_fn?) {
        self.destroy = destroy
        super.init(computeFunction: fn, userData: userData, isBindingGet: false, release: nil)
    }

    override func runRelease() {
        if released { return }
        released = true
        destroy?(userData)
    }
}

/// The body of a C effect: its function (plain or fallible), cleanup and
/// destroy; the effect's own handle, passed to them, is the base's
/// `ownerHandle`, set once the node exists, before the first run.
final class CEffectBody: DerivedBody {
    private let fn: tether_effect_fn?
    private let fallible: tether_effect_try_fn?
    private let cleanupFn: tether_cleanup_fn?
    private let destroy: tether_destroy_fn?
    private var released = false

    init(_ fn: tether_effect_fn?, fallible: tether_effect_try_fn? = nil, _ cleanup: tether_cleanup_fn?,
         _ userData: UnsafeMutableRawPointer?, _ destroy: tether_destroy_fn?) {
        self.fn = fn
        self.fallible = fallible
        cleanupFn = cleanup
        self.destroy = destroy
        super.init(computeFunction: nil, userData: userData, isBindingGet: false, hasCleanup: cleanup != nil, release: nil)
        reportsToCreator = fallible != nil
    }

    override func runBody(_ revision: UInt64) {
        let handle = tether_effect_t(id: ownerHandle)
        if let fallible {
            // A fallible effect: its return says whether this run failed.
            let before = tether_internal_error_count()
            let code = fallible(handle, userData)
            runFailure = code == 0 ? nil : callbackFailure(code < 0 ? code : Int32(-1), failuresBefore: before,
                                                           what: "its effect callback")
        } else {
            fn?(handle, userData)
        }
    }

    override func runCleanup() { cleanupFn?(userData) }

    override func runRelease() {
        if released { return }
        released = true
        destroy?(userData)
    }
}
