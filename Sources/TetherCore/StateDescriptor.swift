// StateDescriptor.swift — state descriptors (read-only, range, validator) and the checks every write runs.

/// What a state accepts (ROS 2 parameter descriptors are the model):
/// read-only, a numeric range, a validator that may reject with a reason.
/// Checked on every write before anything is applied.
public struct StateDescriptor {
    public var readOnly: Bool
    public var range: ClosedRange<Double>?
    public var validator: Validator?
    /// How error messages name the state.
    public var name: String?

    public init(readOnly: Bool = false, range: ClosedRange<Double>? = nil, validator: Validator? = nil,
                name: String? = nil) {
        self.readOnly = readOnly
        self.range = range
        self.validator = validator
        self.name = name
    }
}

/// The descriptor bits kept in the state node itself, so an undescribed
/// state's write pays one byte test.
@usableFromInline struct DescriptorFlags: OptionSet, Sendable {
    @usableFromInline let rawValue: UInt8
    @usableFromInline init(rawValue: UInt8) { self.rawValue = rawValue }
    static let readOnly = DescriptorFlags(rawValue: 1)
    static let range = DescriptorFlags(rawValue: 2)
    static let validator = DescriptorFlags(rawValue: 4)
    /// `descriptors` has an entry (possibly only a release to run).
    static let stored = DescriptorFlags(rawValue: 8)
    /// A mirror of a daemon's state (always with `readOnly`, so that every
    /// write takes the slow path that says where it must go instead).
    static let remote = DescriptorFlags(rawValue: 16)
}

/// A validator callback and the release of what it captured.
public final class Validator {
    /// Returns nil to accept, or the reason for rejecting. Called through
    /// the graph's gate (without the owner's lock), with the proposed whole
    /// value and the cause of the write. Nil: only the release matters.
    public let check: ((StateID, Value, Cause) -> String?)?
    /// The release wrapped as a sink, so it travels with observer releases
    /// (run once, outside the owner's lock).
    public let releaser: ObserverSink

    public init(check: ((StateID, Value, Cause) -> String?)?, release: (() -> Void)? = nil) {
        self.check = check
        self.releaser = ObserverSink(call: { _ in }, release: release)
    }
}

extension Graph {
    /// Thrown by a write that meets a validator while `callbacksReady` says
    /// the writing thread may not run callbacks now: the owner must first
    /// take whatever makes them safe (the C face: its delivery lock), then
    /// write again. Keeps the common write free of a separate validator lookup.
    public static let validatorNeedsOwner = TetherError(.busy, "a validator must run: the owner writes again, ready for callbacks")

    @inline(__always)
    func checkOwnerReady() throws(TetherError) {
        if let ready = callbacksReady, !ready() { throw Graph.validatorNeedsOwner }
    }

    /// Sets or removes (nil) a state's descriptor. Returns the validator it
    /// replaced, whose release the caller runs outside its lock.
    public func describe(_ id: StateID, _ descriptor: StateDescriptor?) throws(TetherError) -> Validator? {
        let i = try resolve(id)
        let old = removeDescriptor(i)
        guard let descriptor else { return old }
        var flags: DescriptorFlags = []
        if descriptor.readOnly { flags.insert(.readOnly) }
        if descriptor.range != nil { flags.insert(.range) }
        if descriptor.validator?.check != nil { flags.insert(.validator) }
        if !flags.isEmpty || descriptor.validator != nil || descriptor.name != nil {
            descriptors[UInt32(i)] = descriptor
            states[i].described = flags.union(.stored)
        }
        return old
    }

    func removeDescriptor(_ i: Int) -> Validator? {
        guard states[i].described.contains(.stored) else { return nil }
        states[i].described = []
        return descriptors.removeValue(forKey: UInt32(i))?.validator
    }

    /// Whether a write to this state must go through `commit` (it has a
    /// validator, which is a callback). False for a stale id: the write
    /// itself reports that.
    @inline(__always)
    public func needsValidation(_ id: StateID) -> Bool {
        let i = Int(id.index)
        guard i < states.count, states[i].generation == id.generation else { return false }
        return states[i].described.contains(.validator)
    }

    /// How messages name a state: by its descriptor's name when it has one.
    /// With the owner's own name for the state (`stateHandleText`: the C
    /// face's handle), so a message names it the way the caller knows it.
    func label(_ i: Int) -> String {
        let handle = stateHandleText.map { $0(StateID(index: UInt32(i), generation: states[i].generation)) }
        if states[i].described.contains(.stored), let name = descriptors[UInt32(i)]?.name {
            return handle.map { "state '\(name)' (\($0))" } ?? "state '\(name)'"
        }
        return handle.map { "state \($0)" } ?? "state #\(i)"
    }

    /// Read-only: refuses any write, before its value is even looked at.
    /// A remote state's mirror is read-only to every writer but its owner
    /// applying the daemon's commits; others get `Graph.remoteWrite`.
    @inline(__always)
    func checkWritable(_ i: Int) throws(TetherError) {
        guard states[i].described.contains(.readOnly) else { return }
        try refuseWrite(i)
    }

    private func refuseWrite(_ i: Int) throws(TetherError) {
        if states[i].described.contains(.remote) {
            if applyingRemote { return }
            throw Graph.remoteWrite
        }
        throw TetherError(.readOnly, "\(label(i)) is read-only (its descriptor refuses every write)")
    }

    /// Thrown by a write to a remote state's mirror: the owner sends the
    /// write to the daemon instead (the mirror changes when the daemon's
    /// commit comes back). Compared by code and message.
    public static let remoteWrite = TetherError(.readOnly, "a remote state is written through its daemon")

    /// Makes a state the mirror of the daemon's state `name`: only
    /// `applyingRemote` writes reach it from now on.
    public func markRemote(_ id: StateID, name: String) throws(TetherError) {
        let i = try resolve(id)
        _ = removeDescriptor(i)
        descriptors[UInt32(i)] = StateDescriptor(name: name)
        states[i].described = [.readOnly, .remote, .stored]
    }

    /// Whether the state is a remote state's mirror (false for a stale id).
    public func isRemote(_ id: StateID) -> Bool {
        let i = Int(id.index)
        guard i < states.count, states[i].generation == id.generation else { return false }
        return states[i].described.contains(.remote)
    }

    /// The range: checked on the whole value a write would leave.
    func checkRange(_ i: Int, _ value: Value) throws(TetherError) {
        guard states[i].described.contains(.range), let range = descriptors[UInt32(i)]?.range else { return }
        let number: Double
        switch value {
        case let .int(n): number = Double(n)
        case let .double(d): number = d
        default:
            throw TetherError(.wrongType, "\(label(i)) must hold a number in [\(range.lowerBound), \(range.upperBound)]; refused a \(value.type)")
        }
        guard range.contains(number) else {
            throw TetherError(.outOfRange, "\(label(i)) must stay in [\(range.lowerBound), \(range.upperBound)]; refused \(number)")
        }
    }
}
