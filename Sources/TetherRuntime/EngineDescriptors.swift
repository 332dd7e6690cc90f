import TetherCore

// State descriptors: read-only, range, validator (ROS 2 parameters).

extension Runtimes {
    /// Replaces the state's descriptor (nil: none); the replaced
    /// validator's release runs here, after the lock is released.
    package static func describe(_ s: UInt64, _ descriptor: StateDescriptor?) throws(TetherError) {
        let engine = try acquire(s, .state)
        if engine.graph.validatingDepth > 0 && DeliveryContext.isDelivering(engine.id) {
            engine.lock.unlock()
            throw TetherError(.busy, "a validator must not change descriptors")
        }
        if engine.graph.isRemote(stateID(s)) {
            engine.lock.unlock()
            throw TetherError(.invalidArgument, "a remote state's descriptor is the daemon's: declare it there (tetherctl declare, io.tether.Declare)")
        }
        let replaced: Validator?
        do {
            replaced = try engine.graph.describe(stateID(s), descriptor)
        } catch {
            engine.lock.unlock()
            throw error
        }
        engine.lock.unlock()
        replaced?.releaser.runRelease()
    }
}

extension Runtimes {
    /// Error messages of this runtime name a described state by its name
    /// alone, without its C handle (tetherd's clients know names only).
    package static func nameStatesWithoutHandles(in rt: UInt64) throws(TetherError) {
        let engine = try acquire(rt, .runtime)
        engine.graph.stateHandleText = nil
        engine.lock.unlock()
    }
}
