import Observation
@_exported import TetherRuntime

/// A state as Swift's Observation sees it: reading `value` inside
/// `withObservationTracking` (or a SwiftUI-style view built on
/// Observation) tracks it, and any change of the state, whoever made it
/// (this program, C code in the process, another process through tetherd
/// for a remote state), calls the tracker's `onChange`.
///
///     let model = profile.observable
///     withObservationTracking { render(model.value) } onChange: { scheduleRender() }
///
/// Observation's trackers fire once (re-register in `onChange`, as with
/// any `@Observable` type). `onChange` runs on the runtime's loop thread,
/// after the change is applied (Observation's other types call it before:
/// reading inside it here already sees the new value).
public final class ObservableState<T: Codable>: Observable, @unchecked Sendable {
    public let state: State<T>
    private let registrar = ObservationRegistrar()
    private var observer: Observer?

    public init(_ state: State<T>) {
        self.state = state
        // Weak: the observer lives as long as this object, not the other way.
        observer = state.observe { [weak self] _ in self?.changed() }
    }

    private func changed() {
        registrar.withMutation(of: self, keyPath: \.value) {}
    }

    /// The state's value; a read is an Observation access, a write goes
    /// to the state (observers, computeds and trackers then see it).
    public var value: T {
        get {
            registrar.access(self, keyPath: \.value)
            return state.value
        }
        set { state.value = newValue }
    }
}

extension State {
    /// This state as an `Observable` object (`ObservableState`).
    public var observable: ObservableState<T> { ObservableState(self) }
}
