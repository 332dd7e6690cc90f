/// `@State` for Tether: a property whose storage is a state of a runtime.
///
///     struct Counter {
///         @TetherState(in: rt) var count = 0
///         func tap() { count += 1 }          // no `mutating`: the storage is the runtime's
///     }
///     let view = counter.$count.observe { print($0.new ?? 0) }
///
/// `$count` is the `Binding<Int>` to hand to a child, `_count.state` the
/// state itself (for computeds, effects and observers).
@propertyWrapper
public struct TetherState<T: Codable>: @unchecked Sendable {
    public let state: State<T>

    public init(wrappedValue: T, in runtime: Runtime) {
        state = runtime.state(wrappedValue)
    }

    public var wrappedValue: T {
        get { state.value }
        nonmutating set { state.value = newValue }
    }

    public var projectedValue: Binding<T> { state.binding }
}
