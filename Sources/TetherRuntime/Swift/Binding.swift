/// SwiftUI's `Binding`: a two-way reference to a value that lives
/// elsewhere. Three kinds share the one type:
///
/// - a part of a state (`state.binding`, `state.binding(\.name)`,
///   `binding.name`, `binding[3]`): reads and writes go to that part, and
///   observers of it wake only for changes there;
/// - custom (`Binding(get:set:)`), whose closures decide;
/// - constant (`.constant(x)`), whose writes are refused.
///
/// Also a property wrapper, as in SwiftUI: `@Binding var name: String`
/// in a type that is handed `$user.name`.
@propertyWrapper
@dynamicMemberLookup
public struct Binding<V: Codable>: @unchecked Sendable {
    enum Storage {
        case part(state: UInt64, path: JSONPointer)
        case custom(get: @Sendable () -> V, set: @Sendable (V) -> Void)
        case constant(V)
    }
    let storage: Storage

    init(state: UInt64, path: JSONPointer) {
        storage = .part(state: state, path: path)
    }

    /// `Binding(get:set:)`: reads call `get`, writes call `set`.
    public init(get: @escaping @Sendable () -> V, set: @escaping @Sendable (V) -> Void) {
        storage = .custom(get: get, set: set)
    }

    /// `@Binding var x: V` initialized from `$something`.
    public init(projectedValue: Binding<V>) {
        self = projectedValue
    }

    /// A binding that always reads `value` and refuses writes.
    public static func constant(_ value: V) -> Binding<V> {
        Binding(storage: .constant(value))
    }

    private init(storage: Storage) {
        self.storage = storage
    }

    /// The value; a refused write goes to `TetherErrors.handler` (use
    /// `set(_:)` to get the error).
    public var wrappedValue: V {
        get {
            do { return try get() } catch { fatalError("tether: reading a binding: \(error.message)") }
        }
        nonmutating set {
            do { try set(newValue) } catch { TetherErrors.report(error) }
        }
    }

    public var projectedValue: Binding<V> { self }

    public func get() throws(TetherError) -> V {
        switch storage {
        case let .part(state, path):
            if path.isRoot {
                if Coding.isScalar(V.self),
                   let scalar = try Coding.decodeScalar(V.self, { () throws(TetherError) in try Runtimes.readScalar(state: state) }) {
                    return scalar
                }
                return try Coding.decode(V.self, from: Runtimes.readState(state))
            }
            let part: Value
            do throws(TetherError) {
                part = try Runtimes.readState(state, at: path)  // a dependency on this part only
            } catch where error.code == .notFound {
                // An optional member that encoded as absent (synthesized
                // Codable omits nil) reads as nil; anything else is an error.
                if let absent = try? Coding.decode(V.self, from: .null) { return absent }
                throw error
            }
            return try Coding.decode(V.self, from: part)
        case let .custom(get, _):
            return get()
        case let .constant(value):
            return value
        }
    }

    public func set(_ newValue: V) throws(TetherError) {
        switch storage {
        case let .part(state, path):
            let value = try Coding.encode(newValue)
            try Runtimes.writeState(state, path.isRoot ? .set(value) : .put(value, at: path))
        case let .custom(_, set):
            set(newValue)
        case .constant:
            throw TetherError(.readOnly, "a constant binding cannot be written")
        }
    }

    /// `$user.name`: the binding of a member. A stored property of a struct
    /// becomes a path into the same state; other key paths go through
    /// this binding's whole value.
    public subscript<W: Codable>(dynamicMember keyPath: WritableKeyPath<V, W>) -> Binding<W> {
        if case let .part(state, path) = storage, let member = jsonPointer(for: keyPath) {
            return Binding<W>(state: state, path: JSONPointer(tokens: path.tokens + member.tokens))
        }
        let whole = self
        return Binding<W>(get: { whole.wrappedValue[keyPath: keyPath] },
                          set: { newValue in
                              var value = whole.wrappedValue
                              value[keyPath: keyPath] = newValue
                              whole.wrappedValue = value
                          })
    }

    /// The JSON Pointer this binding names inside its state, or nil for a
    /// custom or constant binding.
    public var path: JSONPointer? {
        if case let .part(_, path) = storage { return path }
        return nil
    }

    /// The state this binding names a part of, or nil for a custom or
    /// constant binding.
    public var stateHandle: UInt64? {
        if case let .part(state, _) = storage { return state }
        return nil
    }
}

extension Binding {
    /// `$list[3]`: the binding of one element (which must exist when read
    /// or written: an index binding never appends).
    public subscript<Element: Codable>(index: Int) -> Binding<Element> where V == [Element] {
        if case let .part(state, path) = storage {
            return Binding<Element>(state: state, path: JSONPointer(tokens: path.tokens + [String(index)]))
        }
        let whole = self
        return Binding<Element>(get: { whole.wrappedValue[index] },
                                set: { newValue in
                                    var value = whole.wrappedValue
                                    value[index] = newValue
                                    whole.wrappedValue = value
                                })
    }
}
