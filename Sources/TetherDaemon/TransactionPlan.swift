import TetherRuntime
import TetherWire

/// The ops of one commit as they are staged: writes to existing states go
/// into the runtime's transaction (so they apply together or not at all,
/// with a local state's checks and errors); states created or removed at
/// the root are held here and installed only once the runtime committed.
struct TransactionPlan {
    unowned let store: Store
    /// Names whose record this commit replaces: a new record (created),
    /// or nil (removed).
    private var overlay: [String: StateRecord?] = [:]
    /// Records made for this commit, freed if it fails.
    private var made: [StateRecord] = []
    /// The revision each existing record had when this commit first
    /// touched it, in the order they were touched.
    private var touched: [(record: StateRecord, revision: UInt64)] = []
    private var names: [String] = []

    init(store: Store) {
        self.store = store
    }

    /// The record `name` has as this commit sees it (nil: none).
    func record(_ name: String) -> StateRecord? { current(name) }

    /// The record `name` has as this commit sees it.
    private func current(_ name: String) -> StateRecord? {
        if let replaced = overlay[name] { return replaced }
        return store.record(name)
    }

    mutating func stage(_ op: Op, index i: Int) throws(VarlinkError) {
        try StateName.check(op.name, parameter: "ops[\(i)].name", limits: store.limits)
        if !names.contains(op.name) { names.append(op.name) }
        let existing = current(op.name)
        do {
            switch op.write {
            case .set(let value):
                try store.checkSize(value, name: op.name)
                if op.path.isRoot, existing == nil {
                    let state = try store.makeState(op.name, value, Descriptor())
                    let r = StateRecord(name: op.name, state: state, modified: 0, descriptor: Descriptor(),
                                        sizeBound: (try? Store.size(of: value)) ?? 0)
                    made.append(r)
                    overlay[op.name] = .some(r)
                    return
                }
                guard let r = existing else { throw missing(op) }
                try note(r)
                if op.path.isRoot {
                    try r.state.set(value)
                    // An upper bound even if the commit is abandoned later.
                    r.sizeBound = max(r.sizeBound, (try? Store.size(of: value)) ?? r.sizeBound)
                } else {
                    try r.state.set(value, at: op.path)
                    let added = (try? Store.size(of: value)) ?? 0
                    if r.sizeBound + added > store.limits.maxValue {
                        // Might pass the limit: measure the staged value
                        // (reads see this thread's own staged writes).
                        try store.checkSize(try r.state.get(), name: op.name)
                    }
                    r.sizeBound += added
                }
            case .remove:
                guard let r = existing else { throw missing(op) }
                if op.path.isRoot {
                    if r.descriptor.readOnly {
                        throw TetherError(.readOnly, "'\(op.name)' is read-only: it cannot be removed (declare it writable first)")
                    }
                    overlay[op.name] = .some(nil)
                } else {
                    try note(r)
                    try r.state.remove(at: op.path)
                }
            }
        } catch let error as VarlinkError {
            throw error.withOp(i, name: op.name)
        } catch let error as TetherError {
            throw VarlinkError(error, name: op.name, op: i)
        } catch {
            throw VarlinkError(TetherError(.invalidArgument, "\(error)"), name: op.name, op: i)
        }
    }

    private func missing(_ op: Op) -> TetherError {
        op.path.isRoot
            ? TetherError(.notFound, "no state named '\(op.name)'")
            : TetherError(.notFound, "no state named '\(op.name)' (a write at \(op.path) needs the state to exist; set the whole value to create it)")
    }

    private mutating func note(_ r: StateRecord) throws(TetherError) {
        if touched.contains(where: { $0.record === r }) || made.contains(where: { $0 === r }) { return }
        touched.append((r, try r.state.revision))
    }

    /// After a failure: frees what this commit made.
    mutating func abandon() {
        for r in made { try? r.state.free() }
        made.removeAll()
    }

    /// The names whose state this commit changed, after the runtime
    /// committed (a write of an equal value changes nothing).
    func changedNames() -> Set<String> {
        var changed = Set<String>()
        for name in names {
            let before = store.record(name)
            let after = current(name)
            if before !== after {
                // Created, removed, or removed and created again; removing
                // a state this very commit created is no change at all.
                if before != nil || after != nil { changed.insert(name) }
                continue
            }
            if let r = after, let noted = touched.first(where: { $0.record === r }),
               let now = try? r.state.revision, now != noted.revision {
                changed.insert(name)
            }
        }
        return changed
    }

    /// Makes the commit's records the store's, at `revision`.
    func install(revision: UInt64, changed: Set<String>) {
        for name in names where changed.contains(name) {
            let before = store.record(name)
            let after = current(name)
            if before !== after {
                if before != nil { store.delete(name) }
                if let r = after {
                    r.modified = revision
                    store.insert(r)
                }
            } else if let r = after {
                store.dropEncoded(r)
                r.modified = revision
            }
        }
        // Records made and then removed again within the commit.
        for r in made where store.record(r.name) !== r { try? r.state.free() }
    }
}

extension VarlinkError {
    /// The same io.tether error, naming the op and state it came from.
    func withOp(_ op: Int, name stateName: String) -> VarlinkError {
        guard let error = tetherError else { return self }
        return VarlinkError(error, name: stateName, op: op)
    }
}
