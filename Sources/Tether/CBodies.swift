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

/// The body of a C effect: its function, cleanup and destroy, and the
/// effect's own handle (known once the node exists) to pass to them.
final class CEffectBody: DerivedBody {
    private let fn: tether_effect_fn?
    private let fallible: tether_effect_try_fn?
    private let cleanupFn: tether_cleanup_fn?
    private let destroy: tether_destroy_fn?
    var handle = tether_effect_t(id: 0)
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
        if let fallible {
            // A fallible effect: its return says whether this run failed.
            let before = tether_internal_error_count()
            let code = fallible(handle, userData)
            failure = code == 0 ? nil : callbackFailure(code < 0 ? code : Int32(-1), failuresBefore: before,
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
