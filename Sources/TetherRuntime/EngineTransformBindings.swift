import CTether
import TetherCore

// Transform bindings (tether_binding_bind): GLib's GBinding for states. Two SYNC observers (one
// per direction) carry changes across through the transforms; the binding
// handle is a binding of the target part.

/// The state of one tether_binding_bind. Its wave and echo fields are only
/// touched by its observers' calls (callbacks never run concurrently) and
/// before they exist; `ended`, `observers` and `alive` under the runtime lock.
final class TransformLink {
    let slot: Int
    let source: StateID, sourcePath: JSONPointer
    let target: StateID, targetPath: JSONPointer
    let transformTo: tether_transform_fn?, transformFrom: tether_transform_fn?
    let invert: Bool
    let userData: UnsafeMutableRawPointer?
    let destroy: tether_destroy_fn?

    /// The wave (original write) each direction last carried: at most once
    /// per direction per wave, so rings settle.
    var forwardWave: UInt64 = 0
    var backwardWave: UInt64 = 0
    /// Revisions of our own writes to each side: their changes are echoes,
    /// never carried back.
    var ownTargetWrite: UInt64 = 0
    var ownSourceWrite: UInt64 = 0

    var observers: [ObserverID] = []
    /// The binding handle: it goes stale when the link ends.
    var handle: UInt64 = 0
    let bidirectional: Bool
    /// Observer sinks not yet released; destroy runs when the last one is.
    var alive = 0
    var ended = false
    /// Set when bind fails after registering: releases must not call destroy.
    var abandoned = false

    init(slot: Int, source: StateID, sourcePath: JSONPointer, target: StateID, targetPath: JSONPointer,
         to: tether_transform_fn?, from: tether_transform_fn?, invert: Bool, bidirectional: Bool,
         userData: UnsafeMutableRawPointer?, destroy: tether_destroy_fn?) {
        self.slot = slot
        self.bidirectional = bidirectional
        self.source = source
        self.sourcePath = sourcePath
        self.target = target
        self.targetPath = targetPath
        self.transformTo = to
        self.transformFrom = from
        self.invert = invert
        self.userData = userData
        self.destroy = destroy
    }

    /// Applies a transform (or the identity, or the boolean inversion).
    func transform(_ fn: tether_transform_fn?, _ value: Value) -> Result<Value, TetherError> {
        if invert {
            guard case let .bool(b) = value else {
                return .failure(TetherError(.wrongType, "TETHER_BIND_INVERT_BOOLEAN needs bools, found \(value.type)"))
            }
            return .success(.bool(!b))
        }
        guard let fn else { return .success(value) }
        var input = value
        var output = Value.null
        let failuresBefore = tether_internal_error_count()
        let code = withUnsafeMutablePointer(to: &input) { from in
            withUnsafeMutablePointer(to: &output) { to in fn(OpaquePointer(from), OpaquePointer(to), userData) }
        }
        if code == 0 { return .success(output) }
        if code > 0 { return .failure(TetherError(.rejected, "the transform declined the value")) }
        let why = tether_internal_error_count() != failuresBefore
            ? String(cString: tether_last_error()) : String(cString: tether_strerror(code))
        return .failure(TetherError(ErrorCode(rawValue: code) ?? .invalidArgument, "the transform returned \(code): \(why)"))
    }

    /// Writes the carried value to one side through the ordinary write path
    /// (validators, observers, the cause of the change that led here).
    /// Returns the revision the write gave that state.
    func write(_ state: StateID, _ path: JSONPointer, _ value: Value) -> Result<UInt64, TetherError> {
        guard let runtime = RuntimeTable.acquire(HandleCodec.state(slot, state), .state) else {
            return .failure(TetherError(.stale, "the runtime was freed"))
        }
        switch runtime.write(state, .put(value, at: path), wantRevision: true) {
        case let .done(revision): return .success(revision)
        case .staged: return .success(0)
        case let .failed(error): return .failure(error)
        }
    }

    /// One direction's observer call: carry the change across unless it is
    /// our own echo or this direction already carried this wave.
    func carry(_ change: borrowing Change, forward: Bool) {
        if !forward && !bidirectional { return }  // that observer only watches for the target's end
        if change.revision == (forward ? ownSourceWrite : ownTargetWrite) { return }
        let wave = change.cause.wave
        if wave == (forward ? forwardWave : backwardWave) { return }
        if forward { forwardWave = wave } else { backwardWave = wave }
        guard let value = change.newValue,
              case let .success(carried) = transform(forward ? transformTo : transformFrom, value) else { return }
        let written = forward ? write(target, targetPath, carried) : write(source, sourcePath, carried)
        if case let .success(revision) = written {
            if forward { ownTargetWrite = revision } else { ownSourceWrite = revision }
        }
    }

    /// The release of one of the link's observers (its state was freed, or
    /// the binding was). The first ends the link and removes the other
    /// observer; the last calls destroy.
    func observerReleased(_ runtimeID: UInt64) {
        var sinks: [ObserverSink] = []
        var last = false
        if let runtime = RuntimeTable.acquire(runtimeID, .runtime) {
            ended = true
            var others = observers
            observers = []
            let h = HandleCodec.decode(handle)
            // The handle goes stale, and observers made through it end.
            if let record = runtime.bindings.remove(h.index, h.generation) { others += record.observers }
            // Removed here, not through tether_observer_remove: a stale one
            // is skipped without touching the caller's tether_last_error.
            for o in others {
                if let sink = try? runtime.graph.removeObserver(o) { sinks.append(sink) }
            }
            alive -= 1
            last = alive == 0
            runtime.lock.unlock()
        } else {
            // Engine teardown: one thread releases everything in turn.
            ended = true
            alive -= 1
            last = alive == 0
        }
        for sink in sinks { sink.runRelease() }
        if last && !abandoned { destroy?(userData) }
    }
}

extension Runtimes {
    /// Binds the part `sourcePath` of `source` to the part `targetPath` of
    /// `target` through the transforms (GBinding): SYNC observers carry each
    /// change across, at most once per direction per wave. The handle is a
    /// binding of the target part; it goes stale when either state is freed.
    package static func bind(source: tether_state_t, sourcePath: JSONPointer, target: tether_state_t, targetPath: JSONPointer,
                             transformTo: tether_transform_fn?, transformFrom: tether_transform_fn?,
                             invert: Bool, bidirectional: Bool, syncCreate: Bool,
                             userData: UnsafeMutableRawPointer?, destroy: tether_destroy_fn?) throws(TetherError) -> UInt64 {
    let s = HandleCodec.decode(source.id), t = HandleCodec.decode(target.id)
    guard s.kind == HandleKind.state.rawValue, t.kind == HandleKind.state.rawValue else {
        throw staleError(.state, s.kind == HandleKind.state.rawValue ? target.id : source.id)
    }
    guard s.slot == t.slot else {
        throw TetherError(.invalidArgument, "the two states belong to different runtimes")
    }
    let sourceID = StateID(index: s.index, generation: s.generation)
    let targetID = StateID(index: t.index, generation: t.generation)
    if sourceID == targetID && (sourcePath.overlaps(targetPath)) {
        throw TetherError(.invalidArgument, "the source part and the target part overlap (\"\(sourcePath)\" and \"\(targetPath)\" of one state)")
    }
    let runtime = try Runtimes.acquire(source.id, .state)
    guard runtime.graph.isLive(sourceID) else { runtime.lock.unlock(); throw staleError(.state, source.id) }
    guard runtime.graph.isLive(targetID) else { runtime.lock.unlock(); throw staleError(.state, target.id) }

    let link = TransformLink(slot: runtime.slotIndex, source: sourceID, sourcePath: sourcePath,
                             target: targetID, targetPath: targetPath, to: transformTo, from: transformFrom,
                             invert: invert, bidirectional: bidirectional,
                             userData: userData, destroy: destroy)
    let record = BindingRecord(source: .state(targetID), steps: targetPath.isRoot ? [] : [.pointer(targetPath)],
                               ownsSource: false)
    record.transform = link
    let generation = runtime.graph.takeGeneration()
    guard let index = runtime.bindings.insert(record, generation: generation) else {
        runtime.lock.unlock()
        throw TetherError(.noMemory, "too many live bindings (limit \(Graph.maxNodes))")
    }
    let handle = HandleCodec.encode(slot: runtime.slotIndex, kind: .binding, index: index, generation: generation)
    link.handle = handle
    let runtimeID = runtime.id
    // The observers come first, so no change made while we sync is missed.
    // The target is observed even one-way: its observer's end (the target
    // freed) ends the binding.
    for forward in [true, false] {
        let sink = ObserverSink(call: { change in link.carry(change, forward: forward) },
                                release: { link.observerReleased(runtimeID) })
        do {
            let id = try runtime.graph.observe(forward ? sourceID : targetID, path: forward ? sourcePath : targetPath,
                                               options: .sync, sink: sink)
            link.observers.append(id)
            link.alive += 1
        } catch {
            runtime.lock.unlock()
            throw abandon(link, handle, error)
        }
    }
    if syncCreate {
        let cause = runtime.writeCause(runtime.threadContext())
        let outcome: Result<UInt64, TetherError>?
        let start: Value
        do { start = try runtime.visibleValue(sourceID, tracked: false).value(at: sourcePath) } catch {
            runtime.lock.unlock()
            throw abandon(link, handle, TetherError(error.code, "reading the source: \(error.message)"))
        }
        outcome = runtime.callOut(cause) { () -> Result<UInt64, TetherError> in
            switch link.transform(transformTo, start) {
            case let .failure(error): return .failure(error)
            case let .success(carried):
                let written = link.write(targetID, targetPath, carried)
                // Before the target's observers run (after this returns).
                if case let .success(revision) = written { link.ownTargetWrite = revision }
                return written
            }
        }
        switch outcome {
        case nil:
            throw abandon(link, handle, TetherError(.outOfRange, "the transform could not run (runtime freed, or callbacks nested too deep)"))
        case let .failure(error)?:
            throw abandon(link, handle, TetherError(error.code, "syncing the target: \(error.message)"))
        case .success?:
            break
        }
        let again = try Runtimes.acquire(source.id, .state)
        precondition(again === runtime)
    }
    runtime.adopt(handle)
    runtime.lock.unlock()
    return handle
}

/// Undoes a failed bind: the record and the observers go, destroy does not
/// run. Returns the error to throw.
private static func abandon(_ link: TransformLink, _ handle: UInt64, _ error: TetherError) -> TetherError {
    link.abandoned = true
    let h = HandleCodec.decode(handle)
    var sinks: [ObserverSink] = []
    if let runtime = RuntimeTable.acquire(handle, .binding) {
        _ = runtime.bindings.remove(h.index, h.generation)
        for o in link.observers {
            if let sink = try? runtime.graph.removeObserver(o) { sinks.append(sink) }
        }
        link.observers = []
        runtime.lock.unlock()
    }
    for sink in sinks { sink.runRelease() }
    return error
}
}
