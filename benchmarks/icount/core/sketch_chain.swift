// sketch_chain.swift — the 50-deep chain on a sketch of a leaner propagation
// core, for comparison with core_chain.swift (TetherCore alone): how many
// instructions a recompute costs in alien-signals' shape, written in Swift
// with the same closures as computes. Built alone by core_chain.py
// (--sketch); not a part of Tether, and deliberately partial: int values
// only, one thread, no errors, cycles, effects, transactions, paths or
// frees. It answers one question for docs/performance.md ("Where the floor
// is"): how much of TetherCore's ~212 instructions a node the model itself
// needs, with everything Tether adds taken away.
//
// The shape: a flag word per node. A write marks its readers dirty and
// theirs pending (the push); a read of a pending node checks its sources in
// read order, bringing pending computed ones up to date first, and
// recomputes only when one of them changed (the pull); a recompute whose
// value is equal leaves its readers pending-but-clean (the cutoff). Links
// are reused in read order through a cursor, as TetherCore's are.

struct SketchNode {
    var flags: UInt32 = 0         // dirty 1, pending 2, computing 4
    var value: Int64 = 0
    var firstDep: Int32 = -1, lastDep: Int32 = -1, cursor: Int32 = -1
    var firstSub: Int32 = -1, lastSub: Int32 = -1
    var changedAt: UInt64 = 0     // the pull's round in which the value last changed
}

struct SketchLink {
    var dep: Int32, sub: Int32
    var nextDep: Int32 = -1, nextSub: Int32 = -1
}

final class SketchCore {
    static let dirty: UInt32 = 1, pending: UInt32 = 2, computing: UInt32 = 4
    var nodes: UnsafeMutablePointer<SketchNode>
    var links: UnsafeMutablePointer<SketchLink>
    var nodeCount = 0, linkCount = 0
    var computes: [((SketchCore) -> Int64)?] = []
    var evaluating: Int32 = -1
    var round: UInt64 = 1

    init(capacity: Int) {
        nodes = .allocate(capacity: capacity)
        links = .allocate(capacity: capacity * 2)
    }

    func state(_ v: Int64) -> Int32 {
        nodes[nodeCount] = SketchNode(value: v)
        computes.append(nil)
        nodeCount += 1
        return Int32(nodeCount - 1)
    }

    func computed(_ fn: @escaping (SketchCore) -> Int64) -> Int32 {
        nodes[nodeCount] = SketchNode(flags: SketchCore.dirty)
        computes.append(fn)
        nodeCount += 1
        return Int32(nodeCount - 1)
    }

    /// A read: brings a computed up to date, and links the reader to it.
    @inline(__always)
    func read(_ n: Int32) -> Int64 {
        if nodes[Int(n)].flags & (SketchCore.dirty | SketchCore.pending) != 0 { update(n) }
        if evaluating >= 0 { track(n) }
        return nodes[Int(n)].value
    }

    @inline(__always)
    func track(_ dep: Int32) {
        let sub = Int(evaluating)
        let c = nodes[sub].cursor
        if c >= 0 && links[Int(c)].dep == dep {
            nodes[sub].cursor = links[Int(c)].nextDep
            return
        }
        newLink(dep, sub: Int32(sub))
    }

    @inline(never)
    func newLink(_ dep: Int32, sub: Int32) {
        // The sketch's graphs never change shape after their first run.
        let l = Int32(linkCount)
        links[linkCount] = SketchLink(dep: dep, sub: sub)
        linkCount += 1
        if nodes[Int(sub)].lastDep >= 0 { links[Int(nodes[Int(sub)].lastDep)].nextDep = l } else { nodes[Int(sub)].firstDep = l }
        nodes[Int(sub)].lastDep = l
        if nodes[Int(dep)].lastSub >= 0 { links[Int(nodes[Int(dep)].lastSub)].nextSub = l } else { nodes[Int(dep)].firstSub = l }
        nodes[Int(dep)].lastSub = l
    }

    /// The pull: dirty recomputes; pending checks its sources in order.
    func update(_ n: Int32) {
        let i = Int(n)
        if nodes[i].flags & SketchCore.dirty == 0 {
            var l = nodes[i].firstDep
            var changed = false
            while l >= 0 {
                let dep = Int(links[Int(l)].dep)
                if nodes[dep].flags & (SketchCore.dirty | SketchCore.pending) != 0 { update(Int32(dep)) }
                if nodes[dep].changedAt == round { changed = true; break }
                l = links[Int(l)].nextDep
            }
            if !changed {
                nodes[i].flags &= ~SketchCore.pending
                return
            }
        }
        recompute(n)
    }

    func recompute(_ n: Int32) {
        let i = Int(n)
        nodes[i].flags = SketchCore.computing
        nodes[i].cursor = nodes[i].firstDep
        let outer = evaluating
        evaluating = n
        let v = computes[i].unsafelyUnwrapped(self)
        evaluating = outer
        nodes[i].flags = 0
        if v != nodes[i].value {
            nodes[i].value = v
            nodes[i].changedAt = round
        }
    }

    /// A write: the push marks readers dirty and theirs pending.
    func write(_ n: Int32, _ v: Int64) {
        let i = Int(n)
        if nodes[i].value == v { return }
        round &+= 1
        nodes[i].value = v
        nodes[i].changedAt = round
        var l = nodes[i].firstSub
        while l >= 0 {
            mark(links[Int(l)].sub, SketchCore.dirty)
            l = links[Int(l)].nextSub
        }
    }

    private func mark(_ n: Int32, _ flag: UInt32) {
        var node = Int(n), flag = flag
        while true {
            if nodes[node].flags & (SketchCore.dirty | SketchCore.pending) != 0 {
                nodes[node].flags |= flag
                return
            }
            nodes[node].flags |= flag
            let l = nodes[node].firstSub
            if l < 0 { return }
            if links[Int(l)].nextSub >= 0 {
                var m = links[Int(l)].nextSub
                while m >= 0 { mark(links[Int(m)].sub, SketchCore.pending); m = links[Int(m)].nextSub }
            }
            node = Int(links[Int(l)].sub)
            flag = SketchCore.pending
        }
    }
}

@main struct SketchChain {
    static func main() {
        guard CommandLine.arguments.count == 2, let writes = Int(CommandLine.arguments[1]), writes >= 0 else {
            print("usage: sketch_chain WRITES")
            return
        }
        let core = SketchCore(capacity: 64)
        let head = core.state(0)
        var previous = head
        for _ in 0..<50 {
            let source = previous
            previous = core.computed { c in c.read(source) + 1 }
        }
        var sum: Int64 = 0
        for i in 0..<writes {
            core.write(head, Int64(i + 1))
            sum &+= core.read(previous)
        }
        let expected = Int64(writes) * Int64(writes + 1) / 2 + 50 * Int64(writes)
        print(sum == expected ? "ok \(sum)" : "WRONG \(sum), expected \(expected)")
    }
}
