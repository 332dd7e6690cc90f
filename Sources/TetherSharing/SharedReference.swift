import Observation

/// What a `@Shared(.tether(...))` property holds: the daemon's state as a
/// remote state of `SharedDaemon.runtime`, or, when no daemon answered,
/// a state of this process starting from the default.
///
/// Observable: reading `value` inside `withObservationTracking` tracks it,
/// and any change, made here or by another process, calls `onChange`.
public final class SharedReference<Value: Codable>: Observable, @unchecked Sendable {
    public let key: TetherKey<Value>
    /// The value used while the daemon has no such state, and when no
    /// daemon answers.
    public let defaultValue: Value
    /// The state behind the value (null while the daemon has none).
    public let state: State<Value?>
    /// Why the default is in use, kept in this process only: no daemon
    /// answered when this reference was made (nil: connected). A new
    /// `@Shared` of the key connects again.
    public let unavailable: TetherError?
    /// The connection (nil when no daemon answered).
    public let remote: Remote?
    private let registrar = ObservationRegistrar()
    private var observer: Observer?

    init(key: TetherKey<Value>, default defaultValue: Value) {
        self.key = key
        self.defaultValue = defaultValue
        var made: State<Value?>
        var unavailable: TetherError?
        var remote: Remote?
        do throws(TetherError) {
            let connection = try SharedDaemon.remote(key.address)
            made = try connection.state(key.name, as: Value?.self)
            remote = connection
        } catch {
            unavailable = error
            made = SharedDaemon.runtime.state(Optional(defaultValue))
            SharedDaemon.log("tether: @Shared(.tether(\"\(key.name)\")): no tetherd answers (\(error.message)); using the default value, kept in this process only")
        }
        state = made
        self.unavailable = unavailable
        self.remote = remote
        observer = made.observe { [weak self] _ in self?.changed() }
    }

    /// No daemon answered: the value is this process's own.
    public var isUsingDefault: Bool { unavailable != nil }

    private func changed() {
        registrar.withMutation(of: self, keyPath: \.value) {}
    }

    /// The daemon's value (the default while it has none, or while what
    /// it holds does not decode as `Value`: another program wrote another
    /// shape; `state.get()` says why); a write goes
    /// to the daemon and returns once it committed it (a refusal goes to
    /// `TetherErrors.handler`; `set(_:)` throws it).
    public var value: Value {
        get {
            registrar.access(self, keyPath: \.value)
            return (try? state.get()) ?? defaultValue
        }
        set { state.value = newValue }
    }

    public func set(_ newValue: Value) throws(TetherError) {
        try state.set(newValue)
    }

    /// Waits until the value shows what the daemon held when this was
    /// called, what other processes wrote before it included
    /// (`Remote.sync`); nothing to wait for without a daemon.
    public func sync() throws(TetherError) {
        try remote?.sync()
    }

    /// The values as an `AsyncSequence` (`Changes`: the current one first,
    /// then the latest after each change; the default while the daemon
    /// has none).
    public var changes: AsyncMapSequence<Changes<Value?>, Value> {
        let fallback = defaultValue
        return state.changes.map { $0 ?? fallback }
    }
}
