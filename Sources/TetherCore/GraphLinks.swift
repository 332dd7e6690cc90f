// GraphLinks.swift — link storage: allocating a link, splicing it into a source's subscriber list, removing it.

/// The list surgery behind `track` and the unlinking in Propagation.swift:
/// a `Link` sits on its reader's dependency list and its source's
/// subscriber list at once, and free links are chained through `nextDep`.
extension Graph {
    /// A slot for a new link: the first free one, or a new one at the end.
    func allocateLink(_ link: Link) -> UInt32 {
        if firstFreeLink != noIndex {
            let l = firstFreeLink
            firstFreeLink = links[Int(l)].nextDep
            links[Int(l)] = link
            return l
        }
        links.append(link)
        return UInt32(links.count - 1)
    }

    /// Puts link `l` on the subscriber list of its source `dep`.
    func linkSubscriber(_ l: UInt32, to dep: UInt32) {
        let i = NodeRef.index(dep)
        if NodeRef.isDerived(dep) {
            let last = derived[i].lastSub
            links[Int(l)].prevSub = last
            if last != noIndex { links[Int(last)].nextSub = l } else { derived[i].firstSub = l }
            derived[i].lastSub = l
        } else if NodeRef.isPath(dep) {
            // A path's readers: newest first, as a state's.
            let first = pathNodes[i].firstSub
            links[Int(l)].prevSub = noIndex
            links[Int(l)].nextSub = first
            if first != noIndex { links[Int(first)].prevSub = l }
            pathNodes[i].firstSub = l
        } else {
            // A state's readers: newest first (StateNode has no tail index).
            let first = states[i].firstSub
            links[Int(l)].prevSub = noIndex
            links[Int(l)].nextSub = first
            if first != noIndex { links[Int(first)].prevSub = l }
            states[i].firstSub = l
        }
    }

    /// The first reader of a state, derived node or path (`NodeRef`).
    @inline(__always)
    func firstSubscriber(of ref: UInt32) -> UInt32 {
        if NodeRef.isState(ref) { return states[NodeRef.index(ref)].firstSub }
        return NodeRef.isDerived(ref) ? derived[NodeRef.index(ref)].firstSub : pathNodes[NodeRef.index(ref)].firstSub
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
        } else if NodeRef.isPath(link.dep) {
            if link.prevSub != noIndex { links[Int(link.prevSub)].nextSub = link.nextSub } else { pathNodes[i].firstSub = link.nextSub }
            if link.nextSub != noIndex { links[Int(link.nextSub)].prevSub = link.prevSub }
        } else {
            if link.prevSub != noIndex { links[Int(link.prevSub)].nextSub = link.nextSub } else { states[i].firstSub = link.nextSub }
            if link.nextSub != noIndex { links[Int(link.nextSub)].prevSub = link.prevSub }
        }
        links[Int(l)].nextDep = firstFreeLink
        links[Int(l)].dep = noIndex
        firstFreeLink = l
        // A path nobody reads any more (and with no path read below it)
        // leaves its state's trie.
        if NodeRef.isPath(link.dep) && pathNodes[i].firstSub == noIndex { releasePathNode(i) }
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
}
