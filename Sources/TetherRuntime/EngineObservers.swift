import TetherCore

// Observers of states and computeds. The sink is the caller's adapter (a C
// function and its user data, or a Swift closure): the engine only keeps it
// and calls it, on the loop thread or (SYNC) inside the write.

extension Runtimes {
    /// Observes the state `s` at `path`. `makeSink` gets the engine's slot
    /// (for the handles a sink reports). On error the sink is dropped
    /// unreleased: the caller keeps what it gave.
    package static func observe(state s: UInt64, path: JSONPointer, options: ObserverOptions,
                                makeSink: (Int) -> ObserverSink) throws(TetherError) -> UInt64 {
        let engine = try acquire(s, .state)
        let handle: UInt64
        do {
            let id = try engine.graph.observe(stateID(s), path: path, options: options,
                                              sink: makeSink(engine.slotIndex))
            handle = HandleCodec.observer(engine.slotIndex, id)
        } catch {
            engine.lock.unlock()
            throw error
        }
        engine.adopt(handle)
        engine.deliverAfterChange()  // an INITIAL SYNC call runs before we return
        return handle
    }

    /// Observes the computed `c` at `path` (evaluating it first, so the
    /// observer starts from its current value).
    package static func observe(computed c: UInt64, path: JSONPointer, options: ObserverOptions,
                                makeSink: (Int) -> ObserverSink) throws(TetherError) -> UInt64 {
        let engine = try acquire(c, .computed)
        guard let owns = engine.enterEvaluation() else { throw staleError(.computed, c) }
        let handle: UInt64
        do {
            let id = try engine.graph.observe(HandleCodec.derivedID(c), path: path, options: options,
                                              sink: makeSink(engine.slotIndex))
            handle = HandleCodec.observer(engine.slotIndex, id)
            engine.adopt(handle)
        } catch {
            engine.leaveEvaluation(ownsDelivery: owns)
            throw error
        }
        engine.leaveEvaluation(ownsDelivery: owns)
        return handle
    }

    /// Ends an observer; its release (a C destroy, a Swift closure's
    /// capture) runs here, or after its running call returns.
    package static func removeObserver(_ o: UInt64) throws(TetherError) {
        let engine = try acquire(o, .observer)
        let h = HandleCodec.decode(o)
        let sink: ObserverSink?
        do {
            sink = try engine.graph.removeObserver(ObserverID(index: h.index, generation: h.generation))
        } catch {
            engine.lock.unlock()
            throw error
        }
        engine.lock.unlock()
        sink?.runRelease()
    }
}
