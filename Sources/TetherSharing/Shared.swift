/// A value kept by tetherd and shared by every process of the machine, in
/// the shape of swift-sharing's `@Shared(.appStorage("key"))`:
///
///     @Shared(.tether("settings")) var settings = Settings()
///     settings.theme = "dark"                  // written to the daemon
///     ChildView(theme: $settings.theme)        // a Binding
///     for await s in _settings.changes { ... } // another process's writes too
///
/// Reads are the daemon's value, kept current by a watch (the default
/// while the daemon has no such state); writes go to the daemon, and a
/// change made elsewhere (C, tetherctl, another Swift program) shows up
/// here. When no daemon answers, the default is used and said to be:
/// `isUsingDefault` is true and one line goes to `SharedDaemon.log`; the
/// value then lives in this process only. Every `@Shared` of one key (same
/// name, address and type) in a process shares one `SharedReference`.
@propertyWrapper
public struct Shared<Value: Codable>: @unchecked Sendable {
    public let reference: SharedReference<Value>

    public init(wrappedValue: Value, _ key: TetherKey<Value>) {
        reference = SharedDaemon.reference(key, default: wrappedValue)
    }

    public var wrappedValue: Value {
        get { reference.value }
        nonmutating set { reference.value = newValue }
    }

    /// `$settings`: a `Binding` of the value; `$settings.member` writes the
    /// whole value with that member changed.
    public var projectedValue: Binding<Value> {
        let reference = self.reference
        return Binding(get: { reference.value }, set: { reference.value = $0 })
    }

    /// No daemon answered: the default is in use, in this process only.
    public var isUsingDefault: Bool { reference.isUsingDefault }

    /// The values as an `AsyncSequence` (see `SharedReference.changes`).
    public var changes: AsyncMapSequence<Changes<Value?>, Value> { reference.changes }
}
