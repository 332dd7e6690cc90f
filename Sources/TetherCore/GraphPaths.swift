// GraphPaths.swift — tracking by path: the parts of a state readers read, as a trie of sources with versions of their own.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A computed, effect or tracking that reads a state at a JSON Pointer
// (`tether_state_get_path`, a projection binding, `State.get(_:at:)`)
// depends on that part only, as Swift Observation depends on a property:
// a write to `/user/age` does not wake a reader of `/user/name`.
//
// The parts of a state that something reads by path form a trie hanging off
// the state (`StateBase.pathRoot`; `StateNode.pathReaders` says it exists):
// one `PathNode` per path read, plus the ones between it and the root. A
// path node is a source like a state (`NodeRef.path`): readers link to it
// with the ordinary `Link`s, so tracking, the push, the pull, link reuse and
// unlinking are those of Propagation.swift unchanged. Whole-value reads link
// to the state itself, as before, and cost nothing more.
//
// Versions. A path node's version is the state's version at the last write
// that may have changed its part (or when it was made). So the part it names
// is always what it was when the state had that version, and "did my part
// change?" is one compare, as for a state; a batch that puts a part back
// (42 -> 0 -> 42) gets the state's old version back, and so does the part.
//
// Which writes wake a path (`wakePaths`): a write at P wakes the paths on
// the way to P (its ancestors), P, and everything below P; never a sibling.
// A whole-value write wakes every path of the state. Arrays are the one
// exception, on the side of caution: a write to an element, or a removal of
// one (which shifts the elements after it), is taken as a write to the whole
// array, so it wakes every path into that array. No part is compared: a
// woken reader re-evaluates, and the equality cutoff stops it there when
// its result is the same.
//
// A path node lives while some reader links to it or to a path below it:
// the last unlink frees it (`releasePathNode`), and the trie goes when its
// last path does. Freeing the state wakes and unlinks every path reader.

/// One part of a state that readers read by path: a node of the state's
/// path trie (the root, "", is never read by path: a read of "" is a
/// whole-value read and links to the state).
struct PathNode {
    var state: UInt32        // the state's index; noIndex while the slot is free
    var parent: UInt32       // the node one token up; noIndex for the trie root
    var firstSub: UInt32     // readers: a Link list, newest first (as a state's)
    var nextFree: UInt32
    /// The state's version at the last write that could change this part.
    var version: UInt64
    var pointer: JSONPointer
    /// `pointer` as text (escaped; RFC 6901 spells each pointer one way), so
    /// a read from C finds its node by comparing bytes.
    var text: [UInt8]
    var children: [String: UInt32]

    static func free(next: UInt32) -> PathNode {
        PathNode(state: noIndex, parent: noIndex, firstSub: noIndex, nextFree: next, version: 0,
                 pointer: JSONPointer(tokens: []), text: [], children: [:])
    }

    /// Whether this node's pointer is `bytes` (a pointer's text from C).
    func isSpelled(_ bytes: UnsafeRawBufferPointer) -> Bool {
        text.withUnsafeBytes { mine in
            mine.count == bytes.count && (mine.count == 0 || memcmp(mine.baseAddress!, bytes.baseAddress!, mine.count) == 0)
        }
    }
}

extension Graph {
    // MARK: Tracking a read by path

    /// A read of state `s` at `path` by the node being evaluated: a
    /// dependency on that part only. The root ("") is the whole value.
    @inline(__always)
    func trackPath(_ s: Int, _ path: JSONPointer) {
        let top = trackTarget
        guard top >= 0 else { return }
        if path.isRoot {
            track(NodeRef.state(s), version: states[s].version)
            return
        }
        trackPathPointer(s, path, top)
    }

    /// `trackPath` for a pointer's text from C.
    @inline(__always)
    func trackPath(_ s: Int, _ path: PointerText) {
        let top = trackTarget
        guard top >= 0 else { return }
        if path.bytes.isEmpty {
            track(NodeRef.state(s), version: states[s].version)
            return
        }
        trackPathText(s, path, top)
    }

    @inline(never)
    private func trackPathPointer(_ s: Int, _ path: JSONPointer, _ top: Int) {
        let p: Int
        if let e = expectedPath(top), pathNodes[e].state == UInt32(s), pathNodes[e].pointer == path {
            p = e
        } else {
            p = pathNode(s, path.tokens)
        }
        track(NodeRef.path(p), version: pathNodes[p].version)
    }

    @inline(never)
    private func trackPathText(_ s: Int, _ path: PointerText, _ top: Int) {
        let p: Int
        if let e = expectedPath(top), pathNodes[e].state == UInt32(s), pathNodes[e].isSpelled(path.bytes) {
            p = e
        } else {
            p = pathNode(s, path.pointer.tokens)
        }
        track(NodeRef.path(p), version: pathNodes[p].version)
    }

    /// The path node of the link an evaluation that reads as last time is
    /// about to reuse (the one at the cursor, or the last one past it), so a
    /// repeated evaluation finds its node without walking the trie.
    @inline(__always)
    private func expectedPath(_ top: Int) -> Int? {
        let cursor = derived[top].cursor
        let l = cursor != noIndex ? cursor : derived[top].lastDep
        guard l != noIndex else { return nil }
        let dep = links[Int(l)].dep
        return NodeRef.isPath(dep) ? NodeRef.index(dep) : nil
    }

    /// The node of `tokens` in state `s`'s trie, made (with the nodes on the
    /// way) when missing. New nodes take the state's version: their part is
    /// what it is now.
    func pathNode(_ s: Int, _ tokens: [String]) -> Int {
        var node = pathRoot(of: s)
        for k in tokens.indices {
            if let child = pathNodes[node].children[tokens[k]] {
                node = Int(child)
                continue
            }
            let child = allocatePathNode(PathNode(
                state: UInt32(s), parent: UInt32(node), firstSub: noIndex, nextFree: noIndex,
                version: states[s].version, pointer: JSONPointer(tokens: Array(tokens[...k])),
                text: Array(JSONPointer.text(of: tokens[...k]).utf8), children: [:]))
            pathNodes[node].children[tokens[k]] = UInt32(child)
            node = child
        }
        return node
    }

    /// The root of state `s`'s trie, made on first use.
    private func pathRoot(of s: Int) -> Int {
        let b = epochBase(of: s)
        if bases[b].pathRoot != noIndex { return Int(bases[b].pathRoot) }
        let root = allocatePathNode(PathNode(
            state: UInt32(s), parent: noIndex, firstSub: noIndex, nextFree: noIndex,
            version: states[s].version, pointer: JSONPointer(tokens: []), text: [], children: [:]))
        bases[b].pathRoot = UInt32(root)
        states[s].pathReaders = true
        return root
    }

    private func allocatePathNode(_ node: PathNode) -> Int {
        livePathNodes += 1
        if firstFreePath != noIndex {
            let p = Int(firstFreePath)
            firstFreePath = pathNodes[p].nextFree
            pathNodes[p] = node
            return p
        }
        // Within NodeRef's index bits; no graph gets near it (each path node
        // is a part some live reader reads).
        precondition(pathNodes.count < Int(NodeRef.pathBit), "too many paths read")
        pathNodes.append(node)
        return pathNodes.count - 1
    }

    /// Called when node `p` lost its last reader: frees it unless paths
    /// below it are still read, then its parent on the same terms, up to
    /// the root; the state has no path readers once the root goes.
    func releasePathNode(_ p: Int) {
        var p = p
        while pathNodes[p].firstSub == noIndex && pathNodes[p].children.isEmpty {
            let parent = pathNodes[p].parent
            if parent == noIndex {
                let s = Int(pathNodes[p].state)
                bases[Int(states[s].base)].pathRoot = noIndex
                states[s].pathReaders = false
                freePathNode(p)
                return
            }
            pathNodes[Int(parent)].children[pathNodes[p].pointer.tokens[pathNodes[p].pointer.tokens.count - 1]] = nil
            freePathNode(p)
            p = Int(parent)
        }
    }

    private func freePathNode(_ p: Int) {
        pathNodes[p] = PathNode.free(next: firstFreePath)
        firstFreePath = UInt32(p)
        livePathNodes -= 1
    }

    // MARK: Waking on a write

    /// A changing write at `written` (nil: the whole value) gave state `s`
    /// its new version; `old` is the value it replaced. Wakes every path the
    /// write may have changed (see the top of this file): each node on the
    /// way to `written` and the subtree at it — at the array instead, when
    /// `written` names an element of one. Walks only those nodes: a write
    /// to one of 1,000 fields read by path touches one node, not 1,000.
    func wakePaths(_ s: Int, at written: JSONPointer?, old: Value, round: UInt32) {
        let version = states[s].version
        var node = Int(bases[Int(states[s].base)].pathRoot)
        if let tokens = written?.tokens {
            for k in tokens.indices {
                if k == tokens.count - 1, case .array? = old.valueIfPresent(at: pathNodes[node].pointer) {
                    break  // an element: the whole array (this node is woken already)
                }
                guard let child = pathNodes[node].children[tokens[k]] else { return }
                node = Int(child)
                wakePath(node, version: version, round: round)
            }
        }
        wakeSubtree(below: node, version: version, round: round)
    }

    /// `wakePaths` for a commit's operations on one state, each a write.
    func wakePaths(_ s: Int, ops: [WriteOp], old: Value, round: UInt32) {
        for op in ops {
            switch op {
            case .set:
                wakePaths(s, at: nil, old: old, round: round)
                return
            case let .put(_, at: path):
                wakePaths(s, at: path.isRoot ? nil : path, old: old, round: round)
                if path.isRoot { return }
            case let .remove(at: path):
                wakePaths(s, at: path, old: old, round: round)
            }
        }
    }

    @inline(__always)
    private func wakePath(_ p: Int, version: UInt64, round: UInt32) {
        pathNodes[p].version = version
        if pathNodes[p].firstSub != noIndex { propagate(from: NodeRef.path(p), round: round) }
    }

    /// Wakes every node below `top` (not `top` itself).
    private func wakeSubtree(below top: Int, version: UInt64, round: UInt32) {
        guard !pathNodes[top].children.isEmpty else { return }
        pathStack.removeAll()
        pathStack.append(top)
        while let n = pathStack.popLast() {
            for child in pathNodes[n].children.values {
                let c = Int(child)
                wakePath(c, version: version, round: round)
                if !pathNodes[c].children.isEmpty { pathStack.append(c) }
            }
        }
    }

    // MARK: Freeing the state

    /// State `s` is being freed: every path reader is woken and unlinked
    /// (as `unlinkSubscribers` does for whole-value readers), deepest paths
    /// first, and the trie goes with its last path.
    func unlinkPathReaders(of s: Int) {
        let root = Int(bases[Int(states[s].base)].pathRoot)
        var order = [root]
        var k = 0
        while k < order.count {
            for child in pathNodes[order[k]].children.values { order.append(Int(child)) }
            k += 1
        }
        // Children come after their parents in `order`: walk it backwards. A
        // node freed meanwhile (it had no reader, and its last child went)
        // is skipped: nothing allocates path nodes here, so its slot is free.
        for p in order.reversed() where p != root && pathNodes[p].state == UInt32(s) {
            unlinkSubscribers(of: NodeRef.path(p))
        }
    }

    /// How many parts of the state `id` names are tracked by path now
    /// (tests: nodes of its trie, the root not counted).
    func trackedPathCount(of id: StateID) -> Int {
        let s = Int(id.index)
        guard states[s].pathReaders else { return 0 }
        var n = 0
        var stack = [Int(bases[Int(states[s].base)].pathRoot)]
        while let p = stack.popLast() {
            for child in pathNodes[p].children.values {
                n += 1
                stack.append(Int(child))
            }
        }
        return n
    }
}
