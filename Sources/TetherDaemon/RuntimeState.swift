import TetherCore
import TetherRuntime

/// A state of the daemon's runtime, by its handle: what `State<Value>`
/// does for the daemon, without an object a state (48 bytes each of a
/// million, `benchmarks/scale`). It owns nothing: a record frees its
/// state when it goes (`StateRecord`'s deinit), and a state made for a
/// moment is a `State<Value>` until a record adopts it.
struct RuntimeState {
    let handle: UInt64

    func get() throws(TetherError) -> Value {
        try Runtimes.readState(handle)
    }

    func set(_ value: Value) throws(TetherError) {
        try Runtimes.writeState(handle, .set(value))
    }

    func set(_ value: Value, at path: JSONPointer) throws(TetherError) {
        try Runtimes.writeState(handle, .put(value, at: path))
    }

    func remove(at path: JSONPointer) throws(TetherError) {
        try Runtimes.writeState(handle, .remove(at: path))
    }

    /// Whether the value changed (nil: staged by this thread's open
    /// transaction, decided at its commit).
    func setReportingChange(_ value: Value) throws(TetherError) -> Bool? {
        try Runtimes.writeStateReportingChange(handle, .set(value))
    }

    /// The runtime revision of the state's last change.
    var revision: UInt64 {
        get throws(TetherError) { try Runtimes.stateRevision(handle) }
    }

    func free() throws(TetherError) {
        try Runtimes.freeState(handle)
    }

    func describe(readOnly: Bool, range: ClosedRange<Double>?, name: String?) throws(TetherError) {
        try Runtimes.describe(handle, StateDescriptor(readOnly: readOnly, range: range, validator: nil, name: name))
    }
}
