import Glibc
import TetherRuntime
import TetherWire

/// The store's side of a shared ledger (Ledger.swift): planning a write
/// without applying it, and installing what the ledger committed.
extension Store {
    /// Thrown inside the runtime transaction once the plan has read what it
    /// needs: the transaction is aborted, so the mirror stays as it was.
    private struct PlanOnly: Error {}

    /// Plans `ops` against the mirror with every check `apply` makes, and
    /// returns the proposal, or nil when the ops change nothing (an equal
    /// value). Nothing in the store changes.
    func plan(_ ops: [Op], preconditions: [Precondition], tag: String?, origin: UInt64?) throws(VarlinkError) -> Proposal? {
        try checkWrite(ops, preconditions: preconditions, tag: tag)
        // Each name once, in the order the ops first touch it; its value now.
        var names: [String] = []
        var before: [String: Value?] = [:]
        for op in ops where before[op.name] == nil {
            names.append(op.name)
            do throws(TetherError) {
                before[op.name] = .some(try records[op.name]?.value)
            } catch {
                throw VarlinkError(error, name: op.name)
            }
        }
        var plan = TransactionPlan(store: self)
        var after: [String: (value: Value?, descriptor: Descriptor)] = [:]
        do {
            try runtime.transaction(tag: tag, origin: origin ?? 0) {
                for (i, op) in ops.enumerated() {
                    do throws(VarlinkError) { try plan.stage(op, index: i) } catch { throw WrappedVarlinkError(error: error) }
                }
                // Reads inside see the staged writes: the states as the
                // commit would leave them.
                for name in names {
                    if let r = plan.record(name) {
                        after[name] = (try r.state.get(), r.descriptor)
                    } else {
                        after[name] = (nil, Descriptor())
                    }
                }
                throw PlanOnly()
            }
        } catch is PlanOnly {
            plan.abandon()
        } catch {
            plan.abandon()
            throw Store.stagingFailure(error, ops)
        }
        var images: [StateImage] = []
        var changed = Set<String>()
        var bytes = 0
        for name in names {
            guard let final = after[name], final.value != before[name]! else { continue }
            // Ranges (and validators) run when the runtime commits, on the
            // final value, and the plan never commits: the range is checked
            // here, as that commit would (found by PyPI varlink's walk,
            // Tests/etcd: a Set outside the range was proposed).
            if let value = final.value, final.descriptor.range != nil {
                do throws(VarlinkError) {
                    _ = try Store.conform(value, to: final.descriptor, name: name)
                } catch {
                    let index = ops.firstIndex { $0.name == name } ?? 0
                    throw error.tetherError.map { VarlinkError($0, name: name, op: ops.count == 1 ? nil : index) } ?? error
                }
            }
            changed.insert(name)
            images.append(StateImage(name: name, value: final.value, modified: 0, descriptor: final.descriptor))
            if let value = final.value { bytes += (try? Store.size(of: value)) ?? 0 }
        }
        guard !changed.isEmpty else { return nil }
        var expected: [(name: String, modified: UInt64)] = []
        var seen = Set<String>()
        for name in names + preconditions.map(\.name) where seen.insert(name).inserted {
            expected.append((name, ledgerModified(name)))
        }
        let changes = ops.compactMap { op -> Change? in
            guard changed.contains(op.name) else { return nil }
            return Change(name: op.name, path: op.path, write: storedWrite(op))
        }
        let dropped = images.filter { $0.value == nil }.map(\.name)
        return Proposal(expected: expected, images: images, descriptors: [], droppedDescriptors: dropped,
                        changes: changes, tag: tag, origin: origin, bytes: bytes)
    }

    /// Plans a Declare (io.tether.Declare) against the mirror: a proposal
    /// setting the descriptor (and the value, when the state is created or
    /// an int becomes a double), and whether it creates the state.
    func planDeclare(_ name: String, _ descriptor: Descriptor, value: Value) throws(VarlinkError) -> (Proposal, created: Bool) {
        if let range = descriptor.range, let lo = range.minimum, let hi = range.maximum, lo > hi {
            throw .invalidParameter("descriptor.range", "minimum \(lo) is greater than maximum \(hi)")
        }
        try StateName.check(name, parameter: "name", limits: limits)
        if let r = records[name] {
            let current: Value
            do { current = try r.value } catch { throw VarlinkError(error, name: name) }
            let stored = try Store.conform(current, to: descriptor, name: name)
            var images: [StateImage] = []
            var changes: [Change] = []
            if stored != current {
                images.append(StateImage(name: name, value: stored, modified: 0, descriptor: descriptor))
                changes.append(Change(name: name, write: .set(stored)))
            }
            return (Proposal(expected: [(name, r.modified)], images: images, descriptors: [(name, descriptor)],
                             droppedDescriptors: [], changes: changes, tag: nil, origin: nil,
                             bytes: images.isEmpty ? 0 : ((try? Store.size(of: stored)) ?? 0)), false)
        }
        let size = try checkSize(value, name: name)
        let expected = ledgerModified(name)
        if records.count >= maxStates {
            throw .limitExceeded(.states, maximum: maxStates, actual: records.count + 1,
                                 "the daemon holds at most \(maxStates) states; this Declare would make \(records.count + 1)")
        }
        let stored = try Store.conform(value, to: descriptor, name: name)
        // Made and freed: the checks a state of this descriptor makes.
        let probe = try makeState(name, stored, descriptor)
        try? probe.free()
        return (Proposal(expected: [(name, expected)], images: [StateImage(name: name, value: stored, modified: 0, descriptor: descriptor)],
                         descriptors: [(name, descriptor)], droppedDescriptors: [],
                         changes: [Change(name: name, write: .set(stored))], tag: nil, origin: nil, bytes: size), true)
    }

    /// One commit the ledger delivered, applied to the mirror in the
    /// ledger's order: `states` as the commit left them (value nil:
    /// removed), `descriptors` it set without a value, `changes` as
    /// watchers are sent them (nil: made from `states`, each a whole Set or
    /// Remove, for a commit that carried no record of its own). A revision
    /// that does not follow the last one (something else wrote the ledger)
    /// empties the log, so that no watch resumes across the gap (it
    /// resyncs instead).
    public func install(revision newRevision: UInt64, states: [StateImage], descriptors: [(name: String, descriptor: Descriptor)],
                        changes: [Change]?, tag: String?, origin: UInt64?, unreadable: [(name: String, reason: String)] = []) {
        guard newRevision > revision else { return }  // delivered twice: applied already
        // A value the ledger holds that this host cannot read: the state is
        // quarantined (reads of it say why) until a write replaces it.
        for (name, reason) in unreadable { quarantine(name, reason, modified: newRevision) }
        for image in states {
            guard let value = image.value else {
                delete(image.name)
                continue
            }
            if let r = records[image.name], !r.descriptor.readOnly, (try? r.state.set(value)) != nil {
                // The commonest install: a new value for a writable state,
                // into its own runtime state (no new state made per commit).
                dropEncoded(r)
                r.modified = newRevision
                r.sizeBound = (try? Store.size(of: value)) ?? limits.maxValue
                continue
            }
            let descriptor = records[image.name]?.descriptor ?? image.descriptor
            replace(image.name, value: value, descriptor: descriptor, modified: newRevision)
        }
        for (name, descriptor) in descriptors {
            guard let r = records[name] else { continue }
            if r.descriptor != descriptor, let value = try? r.value {
                replace(name, value: value, descriptor: descriptor, modified: r.modified)
            }
        }
        let made = changes ?? states.map { image in
            Change(name: image.name, write: image.value.map { .set($0) } ?? .remove)
        }
        if newRevision != revision + 1 && log.count > 0 {
            log = CommitLog(capacity: log.capacity, maxBytes: log.maxBytes)
            report?("the ledger's revision jumped from \(revision) to \(newRevision) (something else wrote it): watches older than \(newRevision) resync")
        }
        revision = newRevision
        let commit = Commit(revision: newRevision, changes: made, tag: tag, origin: origin)
        log.append(commit)
        onCommit?(commit)
        runInstallWaiters()
    }

    /// A state the ledger holds that this host cannot serve (its value
    /// does not parse, or breaks a limit): reads of it say `reason`, and a
    /// write planned for it expects the ledger's revision of it
    /// (`modified`), so that a whole Set replaces it.
    public func quarantine(_ name: String, _ reason: String, modified: UInt64) {
        delete(name)
        quarantined[name] = reason
        quarantinedModified[name] = modified
    }

    /// The revision the ledger holds `name` at, as this host knows it (0:
    /// absent): what a plan expects of it.
    func ledgerModified(_ name: String) -> UInt64 {
        records[name]?.modified ?? quarantinedModified[name] ?? 0
    }

    /// A record for `name` holding `value` under `descriptor`, replacing
    /// any other (a value the descriptor refuses is quarantined: the
    /// ledger holds it, this host cannot serve it).
    private func replace(_ name: String, value: Value, descriptor: Descriptor, modified: UInt64) {
        do throws(VarlinkError) {
            let state = try makeState(name, value, descriptor)
            delete(name)
            insert(StateRecord(name: name, state: state, modified: modified, descriptor: descriptor,
                               sizeBound: (try? Store.size(of: value)) ?? limits.maxValue))
        } catch {
            delete(name)
            quarantined[name] = "the ledger holds a value this host cannot make a state of: \(error.detail)"
            report?("state '\(name)' quarantined: \(error.detail)")
        }
    }

    private func runInstallWaiters() {
        guard !installWaiters.isEmpty else { return }
        var due: [() -> Void] = []
        installWaiters.removeAll { waiter in
            guard waiter.revision <= revision else { return false }
            due.append(waiter.then)
            return true
        }
        for then in due { then() }
    }
}

extension Store {
    /// io.tether.Snapshot on a store that a ledger decides for (nothing of
    /// it is on this host's disk): the mirror, as it is at this revision,
    /// written as the SQLite backend's snapshot file, so that either
    /// backend restores it (`tetherd --restore`).
    func mirrorSnapshot(to path: String) throws(VarlinkError) -> SnapshotReply {
        var template = Array("/tmp/tether-snapshot-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw VarlinkError(TetherError(.loopFailure, "cannot make a temporary directory for the snapshot: \(String(cString: strerror(errno)))"))
        }
        let directory = String(cString: made)
        defer {
            for file in ["tether.db", "tether.db-wal", "tether.db-shm", "tether.db-journal", "tether.lock"] { unlink(directory + "/" + file) }
            rmdir(directory)
        }
        do {
            let copy = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 1)
            try copy.start(epoch: epoch)
            var images: [StateImage] = []
            images.reserveCapacity(records.count)
            for r in sortedRecords.all {
                images.append(StateImage(name: r.name, value: try r.value, modified: r.modified, descriptor: r.descriptor))
            }
            try copy.record(Commit(revision: revision, changes: [], tag: nil, origin: nil), states: images)
            try copy.sync()
            return SnapshotReply(revision: revision, bytes: try copy.snapshot(to: path))
        } catch let error as TetherError {
            throw VarlinkError(error)
        } catch {
            throw VarlinkError(TetherError(.loopFailure, "\(error)"))
        }
    }
}
