import TetherCore
import TetherDaemon
import TetherWire

/// A message of the input as a violation names it, made only when one is
/// reported: quoting every message up front (a String, its debug
/// description) was 1% of the fast target's time. Used only while the
/// message's bytes are alive (one `deliver`).
struct MessageName: CustomStringConvertible {
    let bytes: UnsafeRawBufferPointer
    var description: String { "message \(String(decoding: bytes.prefix(120), as: UTF8.self).debugDescription)" }
}

/// A value as compact JSON, for messages.
func text(_ value: Value?) -> String {
    guard let value else { return "(absent)" }
    return (try? value.jsonString()) ?? "\(value)"
}

/// A session and what it was answered.
final class Client {
    let session: Session
    private var decoder = MessageDecoder(maxMessage: DaemonFuzzer.limits.maxReply)
    var watching = false
    /// A peer the policy grants nothing.
    var stranger = false
    /// For a watch: the path it watches, what it was sent, and the states
    /// its changes rebuild (name -> value at its path).
    var watchPath = JSONPointer.root
    var changes: [Recorded] = []
    var mirror: [String: Value] = [:]
    var resynced = false
    private var lastSeen: UInt64?

    struct Recorded: Equatable {
        var revision: UInt64
        var changes: [TetherWire.Change]
        var tag: String?
        var origin: UInt64?
    }

    let store: Store

    init(_ session: Session, store: Store) {
        self.session = session
        self.store = store
    }

    @discardableResult
    func call(_ method: String, _ parameters: [String: Value], more: Bool = false) -> [Reply] {
        var object = ValueObject()
        for (k, v) in parameters.sorted(by: { $0.key < $1.key }) { object[k] = v }
        if method == TetherMethod.watch.qualifiedName, case .string(let p)? = parameters["path"] {
            watchPath = (try? JSONPointer(parsing: p)) ?? .root
        }
        var out: [UInt8] = []
        try! MessageEncoder.append(Call(method: method, parameters: object, more: more), to: &out)
        out.withUnsafeBytes { session.receive($0) }
        if more { watching = true; return [] }
        var ignored: [String] = []
        return replies(&ignored)
    }

    /// The replies written since the last call; malformed output is a problem.
    func replies(_ problems: inout [String]) -> [Reply] {
        messages(&problems).map(\.reply)
    }

    /// The replies written since the last call, each with its bytes.
    private func messages(_ problems: inout [String]) -> [(bytes: [UInt8], reply: Reply)] {
        let bytes = session.takeOutput()
        if let last = bytes.last, last != 0 { problems.append("output that does not end with a NUL") }
        decoder.append(bytes)
        var result: [(bytes: [UInt8], reply: Reply)] = []
        while true {
            do {
                guard let message = try decoder.next() else { break }
                result.append((message, try Decodes.reply(message).get()))
            } catch {
                problems.append("output that is not a sequence of replies: \(error)")
                break
            }
        }
        return result
    }

    /// The revision of the store the session belongs to.
    var storeRevision: UInt64 { store.revision }

    /// Reads a watch's pending replies into `changes` and `mirror`.
    func drain(_ problems: inout [String]) {
        noteWatch(messages(&problems), &problems)
    }

    private func noteWatch(_ replies: [(bytes: [UInt8], reply: Reply)], _ problems: inout [String]) {
        for (bytes, r) in replies {
            guard r.error == nil else { problems.append("a watch failed: \(r.error!) \(text(.object(r.parameters)))"); continue }
            guard let w = Decodes.watchReply(bytes, r) else {
                problems.append("a watch reply that is not a WatchReply: \(text(.object(r.parameters)))")
                continue
            }
            if w.epoch != DaemonFuzzer.epoch { problems.append("a watch reply in epoch \(w.epoch)") }
            switch w.event {
            case .snapshot(let entry, let resync):
                if resync && !resynced { mirror = [:] }
                resynced = resynced || resync
                mirror[entry.name] = entry.value
            case .progress(let resync):
                // A resync that found no state to send ends here.
                if resync && !resynced { mirror = [:] }
                resynced = resynced || resync
                if let last = lastSeen, w.revision < last { problems.append("progress at \(w.revision) after \(last)") }
                if w.revision > storeRevision { problems.append("progress at \(w.revision), past the store's \(storeRevision)") }
                lastSeen = w.revision
            case .change(let list, let tag, let origin):
                if w.revision > storeRevision { problems.append("a change at \(w.revision), past the store's \(storeRevision)") }
                if let last = lastSeen, w.revision <= last {
                    problems.append("a change at \(w.revision) after \(last)")
                }
                lastSeen = w.revision
                changes.append(Recorded(revision: w.revision, changes: list, tag: tag, origin: origin))
                for change in list { apply(change, &problems) }
            }
        }
    }

    /// A change as a watcher applies it: at its path, or below it.
    private func apply(_ change: TetherWire.Change, _ problems: inout [String]) {
        let path = watchPath
        guard path.isPrefix(of: change.path) else {
            problems.append("a watch at \(path) got a change at \(change.path)")
            return
        }
        let below = JSONPointer(tokens: Array(change.path.tokens[path.tokens.count...]))
        if below.isRoot {
            switch change.write {
            case .set(let v): mirror[change.name] = v
            case .remove:
                if path.isRoot && mirror[change.name] == nil {
                    problems.append("a remove of \(change.name), which the watch did not have")
                }
                mirror[change.name] = nil
            }
            return
        }
        guard var value = mirror[change.name] else {
            problems.append("a change at \(change.path) of \(change.name), which the watch does not have at \(path)")
            return
        }
        do {
            switch change.write {
            case .set(let v): try value.set(v, at: below)
            case .remove: _ = try value.remove(at: below)
            }
            mirror[change.name] = value
        } catch {
            problems.append("a change at \(change.path) of \(change.name) does not apply to the watch's copy: \(error)")
        }
    }
}
