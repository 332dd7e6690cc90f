// GraphWrite.swift — writes to a state: checks, apply, detect a change, advance the revision.

/// A changing write stores the value, then schedules the state's observers
/// (`scheduleChanged`) and gives readers a new version and marks them
/// (`bumpVersion`, Propagation.swift).
extension Graph {
    /// Replaces the whole value of a state. Returns true when it changed.
    /// `round` is how deep in callback-caused writes the writer is (0 outside
    /// callbacks); see `maxRounds`. `directCalls`: the caller, outside its
    /// callbacks, makes the SYNC calls a scalar write may leave to it
    /// (GraphDirect.swift).
    @discardableResult
    public func write(_ id: StateID, _ value: Value, round: UInt32 = 0,
                      directCalls: Bool = false) throws(TetherError) -> Bool {
        let i = try resolve(id)
        try checkRound(round, i)
        if let changed = writeScalar(i, value.scalar, round: round, directCalls: directCalls) { return changed }
        if !states[i].described.isEmpty {
            if states[i].described.contains(.validator) {
                try checkOwnerReady()
                return try commitOne(i, .set(value), round: round)
            }
            try checkWritable(i)
        }
        let newValue = try admit(value, into: i)
        if states[i].described.contains(.range) { try checkRange(i, newValue) }
        let old = states[i].value
        if old == newValue {
            scheduleEqual(i, path: .root, round: round)
            return false
        }
        revisionCount &+= 1
        states[i].value = newValue
        states[i].revision = revision
        scheduleChanged(i, old: old, writtenPath: .root, round: round)
        bumpVersion(i, old: old, round: round)
        return true
    }

    /// `write` of a scalar over a scalar of the same type, on a state
    /// without a descriptor: the common typed setter. Nil when that is not
    /// the case (the general path takes it). The values are compared and
    /// stored as scalars, without `Value`'s outlined copy and destroy or
    /// the type lock's check (same type: nothing to convert or refuse).
    @inline(__always)
    func writeScalar(_ i: Int, _ new: ScalarValue, round: UInt32, directCalls: Bool) -> Bool? {
        if case .other = new { return nil }  // a string or a composite
        guard states[i].described.isEmpty else { return nil }
        let old: ScalarValue
        if case let .int(n) = new, case let .int(o) = states[i].value {
            // An int over an int (the common typed write): compared and
            // stored without a switch on either value's type (a jump table
            // each: ~50 instructions of a 250-instruction set).
            if n == o { return writeEqualScalar(i, round: round) }
            revisionCount &+= 1
            withUnsafeMutablePointer(to: &states[i].value) { $0.initialize(to: .int(n)) }  // nothing to release
            old = .int(o)
        } else {
            old = states[i].value.scalar
            guard old.type == new.type else { return nil }
            if old.sameValue(as: new) { return writeEqualScalar(i, round: round) }
            revisionCount &+= 1
            withUnsafeMutablePointer(to: &states[i].value) { $0.storeScalar(new) }
        }
        states[i].revision = revision
        if states[i].firstObserver == noIndex && states[i].firstSub == noIndex && !states[i].pathReaders {
            states[i].version = nextVersion  // bumpVersion's case without readers
            nextVersion &+= 1
            return true
        }
        let oldValue = Value(trivial: old)
        if states[i].firstObserver != noIndex
            && !(directCalls && recordDirectCall(i, old: old, new: new, round: round)) {
            scheduleChanged(i, old: oldValue, writtenPath: .root, round: round)  // else the owner calls them
        }
        bumpVersion(i, old: oldValue, round: round)
        return true
    }

    /// An equal scalar write: no change; observers that asked for equal
    /// writes are woken.
    @inline(__always)
    private func writeEqualScalar(_ i: Int, round: UInt32) -> Bool {
        if states[i].firstObserver != noIndex { scheduleEqual(i, path: .root, round: round) }
        return false
    }

    /// Writes `value` at `path` inside the state (JSON Patch "add").
    @discardableResult
    public func write(_ id: StateID, _ value: Value, at path: JSONPointer, round: UInt32 = 0) throws(TetherError) -> Bool {
        if path.isRoot { return try write(id, value, round: round) }
        let i = try resolve(id)
        try checkRound(round, i)
        if states[i].described.contains(.validator) {
            try checkOwnerReady()
            return try commitOne(i, .put(value, at: path), round: round)
        }
        try checkWritable(i)
        try Value.checkNesting(of: value, under: path.tokens.count)
        if let before = states[i].value.valueIfPresent(at: path), before == value {
            // Validate the path all the same so a bad one is reported.
            scheduleEqual(i, path: path, round: round)
            return false
        }
        // Observers match by path, so "/list/-" must name the element it creates.
        let written = appendTarget(path, in: states[i].value) ?? path
        return try mutate(i, path: written, round: round) { (v: inout Value) throws(TetherError) in
            try v.set(value, at: path)
        }
    }

    /// "/a/-" appends to the array /a: the element it creates is /a/<count>.
    func appendTarget(_ path: JSONPointer, in root: Value) -> JSONPointer? {
        guard path.tokens.last == "-", let parent = path.parent,
              case let .array(a)? = root.valueIfPresent(at: parent) else { return nil }
        return parent.appending(String(a.count))
    }

    /// Removes the member or element at `path`.
    public func remove(_ id: StateID, at path: JSONPointer, round: UInt32 = 0) throws(TetherError) {
        let i = try resolve(id)
        guard !path.isRoot else {
            // A remote state's root is the daemon's state itself: its owner
            // sends the remove there, which deletes it.
            if states[i].described.contains(.remote) && !applyingRemote { throw Graph.remoteWrite }
            throw TetherError(.invalidArgument, "cannot remove the root of a state; write null instead")
        }
        try checkRound(round, i)
        if states[i].described.contains(.validator) {
            try checkOwnerReady()
            _ = try commitOne(i, .remove(at: path), round: round)
            return
        }
        try checkWritable(i)
        // Removing an array element shifts the ones after it: every path
        // under that array may change, so observers there are compared too.
        var affected = path
        if let parent = path.parent, case .array? = states[i].value.valueIfPresent(at: parent) {
            affected = parent
        }
        _ = try mutate(i, path: affected, removing: path, round: round) { (v: inout Value) throws(TetherError) in
            try v.remove(at: path)
        }
    }

    /// Applies an in-place edit below the root. Without observers, readers
    /// or a descriptor the edit is done in place (no copy); so it is with
    /// readers but no observers once the state's epoch base is taken (see
    /// `bumpVersion`). Otherwise the old root is kept (for observers' old
    /// values, the epoch base, range checks) and copy-on-write copies the
    /// containers on the edited path.
    /// `removing`: the removed path, which wakes readers by path (an array
    /// element's removal wakes the whole array, not the array's parent).
    private func mutate(_ i: Int, path: JSONPointer, removing: JSONPointer? = nil, round: UInt32,
                        _ edit: (inout Value) throws(TetherError) -> Void) throws(TetherError) -> Bool {
        if states[i].firstObserver == noIndex && states[i].described.isEmpty {
            if states[i].firstSub == noIndex && !states[i].pathReaders {
                try edit(&states[i].value)  // on error the value is unchanged
                revisionCount &+= 1
                states[i].revision = revision
                states[i].version = nextVersion
                nextVersion &+= 1
                return true
            }
            // Readers but no observers, and the value this epoch started
            // from is kept already: nothing needs the old value, so edit in
            // place. Keeping it made copy-on-write copy the edited
            // containers on every write (a 1,000-member object: ~50k
            // instructions a write, profiled).
            if states[i].base != noIndex && bases[Int(states[i].base)].epoch == epoch {
                try edit(&states[i].value)
                revisionCount &+= 1
                states[i].revision = revision
                bumpVersionInEpoch(i, round: round, at: removing ?? path)
                return true
            }
        }
        let old = states[i].value
        var updated = old
        try edit(&updated)
        try checkRange(i, updated)
        revisionCount &+= 1
        states[i].value = updated
        states[i].revision = revision
        scheduleChanged(i, old: old, writtenPath: path, round: round)
        bumpVersion(i, old: old, round: round, at: removing ?? path)
        return true
    }

    /// Inline, with the message built out of line: a call per write
    /// (profiled: ~19 instructions of a 255-instruction typed set).
    @inline(__always)
    func checkRound(_ round: UInt32, _ i: Int) throws(TetherError) {
        guard round < maxRounds else { throw feedbackLoopError(i) }
    }

    @inline(never)
    func feedbackLoopError(_ i: Int) -> TetherError {
        TetherError(.feedbackLoop,
            "write refused: callbacks kept waking each other for \(maxRounds) rounds (state #\(i)); the feedback loop was cut")
    }

    /// Applies the type lock; an int written to a locked double state is
    /// stored as a double, which is what a C caller writing `3` means.
    func admit(_ value: Value, into i: Int) throws(TetherError) -> Value {
        guard states[i].typeLocked else { return value }
        let current = states[i].value.type
        if value.type == current { return value }
        if current == .double, case let .int(n) = value { return .double(Double(n)) }
        throw TetherError(.wrongType, "\(label(i)) is locked to type \(current); refused a write of type \(value.type)")
    }
}
