import TetherCore
import TetherWire

/// A watch's snapshot while it is being sent (issue 30 §5): a cursor into
/// the store's sorted names, so a snapshot of a million states is sent a
/// slice at a time while its peer reads, and costs a peer that does not
/// read no more than the watch buffer. Each snapshot reply carries the
/// revision at which its value was read; a commit touching a state is sent
/// to the watch only once that state's snapshot reply was (states not sent
/// yet show it in their snapshot reply). docs/protocol.md, "Watch".
final class SnapshotStream {
    /// Whether the snapshot replaces what the client had (a resync).
    let resync: Bool
    /// The listed names (`WatchParameters.names`) as a set: the prefix part
    /// skips them (they were sent first).
    let listed: Set<String>
    /// The next listed name to send (an index into `names`).
    var nextListed = 0
    /// Listed names sent so far (a name listed twice is sent once).
    var sentListed: Set<String> = []
    /// The last name of the prefix part sent; nil: none yet.
    var lastPrefixName: String?
    /// Whether every name of the prefix part has been sent.
    var prefixDone = false

    init(parameters: WatchParameters, resync: Bool) {
        self.resync = resync
        listed = Set(parameters.names)
        prefixDone = parameters.prefix == nil
    }

    /// Whether `name` (covered by the watch) has had its snapshot reply.
    func hasSent(_ name: String) -> Bool {
        if listed.contains(name) { return sentListed.contains(name) }
        if prefixDone { return true }
        guard let last = lastPrefixName else { return false }
        return !Store.precedes(last, name)  // name <= last, in the store's byte order
    }
}

extension Store {
    /// The first name starting with `prefix` that sorts after `after` (the
    /// first with the prefix when nil), in the store's byte order: the
    /// snapshot cursor's next name, found by binary search in the sorted
    /// names (no copy of them).
    func name(withPrefix prefix: String, after: String?) -> String? {
        let from = after.map { Store.precedes($0, prefix) ? prefix : $0 } ?? prefix
        var p = sortedRecords.lowerBound(from)
        if let after, sortedRecords.name(at: p) == after { p = sortedRecords.after(p) }
        guard let name = sortedRecords.name(at: p), StateName.has(name, prefix: prefix) else { return nil }
        return name
    }
}
