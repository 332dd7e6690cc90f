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

    init(session: Session, parameters: WatchParameters) {
        self.session = session
        self.parameters = parameters
    }

    func covers(_ name: String) -> Bool { parameters.covers(name) }

    /// The changes of `commit` this watch is sent, with paths seen from
    /// its own path: changes at or below it as they are, a change above it
    /// as a set (or remove) of what is now at the watch's path, siblings
    /// not at all.
    func filter(_ commit: Commit) -> [Change] {
        var result: [Change] = []
        let path = parameters.path
        for change in commit.changes where covers(change.name) {
            if path.isRoot || path.isPrefix(of: change.path) {
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
}
