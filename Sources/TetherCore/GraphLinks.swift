/// The dependency edges: recording reads, reusing links, unlinking.
extension Graph {
    /// Records that the node being evaluated read `dep` at `version`.
    /// Reading the same sources in the same order as last time only moves a
    /// cursor over the existing links and refreshes their versions.
    ///
    /// The common cases are inline in the reader: the same source as last
    /// time, at the cursor; and, past the last link, the last source read
    /// again (a loop over one source: kairo repeatedObservers reads one
    /// state 30 times, and the call to `trackMoved` for each repeat was 9%
    /// of it, profiled). The rest is `trackMoved`.
    @inline(__always)
    func track(_ dep: UInt32, version: UInt64) {
        let top = trackTarget
        guard top >= 0 else { return }
        let cursor = derived[top].cursor
        if cursor != noIndex {
            if links[Int(cursor)].dep == dep {
                links[Int(cursor)].version = version
                derived[top].cursor = links[Int(cursor)].nextDep
                return
            }
        } else {
            let last = derived[top].lastDep
            if last != noIndex, links[Int(last)].dep == dep {
                links[Int(last)].version = version
                return
            }
        }
        trackMoved(dep, version: version, top: top, cursor: cursor)
    }

    /// How far back `trackMoved` looks among this evaluation's links for a
    /// source read already: far enough for reads that alternate between a
    /// few sources, short enough to cost little when the source is new.
    static let repeatWindow = 4

    @inline(never)
    private func trackMoved(_ dep: UInt32, version: UInt64, top: Int, cursor: UInt32) {
        // The links before the cursor are this evaluation's reads. A source
        // read again among the last few (a loop over one source, or reads
        // alternating between two: kairo unstable reads head, c1, head, c1,
        // ... 20 times) keeps its one edge. Without this, the alternation
        // made a link per read and, once the branch switched, unlinked and
        // relinked all 40 on every evaluation (profiled).
        let previous = cursor != noIndex ? links[Int(cursor)].prevDep : derived[top].lastDep
        var seen = previous
        var looked = 0
        while seen != noIndex && looked < Graph.repeatWindow {
            if links[Int(seen)].dep == dep {
                links[Int(seen)].version = version
                return
            }
            seen = links[Int(seen)].prevDep
            looked += 1
        }
        let l = allocateLink(Link(dep: dep, sub: UInt32(top), version: version, prevDep: previous,
                                  nextDep: cursor, prevSub: noIndex, nextSub: noIndex))
        if previous != noIndex { links[Int(previous)].nextDep = l } else { derived[top].firstDep = l }
        if cursor != noIndex { links[Int(cursor)].prevDep = l } else { derived[top].lastDep = l }
        linkSubscriber(l, to: dep)
    }

    /// How many dependency edges the node `id` names holds (for tests:
    /// reads repeated in one evaluation keep one edge).
    func dependencyCount(of id: DerivedID) -> Int {
        var n = 0
        var l = derived[Int(id.index)].firstDep
        while l != noIndex {
            n += 1
            l = links[Int(l)].nextDep
        }
        return n
    }

    private func allocateLink(_ link: Link) -> UInt32 {
        if firstFreeLink != noIndex {
            let l = firstFreeLink
            firstFreeLink = links[Int(l)].nextDep
            links[Int(l)] = link
            return l
        }
        links.append(link)
        return UInt32(links.count - 1)
    }

    private func linkSubscriber(_ l: UInt32, to dep: UInt32) {
        let i = NodeRef.index(dep)
        if NodeRef.isDerived(dep) {
            let last = derived[i].lastSub
            links[Int(l)].prevSub = last
            if last != noIndex { links[Int(last)].nextSub = l } else { derived[i].firstSub = l }
            derived[i].lastSub = l
        } else {
            // A state's readers: newest first (StateNode has no tail index).
            let first = states[i].firstSub
            links[Int(l)].prevSub = noIndex
            links[Int(l)].nextSub = first
            if first != noIndex { links[Int(first)].prevSub = l }
            states[i].firstSub = l
        }
    }

    @inline(__always)
    func firstSubscriber(of ref: UInt32) -> UInt32 {
        NodeRef.isDerived(ref) ? derived[NodeRef.index(ref)].firstSub : states[NodeRef.index(ref)].firstSub
    }

    /// Takes a link out of both of its lists and frees it.
    func removeLink(_ l: UInt32) {
        let link = links[Int(l)]
        let sub = Int(link.sub)
        if link.prevDep != noIndex { links[Int(link.prevDep)].nextDep = link.nextDep } else { derived[sub].firstDep = link.nextDep }
        if link.nextDep != noIndex { links[Int(link.nextDep)].prevDep = link.prevDep } else { derived[sub].lastDep = link.prevDep }
        if derived[sub].cursor == l { derived[sub].cursor = link.nextDep }
        let i = NodeRef.index(link.dep)
        if NodeRef.isDerived(link.dep) {
            if link.prevSub != noIndex { links[Int(link.prevSub)].nextSub = link.nextSub } else { derived[i].firstSub = link.nextSub }
            if link.nextSub != noIndex { links[Int(link.nextSub)].prevSub = link.prevSub } else { derived[i].lastSub = link.prevSub }
        } else {
            if link.prevSub != noIndex { links[Int(link.prevSub)].nextSub = link.nextSub } else { states[i].firstSub = link.nextSub }
            if link.nextSub != noIndex { links[Int(link.nextSub)].prevSub = link.prevSub }
        }
        links[Int(l)].nextDep = firstFreeLink
        links[Int(l)].dep = noIndex
        firstFreeLink = l
    }

    /// After an evaluation: the links past the cursor were not read this time.
    /// Inline: most evaluations read the same sources again, leaving none.
    @inline(__always)
    func trimDependencies(_ d: Int) {
        if derived[d].cursor != noIndex { unlinkPastCursor(d) }
    }

    @inline(never)
    private func unlinkPastCursor(_ d: Int) {
        var l = derived[d].cursor
        while l != noIndex {
            let next = links[Int(l)].nextDep
            removeLink(l)
            l = next
        }
        derived[d].cursor = noIndex
    }

    func unlinkDependencies(_ d: Int) {
        derived[d].cursor = noIndex
        var l = derived[d].firstDep
        while l != noIndex {
            let next = links[Int(l)].nextDep
            removeLink(l)
            l = next
        }
    }

    /// A source is going away: its readers are woken and must re-evaluate
    /// (marked fresh: with the edge gone, no version could tell them), so
    /// they find the source stale when they read it again.
    func unlinkSubscribers(of ref: UInt32) {
        guard firstSubscriber(of: ref) != noIndex else { return }
        propagate(from: ref, round: 0)
        var l = firstSubscriber(of: ref)
        while l != noIndex {
            let next = links[Int(l)].nextSub
            derived[Int(links[Int(l)].sub)].flags.insert(.fresh)
            removeLink(l)
            l = next
        }
    }
}
