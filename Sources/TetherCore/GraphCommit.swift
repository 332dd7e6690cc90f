// GraphCommit.swift — transactions: writes staged in a WriteSet, checked, then applied under one revision.

/// Transactions: writes staged in a `WriteSet`, checked, then applied at
/// once under one revision (`commit`).
///
/// Staging keeps, per state, the operations in order and the value they
/// give. A commit replays the operations onto the current value when another
/// writer changed the state since it was staged, so a write at a path keeps
/// that writer's changes to sibling paths (Redis MULTI/EXEC, not a blind
/// overwrite of the whole value).
public enum WriteOp {
    /// Replace the whole value.
    case set(Value)
    /// Replace the value at the pointer (the root: the whole value).
    case put(Value, at: JSONPointer)
    case remove(at: JSONPointer)
}

struct StagedState {
    var index: UInt32
    var generation: UInt32
    /// The state's revision the staged value was computed from.
    var baseRevision: UInt64
    var ops: [WriteOp]
    var value: Value
}

/// The writes of one transaction, in first-write order per state.
public struct WriteSet {
    var entries: [StagedState] = []
    var positions: [UInt32: Int] = [:]
    /// The first refused write: it dooms the transaction.
    public var failure: TetherError?

    public init() {}

    public var isEmpty: Bool { entries.isEmpty }

    /// The staged value of a state, for the transaction's own reads.
    public func staged(_ id: StateID) -> Value? {
        guard let k = positions[id.index], entries[k].generation == id.generation else { return nil }
        return entries[k].value
    }
}

extension Graph {
    /// Adds one write to a transaction. Checks what can be checked now
    /// (stale handle, read-only, type lock, the path against the staged
    /// value); range and validators run at commit, on the final value.
    /// On error `set` is unchanged.
    public func stage(_ op: WriteOp, to id: StateID, in set: inout WriteSet, round: UInt32) throws(TetherError) {
        let i = try resolve(id)
        try checkRound(round, i)
        try checkWritable(i)
        var k = set.positions[id.index] ?? -1
        if k >= 0 && set.entries[k].generation != id.generation {
            // The slot was freed and reused since: the old entry fails at commit.
            k = -1
        }
        var value = k >= 0 ? set.entries[k].value : states[i].value
        try apply(op, to: &value, state: i)
        if k < 0 {
            set.positions[id.index] = set.entries.count
            set.entries.append(StagedState(index: id.index, generation: id.generation,
                                           baseRevision: states[i].revision, ops: [op], value: value))
        } else {
            set.entries[k].ops.append(op)
            set.entries[k].value = value
        }
    }

    func apply(_ op: WriteOp, to value: inout Value, state i: Int) throws(TetherError) {
        switch op {
        case let .set(new):
            value = try admit(new, into: i)
        case let .put(new, at: path):
            if path.isRoot {
                value = try admit(new, into: i)
            } else {
                try Value.checkNesting(of: new, under: path.tokens.count)
                try value.set(new, at: path)
            }
        case let .remove(at: path):
            guard !path.isRoot else {
                throw TetherError(.invalidArgument, "cannot remove the root of a state; write null instead")
            }
            _ = try value.remove(at: path)
        }
    }

    /// The path whose observers a single operation may wake (see `write`).
    private func affectedPath(_ ops: [WriteOp], before: Value) -> JSONPointer {
        guard ops.count == 1 else { return .root }
        switch ops[0] {
        case .set:
            return .root
        case let .put(_, at: path):
            return appendTarget(path, in: before) ?? path
        case let .remove(at: path):
            if let parent = path.parent, case .array? = before.valueIfPresent(at: parent) { return parent }
            return path
        }
    }

    /// Checks and applies a transaction: all of it under one new revision,
    /// or — when any check fails — none of it, with no call queued. Returns
    /// the new revision, or nil when no value changed. Validators run
    /// through `callOut` (without the owner's lock); if another writer changes
    /// a staged state meanwhile, the staged values are rebuilt and checked
    /// again, so what is applied is exactly what the validators accepted.
    @discardableResult
    public func commit(_ set: inout WriteSet, round: UInt32) throws(TetherError) -> UInt64? {
        if let failure = set.failure { throw failure }
        guard !set.entries.isEmpty else { return nil }
        var attempt = 0
        while true {
            attempt += 1
            try rebase(&set, round: round)
            if try validate(set, round: round) { break }
            guard attempt < 16 else {
                throw TetherError(.busy, "the states of the transaction kept changing while their validators ran; nothing was applied")
            }
        }
        return applyStaged(set, round: round)
    }

    /// Brings staged values up to date with the states and checks everything
    /// but the validators.
    private func rebase(_ set: inout WriteSet, round: UInt32) throws(TetherError) {
        for k in set.entries.indices {
            let i = Int(set.entries[k].index)
            guard i < states.count, states[i].generation == set.entries[k].generation else {
                throw TetherError(.stale, "a state of the transaction (#\(i)) was freed before it committed; nothing was applied")
            }
            try checkRound(round, i)
            try checkWritable(i)
            if states[i].revision != set.entries[k].baseRevision {
                var value = states[i].value
                for op in set.entries[k].ops { try apply(op, to: &value, state: i) }
                set.entries[k].value = value
                set.entries[k].baseRevision = states[i].revision
            }
            try checkRange(i, set.entries[k].value)
        }
    }

    /// Runs the validators. False when a staged state changed (or was
    /// freed) while they ran: rebase and validate again.
    private func validate(_ set: WriteSet, round: UInt32) throws(TetherError) -> Bool {
        var ranAny = false
        for entry in set.entries {
            let i = Int(entry.index)
            guard states[i].generation == entry.generation else { return false }
            guard states[i].described.contains(.validator),
                  let check = descriptors[entry.index]?.validator?.check else { continue }
            ranAny = true
            let id = StateID(index: entry.index, generation: entry.generation)
            let value = entry.value
            let why = cause
            var reason: String?
            validatingDepth += 1
            let ran = callOut(round, why) { reason = check(id, value, why) }
            validatingDepth -= 1
            cause = why
            guard ran else {
                throw TetherError(.outOfRange, "\(label(i)): no stack left to run its validator; nothing was applied")
            }
            if let reason {
                throw TetherError(.rejected, "\(label(i)) rejected the value: \(reason.isEmpty ? "its validator said no" : reason); nothing was applied")
            }
        }
        guard ranAny else { return true }
        for entry in set.entries {
            let i = Int(entry.index)
            if states[i].generation != entry.generation || states[i].revision != entry.baseRevision { return false }
        }
        return true
    }

    private func applyStaged(_ set: WriteSet, round: UInt32) -> UInt64? {
        var changed = false
        for entry in set.entries where states[Int(entry.index)].value != entry.value {
            changed = true
            break
        }
        if changed { revisionCount &+= 1 }
        for entry in set.entries {
            let i = Int(entry.index)
            let old = states[i].value
            let path = affectedPath(entry.ops, before: old)
            if old == entry.value {
                scheduleEqual(i, path: path, round: round)
                continue
            }
            states[i].value = entry.value
            states[i].revision = revision
            scheduleChanged(i, old: old, writtenPath: path, round: round)
            bumpVersion(i, old: old, round: round, ops: entry.ops)
        }
        return changed ? revision : nil
    }

    /// A single write to a state with a validator: a one-write transaction.
    func commitOne(_ i: Int, _ op: WriteOp, round: UInt32) throws(TetherError) -> Bool {
        var set = WriteSet()
        try stage(op, to: StateID(index: UInt32(i), generation: states[i].generation), in: &set, round: round)
        return try commit(&set, round: round) != nil
    }
}

extension Graph {
    /// Applies one write now (outside transactions). `directCalls`: the
    /// caller (outside its callbacks) will make the SYNC calls a scalar
    /// write may leave to it (GraphDirect.swift).
    @discardableResult @inlinable
    public func write(_ op: WriteOp, to id: StateID, round: UInt32, directCalls: Bool = false) throws(TetherError) -> Bool {
        switch op {
        case let .set(value):
            return try write(id, value, round: round, directCalls: directCalls)
        case let .put(value, at: path):
            if path.isRoot { return try write(id, value, round: round, directCalls: directCalls) }
            return try write(id, value, at: path, round: round)
        case let .remove(at: path):
            try remove(id, at: path, round: round)
            return true
        }
    }
}
