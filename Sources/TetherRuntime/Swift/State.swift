/// A state: storage owned by the runtime, holding a `T` as one of Tether's
/// JSON values (`@State var v` in SwiftUI, `tether_state_t` in C).
///
///     let user = rt.state(User(name: "Ada", age: 36))
///     user.value.age += 1                 // read, modify, write back
///     let name = user.binding(\.name)     // $user.name
///     name.wrappedValue = "Grace"         // writes /name only
///
/// Reads inside a computed or an effect are dependencies of it. Inside a
/// transaction on this thread, reads see the transaction's own writes.
/// A state made by `Runtime.state` is freed when this object goes away;
/// one wrapped with `init(unowned:)` belongs to whoever made it.
public final class State<T: Codable>: @unchecked Sendable {
    /// The `id` of the C `tether_state_t` naming this state: hand
    /// `tether_state_t { .id = handle }` to C code in the same process.
    public let handle: UInt64
    private var owned: Bool
    /// What must live as long as this state: a remote state's connection.
    private let keeps: AnyObject?

    init(owning handle: UInt64) {
        self.handle = handle
        owned = true
        keeps = nil
    }

    /// A remote state: `remote` owns it, and lives while this does.
    init(mirroredBy remote: AnyObject, handle: UInt64) {
        self.handle = handle
        owned = false
        keeps = remote
    }

    /// Wraps a state made elsewhere (by C, or another `State` of another
    /// Swift type over the same value); this object does not free it.
    public init(unowned handle: UInt64) {
        self.handle = handle
        owned = false
        keeps = nil
    }

    deinit {
        if owned { try? Runtimes.freeState(handle) }
    }

    /// Hands the state's freeing to the caller: this object no longer
    /// frees it. For the daemon, which keeps a million states by handle
    /// (an object per state was 48 bytes of each).
    package func relinquish() -> UInt64 {
        owned = false
        return handle
    }

    /// Frees the state now: its observers end, its handle goes stale.
    public func free() throws(TetherError) {
        try Runtimes.freeState(handle)
    }

    /// The value. Reading a freed state, or one that holds something that
    /// does not decode as `T`, is a programmer error and traps with the
    /// reason; `get()` reports it instead. A refused write goes to
    /// `TetherErrors.handler`; `set(_:)` throws it instead.
    public var value: T {
        get {
            do { return try get() } catch { fatalError("tether: reading state \(hexHandle(handle)): \(error.message)") }
        }
        set {
            do { try set(newValue) } catch { TetherErrors.report(error) }
        }
    }

    public func get() throws(TetherError) -> T {
        if Coding.isScalar(T.self),
           let scalar = try Coding.decodeScalar(T.self, { () throws(TetherError) in try Runtimes.readScalar(state: handle) }) {
            return scalar
        }
        return try Coding.decode(T.self, from: Runtimes.readState(handle))
    }

    /// Writes the whole value; SYNC observers have run when it returns.
    public func set(_ newValue: T) throws(TetherError) {
        try Runtimes.writeState(handle, .set(Coding.encode(newValue)))
    }

    /// `set`, saying whether the value changed (nil: staged by this
    /// thread's open transaction, decided at its commit). For the daemon,
    /// which answers every Set with it.
    package func setReportingChange(_ newValue: T) throws(TetherError) -> Bool? {
        try Runtimes.writeStateReportingChange(handle, .set(Coding.encode(newValue)))
    }

    /// The state's revision: the runtime revision of its last change.
    public var revision: UInt64 {
        get throws(TetherError) { try Runtimes.stateRevision(handle) }
    }

    /// The part at a JSON Pointer, decoded as `V`. Read in a computed or
    /// effect, it is a dependency on that part only: writes to other parts
    /// of the state do not re-run the reader.
    public func get<V: Decodable>(_ type: V.Type = V.self, at path: JSONPointer) throws(TetherError) -> V {
        try Coding.decode(V.self, from: Runtimes.readState(handle, at: path))
    }

    /// Writes the part at a JSON Pointer (creating a missing last member).
    public func set<V: Encodable>(_ newValue: V, at path: JSONPointer) throws(TetherError) {
        try Runtimes.writeState(handle, .put(Coding.encode(newValue), at: path))
    }

    /// Removes the member or element at a JSON Pointer.
    public func remove(at path: JSONPointer) throws(TetherError) {
        try Runtimes.writeState(handle, .remove(at: path))
    }

    /// `$state`: a binding of the whole value.
    public var binding: Binding<T> {
        Binding(state: handle, path: .root)
    }

    /// `$state.member`: a binding of the part a key path names. Stored
    /// properties of structs map to the JSON Pointer of their member, so
    /// writes through it touch only that member and wake only its readers;
    /// any other key path (computed, through a class) reads and writes the
    /// whole value.
    public func binding<V: Codable>(_ keyPath: WritableKeyPath<T, V>) -> Binding<V> {
        binding[dynamicMember: keyPath]
    }

    /// Read-only limits the runtime enforces for every writer, C or Swift:
    /// nil clears them. `validate` runs as a callback (never concurrently
    /// with others) and returns nil to accept or the reason to refuse.
    /// `name` is how error messages name the state.
    public func describe(readOnly: Bool = false, range: ClosedRange<Double>? = nil, name: String? = nil,
                         validate: (@Sendable (T) -> String?)? = nil) throws(TetherError) {
        var validator: Validator?
        if let validate {
            validator = Validator(check: { _, proposed, _ in
                do { return validate(try Coding.decode(T.self, from: proposed)) } catch {
                    return "the value does not decode as \(T.self): \(TetherError.from(error).message)"
                }
            })
        }
        try Runtimes.describe(handle, StateDescriptor(readOnly: readOnly, range: range, validator: validator, name: name))
    }
}

extension Runtime {
    /// A new state holding `initial` (`@State var v = initial`). With
    /// `lockType`, writes of another JSON type are refused. Traps if
    /// `initial` cannot be encoded or the runtime was freed; `makeState`
    /// reports those instead.
    public func state<T: Codable>(_ initial: T, lockType: Bool = false) -> State<T> {
        do { return try makeState(initial, lockType: lockType) } catch {
            fatalError("tether: making a state: \(error.message)")
        }
    }

    public func makeState<T: Codable>(_ initial: T, lockType: Bool = false) throws(TetherError) -> State<T> {
        State(owning: try Runtimes.newState(in: handle, Coding.encode(initial), typeLocked: lockType))
    }
}
