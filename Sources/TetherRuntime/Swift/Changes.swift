/// A state's (a binding's, a computed's) values as an `AsyncSequence`:
///
///     for await profile in state.changes { render(profile) }
///     for await name in state.changes(\.name) { print(name) }
///
/// Each iteration registers an observer of its own. The first element is
/// the current value; then one element per change, as observers see it
/// (coalesced per loop turn). Buffering: the latest value only
/// (`AsyncStream`'s `.bufferingNewest(1)`): a consumer slower than the
/// writers skips to the newest value and never sees an unbounded queue,
/// which is what a view wants (render what is, not every step on the way).
/// Use `observe` to see every change with its old value and transaction.
///
/// The sequence ends (the `for await` loop exits) when the state,
/// computed or runtime is freed (a remote state also when its `Remote`
/// is), and when the iterating task is cancelled: the observer is then
/// removed. A part that is removed, or a value that does not decode as
/// `V`, is skipped (the latter reported to `TetherErrors`), except that a
/// removed part reads as nil when `V` is optional.
public struct Changes<V: Codable>: AsyncSequence, @unchecked Sendable {
    public typealias Element = V
    public typealias AsyncIterator = AsyncStream<V>.Iterator

    /// Registers an observer feeding `sink`; returns its handle.
    let register: (ObserverSink) throws(TetherError) -> UInt64

    public func makeAsyncIterator() -> AsyncStream<V>.Iterator {
        let (stream, continuation) = AsyncStream<V>.makeStream(bufferingPolicy: .bufferingNewest(1))
        // The observer's release runs when it is removed for any reason
        // (its state, computed or runtime freed; cancellation below).
        let sink = ObserverSink(call: { change in
            if let value = Changes.decoded(change.newValue) { continuation.yield(value) }
        }, release: { continuation.finish() })
        do {
            let observer = try register(sink)
            continuation.onTermination = { _ in try? Runtimes.removeObserver(observer) }
        } catch {
            // A freed state's sequence is simply over; anything else is a
            // mistake worth a line.
            if error.code != .stale { TetherErrors.report(error) }
            continuation.finish()
        }
        return stream.makeAsyncIterator()
    }

    private static func decoded(_ value: Value?) -> V? {
        do { return try Coding.decode(V.self, from: value ?? .null) } catch {
            if value != nil {
                TetherErrors.report(TetherError(error.code, "a changed value does not decode as \(V.self): \(error.message)"))
            }
            return nil
        }
    }
}

extension Binding {
    /// The values of the part this binding names (`Changes`). A custom or
    /// constant binding has none: its sequence ends at once, reported to
    /// `TetherErrors` (observe a computed of it instead).
    public var changes: Changes<V> {
        let storage = self.storage
        return Changes { (sink) throws(TetherError) -> UInt64 in
            guard case let .part(state, path) = storage else {
                throw TetherError(.invalidArgument, "only a binding of a state's part has changes; use the changes of a computed that reads it")
            }
            return try Runtimes.observe(state: state, path: path, options: .initial) { _ in sink }
        }
    }
}

extension State {
    /// The state's values (`Changes`).
    public var changes: Changes<T> { binding.changes }

    /// The values of the member a key path names; changes elsewhere in the
    /// state do not wake it.
    public func changes<V: Codable>(_ keyPath: WritableKeyPath<T, V>) -> Changes<V> {
        binding(keyPath).changes
    }
}

extension Computed {
    /// The computed's results (`Changes`): evaluated first, then one
    /// element per changed result.
    public var changes: Changes<T> {
        let handle = self.handle
        return Changes { (sink) throws(TetherError) -> UInt64 in
            try Runtimes.observe(computed: handle, path: .root, options: .initial) { _ in sink }
        }
    }
}
