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
// to the state itself, as before; what they pay for paths is one flag test
// per changing write (`bumpVersion`) and a branch where a link's source
// kind is told apart.
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
    var children: PathChildren

    static func free(next: UInt32) -> PathNode {
        PathNode(state: noIndex, parent: noIndex, firstSub: noIndex, nextFree: next, version: 0,
                 pointer: JSONPointer(tokens: []), text: [], children: PathChildren())
    }
}

/// The children of a path node, by token. A `Dictionary` keyed by `String`
/// (or by `MemberKey`) hashed every lookup with SipHash: ~300 instructions
/// of a ~700-instruction wake (profiled). Here: a list scanned by the
/// tokens' cached mixes (`MemberKey`) while short, with an open-addressing
/// index once longer (linear probing, backward-shift deletion), so a
/// lookup, an insert and a removal cost the same at any width — a state of
/// 1,000 fields read by path has 1,000 children at its root. Order carries
/// no meaning: a removal moves the last child into the hole.
struct PathChildren {
    private(set) var keys: [MemberKey] = []
    /// The child nodes, `keys[i]`'s at `nodes[i]`.
    private(set) var nodes: [UInt32] = []
    /// Positions in `keys`, -1 for an empty slot; empty while short.
    private var slots: [Int32] = []
    private static let indexFrom = 9

    var isEmpty: Bool { keys.isEmpty }
    var count: Int { keys.count }

    func find(_ key: MemberKey) -> UInt32? {
        guard let i = position(of: key) else { return nil }
        return nodes[i]
    }

    private func position(of key: MemberKey) -> Int? {
        if slots.isEmpty {
            for i in keys.indices where keys[i] == key { return i }
            return nil
        }
        let mask = slots.count - 1
        var b = key.bytesHash & mask
        while true {
            let p = Int(slots[b])
            if p < 0 { return nil }
            if keys[p] == key { return p }
            b = (b + 1) & mask
        }
    }

    /// Adds a child; `key` must not be there yet.
    mutating func insert(_ key: MemberKey, _ node: UInt32) {
        keys.append(key)
        nodes.append(node)
        if slots.isEmpty {
            if keys.count >= PathChildren.indexFrom { rebuild() }
        } else if keys.count * 4 > slots.count * 3 {
            rebuild()
        } else {
            place(keys.count - 1)
        }
    }

    mutating func remove(_ key: MemberKey) {
        guard let i = position(of: key) else { return }
        let last = keys.count - 1
        if !slots.isEmpty {
            unplace(i)
            if i != last { slots[slot(of: last)] = Int32(i) }
        }
        keys.swapAt(i, last)
        nodes.swapAt(i, last)
        keys.removeLast()
        nodes.removeLast()
        if keys.isEmpty { slots = [] }
    }

    private mutating func place(_ position: Int) {
        let mask = slots.count - 1
        var b = keys[position].bytesHash & mask
        while slots[b] >= 0 { b = (b + 1) & mask }
        slots[b] = Int32(position)
    }

    private func slot(of position: Int) -> Int {
        let mask = slots.count - 1
        var b = keys[position].bytesHash & mask
        while Int(slots[b]) != position { b = (b + 1) & mask }
        return b
    }

    /// Empties the slot of `position`, shifting later entries of its probe
    /// run back so every entry stays reachable from its home slot.
    private mutating func unplace(_ position: Int) {
        let mask = slots.count - 1
        var hole = slot(of: position)
        var j = (hole + 1) & mask
        while slots[j] >= 0 {
            let home = keys[Int(slots[j])].bytesHash & mask
            if (j &- home) & mask >= (j &- hole) & mask {
                slots[hole] = slots[j]
                hole = j
            }
            j = (j + 1) & mask
        }
        slots[hole] = -1
    }

    private mutating func rebuild() {
        var size = 16
        while size * 3 < keys.count * 4 { size *= 2 }
        slots = Array(repeating: -1, count: size)
        for i in keys.indices { place(i) }
    }
}

/// Whether `text` (a path node's) spells `bytes` (a pointer's text from C).
/// A free function on the field: a method of `PathNode` called through the
/// buffer copied the whole node out and destroyed the copy (profiled).
@inline(__always)
private func spells(_ text: [UInt8], _ bytes: UnsafeRawBufferPointer) -> Bool {
    text.withUnsafeBytes { mine in
        mine.count == bytes.count && (mine.count == 0 || memcmp(mine.baseAddress!, bytes.baseAddress!, mine.count) == 0)
    }
}

/// Whether a token can name an array element ("-" or digits): only a write
/// at such a token can be a write to an element.
@inline(__always)
private func isIndexToken(_ token: String) -> Bool {
    var count = 0
    for b in token.utf8 {
        count += 1
        if b < UInt8(ascii: "0") || b > UInt8(ascii: "9") {
            return count == 1 && b == UInt8(ascii: "-") && token.utf8.count == 1
        }
    }
    return count > 0
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
        if let e = expectedPath(top), pathNodes[e].state == UInt32(s), spells(pathNodes[e].text, path.bytes) {
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
            let key = MemberKey(tokens[k])
            if let child = pathNodes[node].children.find(key) {
                node = Int(child)
                continue
            }
            let child = allocatePathNode(PathNode(
                state: UInt32(s), parent: UInt32(node), firstSub: noIndex, nextFree: noIndex,
                version: states[s].version, pointer: JSONPointer(tokens: Array(tokens[...k])),
                text: Array(JSONPointer.text(of: tokens[...k]).utf8), children: PathChildren()))
            pathNodes[node].children.insert(key, UInt32(child))
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
            version: states[s].version, pointer: JSONPointer(tokens: []), text: [], children: PathChildren()))
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
            let tokens = pathNodes[p].pointer.tokens
            pathNodes[Int(parent)].children.remove(MemberKey(tokens[tokens.count - 1]))
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
    /// its new version. Wakes every path the
    /// write may have changed (see the top of this file): each node on the
    /// way to `written` and the subtree at it — at the array instead, when
    /// `written` names an element of one. Walks only those nodes: a write
    /// to one of 1,000 fields read by path touches one node, not 1,000.
    ///
    /// Whether the written path names an array element is asked of the new
    /// value: a write below a container does not change the container's
    /// type. (In a commit, an earlier operation that did change it wrote the
    /// container or above, and woke everything below it.)
    func wakePaths(_ s: Int, at written: JSONPointer?, round: UInt32) {
        let version = states[s].version
        var node = Int(bases[Int(states[s].base)].pathRoot)
        if let tokens = written?.tokens {
            for k in tokens.indices {
                if k == tokens.count - 1, isIndexToken(tokens[k]),
                   case .array? = states[s].value.valueIfPresent(at: pathNodes[node].pointer) {
                    break  // an element: the whole array (this node is woken already)
                }
                guard let child = pathNodes[node].children.find(MemberKey(tokens[k])) else { return }
                node = Int(child)
                wakePath(node, version: version, round: round)
            }
        }
        wakeSubtree(below: node, version: version, round: round)
    }

    /// `wakePaths` for a commit's operations on one state, each a write.
    func wakePaths(_ s: Int, ops: [WriteOp], round: UInt32) {
        for op in ops {
            switch op {
            case .set:
                wakePaths(s, at: nil, round: round)
                return
            case let .put(_, at: path):
                wakePaths(s, at: path.isRoot ? nil : path, round: round)
                if path.isRoot { return }
            case let .remove(at: path):
                wakePaths(s, at: path, round: round)
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
            for child in pathNodes[n].children.nodes {
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
            for child in pathNodes[order[k]].children.nodes { order.append(Int(child)) }
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
            for child in pathNodes[p].children.nodes {
                n += 1
                stack.append(Int(child))
            }
        }
        return n
    }
}
