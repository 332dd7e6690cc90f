import CTether

/// One call of an observer: the part it watches before and after, as `V`.
public struct ValueChange<V: Decodable> {
    /// Before the change (nil when the part did not exist; for the first
    /// call of an `.initial` observer, the current value, as `new`).
    public let old: V?
    /// After the change (nil when the part was removed).
    public let new: V?
    /// The runtime revision of the (last) write this call reports.
    public let revision: UInt64
    /// The first call of an `.initial` observer, with the current value.
    public let isInitial: Bool
    /// The transaction that caused the change (nil for a plain write).
    public let transaction: TransactionInfo?
}

/// A transaction's metadata as callbacks see it.
public struct TransactionInfo: Sendable, Equatable {
    public var tag: String?
    public var origin: UInt64

    public init(tag: String? = nil, origin: UInt64 = 0) {
        self.tag = tag
        self.origin = origin
    }

    init?(_ cause: Cause) {
        guard let info = TransactionMeta.info(of: cause) else { return nil }
        tag = info.pointee.tag.map { String(cString: $0) }
        origin = info.pointee.origin
    }
}

/// How an observer is called.
public struct ObserveOptions: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Inside the write, before it returns (default: on the loop thread,
    /// coalesced per loop turn: the first old value, the last new one).
    public static let sync = ObserveOptions(rawValue: ObserverOptions.sync.rawValue)
    /// Once right away with the current value (`isInitial`).
    public static let initial = ObserveOptions(rawValue: ObserverOptions.initial.rawValue)
    /// Even when a write leaves the part equal.
    public static let equal = ObserveOptions(rawValue: ObserverOptions.equal.rawValue)
}

/// A registered observer. It is removed when this object goes away (keep
/// it for as long as you want the calls, as with Combine's
/// `AnyCancellable`) or by `cancel()`; its closure is released then, or
/// after its running call returns.
public final class Observer: @unchecked Sendable {
    /// The `id` of the C `tether_observer_t` naming it.
    public let handle: UInt64

    init(handle: UInt64) {
        self.handle = handle
    }

    deinit { cancel() }

    /// Removes the observer. Idempotent; safe from inside any callback.
    public func cancel() {
        try? Runtimes.removeObserver(handle)
    }
}

/// Calls a Swift closure with decoded values. A value that does not decode
/// as `V` reaches the handler as nil and is reported to `TetherErrors`.
final class ClosureSink<V: Decodable>: ObserverSink {
    private let handler: @Sendable (ValueChange<V>) -> Void

    init(_ handler: @escaping @Sendable (ValueChange<V>) -> Void) {
        self.handler = handler
        super.init()
    }

    override func deliver(_ change: borrowing TetherCore.Change) {
        handler(ValueChange<V>(old: decoded(change.oldValue), new: decoded(change.newValue), revision: change.revision,
                          isInitial: change.isInitial, transaction: TransactionInfo(change.cause)))
    }

    private func decoded(_ value: Value?) -> V? {
        guard let value else { return nil }
        do { return try Coding.decode(V.self, from: value) } catch {
            TetherErrors.report(TetherError(error.code, "an observer's value does not decode as \(V.self): \(error.message)"))
            return nil
        }
    }
}

extension State {
    /// Calls `handler` when the value changes (`onChange(of:)`, with old
    /// and new values and in registration order).
    public func observe(_ options: ObserveOptions = [], _ handler: @escaping @Sendable (ValueChange<T>) -> Void) -> Observer {
        binding.observe(options, handler)
    }

    /// Calls `handler` when the member a key path names changes; changes
    /// elsewhere in the value do not wake it.
    public func observe<V: Codable>(_ keyPath: WritableKeyPath<T, V>, _ options: ObserveOptions = [],
                                    _ handler: @escaping @Sendable (ValueChange<V>) -> Void) -> Observer {
        binding(keyPath).observe(options, handler)
    }
}

extension Binding {
    /// Calls `handler` when the part this binding names changes. A custom
    /// binding is observed through what its `get` reads (an effect-like
    /// tracking of it); a constant one never changes.
    public func observe(_ options: ObserveOptions = [], _ handler: @escaping @Sendable (ValueChange<V>) -> Void) -> Observer {
        do { return try makeObserver(options, handler) } catch {
            fatalError("tether: observing: \(error.message)")
        }
    }

    public func makeObserver(_ options: ObserveOptions = [],
                             _ handler: @escaping @Sendable (ValueChange<V>) -> Void) throws(TetherError) -> Observer {
        guard case let .part(state, path) = storage else {
            throw TetherError(.invalidArgument, "only a binding of a state's part can be observed; observe a computed of a custom binding instead")
        }
        let id = try Runtimes.observe(state: state, path: path, options: ObserverOptions(rawValue: options.rawValue)) { _ in
            ClosureSink<V>(handler)
        }
        return Observer(handle: id)
    }
}
