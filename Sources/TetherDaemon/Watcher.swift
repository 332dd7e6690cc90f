import TetherCore
import TetherWire

/// One Watch: which states and which path it covers, and how far it has
/// been sent. It belongs to the session that called Watch (a Watch holds
/// its connection until it closes).
final class Watcher {
    unowned let session: Session
    let parameters: WatchParameters
    /// The last revision this watch has been sent (a change or progress).
    var sentRevision: UInt64 = 0
    /// Whether anything was sent since the last idle tick.
    var sentSinceTick = false
    /// Its peer stopped reading: changes after `sentRevision` wait in the
    /// commit log (or become a resync) until it drains.
    var behind = false
    /// The snapshot still being sent (nil once its progress reply went).
    /// While it is, the watch is `behind`: commits wait in the log and are
    /// sent, for the states whose snapshot reply went, before the next
    /// slice of the snapshot (`Service.catchUp`).
    var stream: SnapshotStream?
    /// Its snapshot's last slice ended at the slice size, not at the
    /// buffer: the next slice waits for the loop's next turn
    /// (`Service.resumeWatch`), so a peer that reads as fast as it is
    /// written still lets every other connection be served in between.
    var yielded = false

    init(session: Session, parameters: WatchParameters) {
        self.session = session
        self.parameters = parameters
    }

    /// Whether changes to `name` are sent: it is watched, and its snapshot
    /// reply, if one is still being sent, went already.
    func covers(_ name: String) -> Bool {
        guard parameters.covers(name) else { return false }
        return stream?.hasSent(name) ?? true
    }

    /// The changes of `commit` this watch is sent, with paths seen from
    /// its own path: changes at or below it as they are, a change above it
    /// as a set (or remove) of what is now at the watch's path, siblings
    /// not at all, except array changes that move it: a remove of an
    /// earlier element, of the element at the path or of one holding it
    /// shifts the elements after it, and an append may create the watched
    /// index. For those the value now at the path is sent, which only the
    /// live store knows (`current`, the state's value after this commit),
    /// in place of every change the commit made to that state (a later
    /// change of the same commit may not apply to what was sent);
    /// replaying history without it returns nil, and the watch resyncs
    /// instead of guessing.
    func filter(_ commit: Commit, current: ((String) -> Value?)?) -> [Change]? {
        var result: [Change] = []
        let path = parameters.path
        var settled: Set<String> = []  // states sent as the commit left them
        for change in commit.changes where covers(change.name) && !settled.contains(change.name) {
            if Watcher.mayMove(path, by: change) {
                guard let current else { return nil }
                settled.insert(change.name)
                result.removeAll { $0.name == change.name }
                if let part = current(change.name)?.valueIfPresent(at: path) {
                    result.append(Change(name: change.name, path: path, write: .set(part)))
                } else {
                    result.append(Change(name: change.name, path: path, write: .remove))
                }
            } else if path.isRoot || path.isPrefix(of: change.path) {
                result.append(change)
            } else if change.path.isPrefix(of: path) {
                let below = JSONPointer(tokens: Array(path.tokens[change.path.tokens.count...]))
                if case .set(let value) = change.write, let part = value.valueIfPresent(at: below) {
                    result.append(Change(name: change.name, path: path, write: .set(part)))
                } else {
                    result.append(Change(name: change.name, path: path, write: .remove))
                }
            }
        }
        return result
    }

    /// Whether `change` can move what `path` names: a remove at the path
    /// or above it whose last token may be an array index (the next
    /// element moves into its place), or a change at a sibling of `path`
    /// or below one where both step into the same array at one level and
    /// the change removes an element before the watched index, or appends
    /// ("-").
    static func mayMove(_ path: JSONPointer, by change: Change) -> Bool {
        if case .remove = change.write, let last = change.path.tokens.last, change.path.isPrefix(of: path),
           !last.isEmpty, last.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return true
        }
        let a = change.path.tokens, b = path.tokens
        var k = 0
        while k < a.count && k < b.count && a[k] == b[k] { k += 1 }
        guard k < a.count && k < b.count, let watched = Int(b[k]) else { return false }
        if a[k] == "-" { return true }
        guard case .remove = change.write, a.count == k + 1, let removed = Int(a[k]) else { return false }
        return removed <= watched
    }
}
