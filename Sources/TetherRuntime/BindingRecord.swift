import CTether
import TetherCore

/// One step of a projection: a JSON Pointer (members or elements), or an
/// array index, which unlike the pointer "/3" requires an array.
package enum BindingStep {
    case pointer(JSONPointer)
    case index(Int)
}

/// What a binding handle names. Projections are flattened: a projection of
/// a state binding names the state and the joined path directly, so it
/// keeps working after the binding it was made from is freed, and observers
/// of it are ordinary path observers of the state.
package final class BindingRecord {
    enum Source {
        /// $state, its projections, and the target of a transform binding.
        case state(StateID)
        /// Binding.constant: a state no handle outside this record names.
        case constant(StateID)
        /// Binding(get:set:): get is a computed; set is called on writes.
        case custom(DerivedID, CustomSetter)
    }

    let source: Source
    let steps: [BindingStep]
    /// All steps as one pointer inside the source's value.
    let path: JSONPointer
    /// The binding that made its constant's state or custom's computed
    /// frees it; projections of it only borrow it.
    let ownsSource: Bool
    /// tether_binding_bind: the link that carries changes across.
    var transform: TransformLink?
    /// Observers registered through this binding: they end with it.
    var observers: [ObserverID] = []

    init(source: Source, steps: [BindingStep], ownsSource: Bool) {
        self.source = source
        self.steps = steps
        self.ownsSource = ownsSource
        var tokens: [String] = []
        for step in steps {
            switch step {
            case let .pointer(p): tokens += p.tokens
            case let .index(i): tokens.append(String(i))
            }
        }
        self.path = JSONPointer(tokens: tokens)
    }

    /// A projection of this binding by one more step.
    func projected(_ step: BindingStep) -> BindingRecord {
        BindingRecord(source: source, steps: steps + [step], ownsSource: false)
    }

    func sourceIsLive(_ graph: Graph) -> Bool {
        switch source {
        case let .state(s), let .constant(s): return graph.isLive(s)
        case let .custom(d, _): return graph.isLive(d)
        }
    }

    /// The part of the source's value the steps name.
    func part(of root: Value) throws(TetherError) -> Value {
        try BindingRecord.walk(root, steps[...])
    }

    static func walk(_ root: Value, _ steps: ArraySlice<BindingStep>) throws(TetherError) -> Value {
        var value = root
        for step in steps {
            switch step {
            case let .pointer(p):
                value = try value.value(at: p)
            case let .index(i):
                guard case let .array(elements) = value else {
                    throw TetherError(.wrongType, "index projection [\(i)] needs an array, but the value there is \(value.type)")
                }
                guard i < elements.count else {
                    throw TetherError(.outOfRange, "index projection [\(i)] is past the end of an array of \(elements.count)")
                }
                value = elements[i]
            }
        }
        return value
    }

    /// Before a write: every index step must land inside an array (an index
    /// projection replaces an element, never appends or adds a member).
    func checkWritable(into root: Value) throws(TetherError) {
        guard steps.contains(where: { if case .index = $0 { return true } else { return false } }) else { return }
        if case .index = steps.last! {
            _ = try BindingRecord.walk(root, steps[...])
        } else {
            _ = try BindingRecord.walk(root, steps.dropLast())
        }
    }
}

/// The set side of a custom binding, shared by its projections, and the
/// owner of its destroy function. `get` (the computed's body) and `set`
/// share user_data, so destroy waits until neither can run: it runs when
/// the last of these holds ends — the computed's body, the binding, each
/// running call of set (a set that frees its own binding).
package final class CustomSetter {
    let set: tether_binding_set_fn?
    let userData: UnsafeMutableRawPointer?
    private let destroy: tether_destroy_fn?
    private let lock = Lock()
    private var holds = 2

    package init(set: tether_binding_set_fn?, userData: UnsafeMutableRawPointer?, destroy: tether_destroy_fn?) {
        self.set = set
        self.userData = userData
        self.destroy = destroy
    }

    func hold() {
        lock.lock()
        holds += 1
        lock.unlock()
    }

    func release() {
        lock.lock()
        holds -= 1
        let last = holds == 0
        lock.unlock()
        if last { destroy?(userData) }
    }
}
