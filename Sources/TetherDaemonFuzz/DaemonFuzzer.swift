import Glibc
import TetherCore
import TetherDaemon
import TetherWire

/// What the fuzzer (Sources/tetherd-fuzz, `make fuzz`) runs on each input,
/// in process, and what FuzzRegressionTests replays: the input is a byte
/// stream a client might send.
///
/// 1. **The frame decoder** (`MessageDecoder`) splits it the same way fed
///    whole or in small chunks, with a large limit and a small one, and
///    exactly as a model does (the input cut at each NUL; refused from the
///    first segment past the limit on).
/// 2. **The dispatcher**: a fresh in-process daemon (`Store` + `Service`)
///    with small limits, watched from the start by four sessions (every
///    state; every state at the paths `/0` and `/a/1`; the names `a` and
///    `b`). Each NUL-terminated message of the input goes to a client
///    session; when that session closes (a call after its Watch, a message
///    past the limit, a refused peer) the next message goes to a new one,
///    whose peer rotates among the owner, a granted uid (read-write `a`,
///    read `b`) and a stranger. (A Snapshot writes its copy into the
///    fuzzer's own directory, whatever path the input names.) After each
///    message:
///    - the session's output is a sequence of NUL-terminated replies, each
///      a valid Reply that the interface definition accepts (its output
///      type, or its error's fields, no unknown field);
///    - exactly one final reply per call (none for a oneway call), or a
///      stream for a Watch; the LimitExceeded of an oversize message;
///    - the revision never decreases, moves by at most one per call, and
///      only for a write that says it changed something;
///    and the idle timer ticks every third message (progress replies).
///    At the end:
///    - the watch of every state got one change reply per commit, with
///      revisions exactly 1...N, and applying them reproduces every
///      state (read back with List and Get);
///    - the path watches reproduce what Get at their path reads;
///    - a Watch from revision 0 replays what the live watch got (or
///      resyncs, flagged, when the log no longer holds revision 1);
///    - (the `fastpath` target, `FastPathCheck`) every message gets the
///      same reply bytes, revision and close from a pair of daemons, one
///      with the fast paths off;
///    - (the `store` target) the daemon's SQLite store (synced after each message, as the
///      daemon does at the end of each loop turn), opened again as a
///      restarted daemon would, holds the same revision, epoch, states
///      (Get and Describe answer the same) and log (a Watch from the
///      oldest revision replays the same replies).
///
/// A violation is returned as text; the fuzz target turns it into a crash.
public enum DaemonFuzzer {
    /// Small limits, so that a fuzzer's inputs (a few KiB) reach them.
    public static let limits = Limits(maxMessage: 2048, maxValue: 1024, maxOps: 16, maxNames: 16, maxNameLength: 64)
    static let logCapacity = 64
    static let epoch = "fuzz"
    static let pathWatches: [String] = ["/0", "/a/1"]
    /// Where the store reader's check writes an input that is an SQLite
    /// file (`SQLiteStore.checkReaders`).
    static let storeScratch: String = {
        var template = Array("/tmp/tetherd-fuzz-store.XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) } ?? "/tmp"
    }()

    /// What one fuzz process runs on each input. Every input paid for the
    /// SQLite store and its restart comparison (31 inputs a second; an
    /// hour reached ~110k inputs, where libFuzzer's yield needs millions),
    /// and then for three in-process daemons (the fast-path comparison's
    /// two beside the checked one), so the checks are three targets, each
    /// its own libFuzzer run with its own corpus (`make fuzz` runs all;
    /// docs/robustness.md, "The fuzzer"). Every check runs in one of them
    /// on every input of that target; a replay with no target runs all.
    public enum Target: String, Sendable, CaseIterable {
        /// The frame decoder, and the dispatcher and sessions on an
        /// in-memory store, watched: one daemon per input.
        case fast
        /// The fast paths against the slow path (`FastPathCheck`): two
        /// daemons, no watches, the same messages.
        case fastpath
        /// The dispatcher on the SQLite store, synced after each message
        /// and opened again as a restarted daemon would.
        case store
    }

    /// Runs one input; returns the violations (empty when every invariant
    /// held). `target` nil runs every target's checks (FuzzRegressionTests).
    public static func run(_ input: UnsafeRawBufferPointer, target: Target? = nil) -> [String] {
        defer { Decodes.reset() }
        var problems: [String] = []
        if target == nil || target == .fast {
            checkDecoder(input, &problems)
        }
        if target == nil || target == .fastpath {
            FastPathCheck.run(input, &problems)
        }
        if target == nil || target == .store {
            // The store's row readers (and an input that is an SQLite file,
            // loaded, salvaged and loaded again) belong to the disk's target.
            problems += SQLiteStore.checkReaders(input, scratch: storeScratch)
        }
        if target == nil || target == .fast {
            var run = SessionRun(durable: false)
            run.feed(input)
            run.finish()
            problems += run.problems
        }
        if target == nil || target == .store {
            var run = SessionRun(durable: true)
            run.feed(input)
            run.finish()
            problems += run.problems
        }
        return problems
    }

    public static func run(_ bytes: [UInt8], target: Target? = nil) -> [String] {
        bytes.withUnsafeBytes { run($0, target: target) }
    }

    // MARK: The frame decoder

    struct Decoded: Equatable {
        var messages: [[UInt8]] = []
        var failed = false
        /// Bytes after the last message (nil when it failed).
        var pending: Int?
    }

    /// The model: the input cut at each NUL; past `limit`, refused.
    static func model(_ input: UnsafeRawBufferPointer, limit: Int) -> Decoded {
        var d = Decoded()
        var start = 0
        for i in 0..<input.count where input[i] == 0 {
            if i - start > limit { d.failed = true; return d }
            d.messages.append(Array(input[start..<i]))
            start = i + 1
        }
        if input.count - start > limit { d.failed = true; return d }
        d.pending = input.count - start
        return d
    }

    static func decode(_ input: UnsafeRawBufferPointer, limit: Int, chunk: (Int) -> Int) -> Decoded {
        var decoder = MessageDecoder(maxMessage: limit)
        var d = Decoded()
        var offset = 0, k = 0
        while offset < input.count {
            let n = min(max(1, chunk(k)), input.count - offset)
            k += 1
            decoder.append(UnsafeRawBufferPointer(rebasing: input[offset..<offset + n]))
            offset += n
            do {
                while let message = try decoder.next() { d.messages.append(message) }
            } catch {
                d.failed = true
                return d
            }
        }
        do {
            while let message = try decoder.next() { d.messages.append(message) }
        } catch {
            d.failed = true
            return d
        }
        d.pending = decoder.pendingCount
        let finishFails = (try? decoder.finish()) == nil
        if finishFails != (decoder.pendingCount > 0) { d.pending = -1 }
        return d
    }

    static func checkDecoder(_ input: UnsafeRawBufferPointer, _ problems: inout [String]) {
        for limit in [limits.maxMessage, 16] {
            let expected = model(input, limit: limit)
            let whole = decode(input, limit: limit) { _ in input.count }
            let small = decode(input, limit: limit) { k in input.isEmpty ? 1 : Int(input[k % input.count] % 7) + 1 }
            for (how, got) in [("whole", whole), ("in chunks of 1 to 7 bytes", small)] where got != expected {
                problems.append("MessageDecoder(maxMessage: \(limit)) fed \(how): \(got.messages.count) messages, failed \(got.failed), pending \(got.pending.map(String.init) ?? "-"); the input cut at its NULs gives \(expected.messages.count), failed \(expected.failed), pending \(expected.pending.map(String.init) ?? "-")")
            }
        }
    }
}

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

/// One input through a fresh in-process daemon.
struct SessionRun {
    typealias F = DaemonFuzzer
    let store: Store
    let service: Service
    var problems: [String] = []
    private var client: Client!
    private var sessionsOpened = 0
    private var everything: Client
    private var pathWatchers: [Client]
    private var named: Client
    private var lastRevision: UInt64 = 0
    private var turns = 0
    private var compacted = false

    static let owner = getuid()
    static let granted: UInt32 = owner == 4242 ? 4243 : 4242
    static let stranger: UInt32 = owner == 5353 ? 5354 : 5353

    /// The durable store under `store`: SQLite in a directory of this
    /// process's, emptied for each input; nil for the fast target (the
    /// store in memory).
    let sqlite: SQLiteStore?

    /// A directory of this process's for the SQLite store (tmpfs when
    /// there is one: the store syncs once per message).
    static let directory: String = {
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        var template = Array("\(base)/tetherd-fuzz.XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { fatalError("tetherd-fuzz: mkdtemp in \(base) failed: errno \(errno)") }
        let path = String(cString: template)
        atexit { SessionRun.removeStore(); rmdir(SessionRun.directoryPath) }
        return path
    }()
    nonisolated(unsafe) static var directoryPath = ""

    static func removeStore() {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(directoryPath + "/tether.db" + suffix) }
    }

    /// The owner's grants to the others: read-write `a`, read `b`.
    static let policy = AccessPolicy(owner: SessionRun.owner, entries: [
        .init(subject: .uid(SessionRun.granted), write: true, prefixes: ["a"]),
        .init(subject: .uid(SessionRun.granted), write: false, prefixes: ["b"]),
    ])

    /// The fast target's daemon, kept across inputs and reset before each
    /// (`Service.reset`: it then answers as a new one would, so an input's
    /// run does not depend on the inputs before it).
    nonisolated(unsafe) static var keptService: Service?
    static var kept: Service {
        if let service = keptService {
            try! service.reset()
            return service
        }
        let store = try! Store(limits: F.limits, logCapacity: F.logCapacity, epoch: F.epoch)
        let service = Service(store: store, policy: policy, log: EventLog(quiet: true))
        keptService = service
        return service
    }

    init(durable: Bool) {
        SessionRun.directoryPath = SessionRun.directory
        let store: Store
        let service: Service
        if durable {
            SessionRun.removeStore()
            // Not exclusive: checkRestart reads it through a second connection while it is open.
            let sqlite = try! SQLiteStore(directory: SessionRun.directory, durability: .normal, logCapacity: F.logCapacity, exclusive: false)
            _ = try! sqlite.load()
            try! sqlite.start(epoch: F.epoch)
            self.sqlite = sqlite
            store = try! Store(limits: F.limits, logCapacity: F.logCapacity, epoch: F.epoch, sink: sqlite)
            service = Service(store: store, policy: SessionRun.policy, log: EventLog(quiet: true))
        } else {
            sqlite = nil
            service = SessionRun.kept
            store = service.store
        }
        self.store = store
        self.service = service
        func watch(_ parameters: [String: Value]) -> Client {
            let c = Client(service.open(peer: Peer(pid: 2, uid: SessionRun.owner, gid: getgid())), store: store)
            c.call("io.tether.Watch", parameters, more: true)
            return c
        }
        everything = watch(["prefix": .string("")])
        pathWatchers = F.pathWatches.map { watch(["prefix": .string(""), "path": .string($0)]) }
        named = watch(["names": .array([.string("a"), .string("b")])])
    }

    // MARK: Feeding

    mutating func feed(_ input: UnsafeRawBufferPointer) {
        var start = 0
        for i in 0..<input.count where input[i] == 0 {
            message(UnsafeRawBufferPointer(rebasing: input[start...i]), length: i - start)
            endOfTurn()
            start = i + 1
        }
        if start < input.count {
            // The stream ends inside a message: no reply, unless it is
            // already past the limit.
            let tail = UnsafeRawBufferPointer(rebasing: input[start...])
            let c = current()
            c.session.receive(tail)
            let replies = c.replies(&problems)
            if c.stranger {
                checkRefused(replies, c, "the end of the stream")
            } else if tail.count > F.limits.maxMessage {
                expectLimitExceeded(replies, c)
            } else if !replies.isEmpty {
                problems.append("\(replies.count) replies to \(tail.count) bytes without a NUL")
            }
            c.session.receivedEnd()
            checkRevision(changed: 0...0, "the end of the stream")
            endOfTurn()
        }
    }

    /// What the daemon does at the end of a loop turn: the store's commit
    /// (before any reply of the turn would be written).
    private mutating func endOfTurn() {
        do {
            try sqlite?.sync()
        } catch {
            problems.append("the store failed to sync: \(error)")
        }
        // The idle timer, now and then: progress replies to the watches
        // sent nothing since the last tick.
        turns += 1
        if turns % 3 == 0 { service.idleTick() }
    }

    /// The session the next message goes to: a new one once the last closed.
    private mutating func current() -> Client {
        if let c = client, c.session.closeReason == nil { return c }
        if let c = client { service.closed(c.session) }
        let uids = [SessionRun.owner, SessionRun.granted, SessionRun.owner, SessionRun.stranger]
        let uid = uids[sessionsOpened % uids.count]
        sessionsOpened += 1
        client = Client(service.open(peer: Peer(pid: 1, uid: uid, gid: uid)), store: store)
        client.stranger = uid == SessionRun.stranger
        return client
    }

    /// A Snapshot call writes a file at the path it names: the fuzzer's
    /// go to a file of its own directory instead (removed after).
    static var snapshotPath: String { directoryPath + "/snapshot.db" }

    private func confined(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        guard bytes.count - 1 <= F.limits.maxMessage,
              var call = try? Decodes.call(UnsafeRawBufferPointer(rebasing: bytes.dropLast())).get(),
              call.method == TetherMethod.snapshot.qualifiedName, case .string? = call.parameters["path"] else { return nil }
        call.parameters["path"] = .string(SessionRun.snapshotPath)
        var out: [UInt8] = []
        guard (try? MessageEncoder.append(call, to: &out)) != nil else { return nil }
        return out
    }

    private mutating func message(_ original: UnsafeRawBufferPointer, length originalLength: Int) {
        let rewritten = confined(original)
        defer { if rewritten != nil { unlink(SessionRun.snapshotPath) } }
        if let rewritten {
            rewritten.withUnsafeBytes { deliver($0, length: $0.count - 1) }
        } else {
            deliver(original, length: originalLength)
        }
    }

    private mutating func deliver(_ bytes: UnsafeRawBufferPointer, length: Int) {
        let c = current()
        let watching = c.watching
        let before = store.revision
        c.session.receive(bytes)
        let replies = c.replies(&problems)
        let what = MessageName(bytes: bytes)
        if c.stranger {
            checkRefused(replies, c, what)
            return
        }
        if length > F.limits.maxMessage {
            expectLimitExceeded(replies, c)
            checkRevision(changed: 0...0, what)
            return
        }
        if watching {
            // A call on a connection its Watch holds closes it, unanswered
            // (a change of this very call cannot reach it: nothing ran).
            if !replies.isEmpty { problems.append("\(what): \(replies.count) replies on a connection held by its Watch") }
            if c.session.closeReason == nil { problems.append("\(what): a call after Watch did not close the connection") }
            checkRevision(changed: 0...0, what)
            return
        }
        let call: Call
        do {
            call = try Decodes.call(UnsafeRawBufferPointer(rebasing: bytes.dropLast())).get()
        } catch {
            if replies.count != 1 || replies[0].error != error.name {
                problems.append("\(what): not a call (\(error.name)), answered with \(replies.map { $0.error ?? "success" })")
            }
            checkRevision(changed: 0...0, what)
            return
        }
        if call.oneway {
            if !replies.isEmpty { problems.append("\(what): \(replies.count) replies to a oneway call") }
            checkRevision(changed: 0...1, what)
            return
        }
        guard let first = replies.first else {
            problems.append("\(what): no reply to \(call.method)")
            return
        }
        check(first, to: call, what)
        if first.continues {
            if call.method != TetherMethod.watch.qualifiedName || !call.more {
                problems.append("\(what): a reply to \(call.method) says it continues")
            }
            c.watching = true
            for r in replies.dropFirst() {
                check(r, to: call, what)
                if !r.continues { problems.append("\(what): a Watch reply that does not continue") }
            }
            checkRevision(changed: 0...0, what)
            return
        }
        if replies.count != 1 {
            problems.append("\(what): \(replies.count) replies to one call of \(call.method)")
        }
        if call.method == TetherMethod.compact.qualifiedName && first.error == nil { compacted = true }
        // The revision moves only for a write that says it changed
        // something, by one, and the reply says where it is.
        var moved = false
        if first.error == nil, let method = TetherMethod(qualifiedName: call.method) {
            let revision = first.parameters["revision"].flatMap { v -> UInt64? in
                if case .int(let i) = v { return UInt64(exactly: i) }
                return nil
            }
            switch method {
            case .set, .remove, .transaction:
                moved = first.parameters["changed"] == .bool(true)
            case .declare:
                moved = store.revision == before + 1
                if first.parameters["created"] == .bool(true) && !moved {
                    problems.append("\(what): Declare created a state without a commit")
                }
            default:
                break
            }
            if revision != nil && revision != store.revision {
                problems.append("\(what): \(call.method) replied revision \(revision!), the store is at \(store.revision)")
            }
        }
        checkRevision(changed: moved ? 1...1 : 0...0, what)
    }

    /// A peer without a grant is refused at accept: its PermissionDenied is
    /// there before it sends anything, nothing it sends is read (no parse
    /// error, no LimitExceeded, whatever the bytes), and it is closed.
    private mutating func checkRefused(_ replies: [Reply], _ c: Client, _ what: some CustomStringConvertible) {
        if replies.map(\.error) != ["org.varlink.service.PermissionDenied"] || c.session.closeReason == nil || !c.session.isRefused {
            problems.append("\(what): a peer without a grant was answered with \(replies.map { $0.error ?? "success" }), closed: \(c.session.closeReason != nil)")
        }
        checkRevision(changed: 0...0, what)
    }

    private mutating func expectLimitExceeded(_ replies: [Reply], _ c: Client) {
        if replies.count != 1 || replies[0].error != "io.tether.LimitExceeded" {
            problems.append("a message past the limit answered with \(replies.map { $0.error ?? "success" }), not one LimitExceeded")
        }
        if c.session.closeReason == nil { problems.append("a message past the limit did not close the connection") }
    }

    private mutating func checkRevision(changed allowed: ClosedRange<UInt64>, _ what: some CustomStringConvertible) {
        let now = store.revision
        if now < lastRevision {
            problems.append("\(what): the revision went back from \(lastRevision) to \(now)")
        } else if !allowed.contains(now - lastRevision) {
            problems.append("\(what): the revision moved from \(lastRevision) to \(now); expected a move in \(allowed)")
        }
        lastRevision = now
    }

    /// The reply is what the interface says `call` returns (or an error it
    /// defines), with no field it does not define.
    private mutating func check(_ reply: Reply, to call: Call, _ what: some CustomStringConvertible) {
        let service = VarlinkService.tetherd
        do throws(VarlinkError) {
            if let error = reply.error {
                let dot = error.utf8.lastIndex(of: UInt8(ascii: "."))!
                guard let interface = service.interface(named: String(error[..<dot])) else {
                    throw .invalidParameter("error", "no interface for \(error)")
                }
                try interface.checkError(reply.parameters, error: String(error[error.utf8.index(after: dot)...]), allowUnknown: false)
            } else {
                guard let interface = service.interface(named: call.interface) else {
                    throw .invalidParameter("method", "a success reply to \(call.method), which no interface has")
                }
                try interface.checkReply(reply.parameters, method: call.member, allowUnknown: false)
            }
        } catch {
            problems.append("\(what): the reply \(reply.error ?? "to " + call.method) does not match the interface: \(error)")
        }
    }

    // MARK: The end

    mutating func finish() {
        for w in [everything, named] + pathWatchers {
            w.drain(&problems)
        }
        let n = store.revision
        // One change per commit, in order, each revision once.
        let revisions = everything.changes.map(\.revision)
        if revisions != Array(stride(from: UInt64(1), through: n, by: 1)) {
            problems.append("the watch of every state got the commits \(revisions.prefix(20)); the store made 1...\(n)")
        }
        // The checker: every state, read back.
        let checker = Client(service.open(peer: Peer(pid: 3, uid: SessionRun.owner, gid: getgid())), store: store)
        var names: [String] = []
        var after: String?
        while true {
            var p: [String: Value] = ["prefix": .string(""), "limit": .int(1000)]
            if let after { p["after"] = .string(after) }
            guard let reply = checker.call("io.tether.List", p).first, reply.error == nil,
                  let list = try? ListReply(parameters: reply.parameters, limits: F.limits) else {
                problems.append("List failed")
                return
            }
            names += list.states.map(\.name)
            if !list.truncated || list.states.isEmpty { break }
            after = list.states.last!.name
        }
        if names.count != store.count { problems.append("List gave \(names.count) states; the store holds \(store.count)") }

        func read(_ name: String, at path: String?) -> Value? {
            var p: [String: Value] = ["name": .string(name)]
            if let path { p["path"] = .string(path) }
            guard let reply = checker.call("io.tether.Get", p).first else { return nil }
            if reply.error != nil { return nil }
            return (try? GetReply(parameters: reply.parameters, limits: F.limits))?.value
        }

        var actual: [String: Value] = [:]
        for name in names { actual[name] = read(name, at: nil) }
        compare(everything.mirror, actual, "the watch of every state")
        for (i, path) in F.pathWatches.enumerated() {
            var atPath: [String: Value] = [:]
            for name in names { atPath[name] = read(name, at: path) }
            compare(pathWatchers[i].mirror, atPath, "the watch at \(path)")
        }
        var namedActual: [String: Value] = [:]
        for name in ["a", "b"] { namedActual[name] = actual[name] }
        compare(named.mirror, namedActual, "the watch of a and b")

        // A watch from revision 0 replays the live one, or resyncs.
        let replay = Client(service.open(peer: Peer(pid: 4, uid: SessionRun.owner, gid: getgid())), store: store)
        replay.call("io.tether.Watch", ["prefix": .string(""), "from_revision": .int(0), "epoch": .string(F.epoch)], more: true)
        replay.drain(&problems)
        // The log holds revision 1 unless it held more than its capacity
        // or was compacted (Compact): then a resync.
        let oldest = checker.call("io.tether.Stats", [:]).first.flatMap { try? StatsReply(parameters: $0.parameters) }?.oldestRevision ?? 0
        if oldest > 0 && n <= UInt64(F.logCapacity) && !compacted {
            problems.append("the log no longer holds revision 1 (oldest_revision \(oldest)) after \(n) commits, with room for \(F.logCapacity), and no Compact")
        }
        if oldest == 0 {
            if replay.changes != everything.changes || replay.resynced {
                problems.append("a Watch from revision 0 replayed \(replay.changes.count) commits\(replay.resynced ? " after a resync" : ""); the live watch got \(everything.changes.count)")
            }
        } else if !replay.resynced || replay.mirror != actual {
            problems.append("a Watch from revision 0, older than the log (oldest_revision \(oldest)), did not resync to the states")
        }
        if sqlite != nil { checkRestart(names: names, checker: checker) }
        for c in [everything, named, checker, replay] + pathWatchers + (client.map { [$0] } ?? []) {
            service.closed(c.session)
        }
    }

    /// A daemon restarted on the SQLite store holds what this one holds:
    /// the revision, the epoch, every state (value, modified, descriptor),
    /// and the log a Watch resumes from (changes, tags and origins).
    private mutating func checkRestart(names: [String], checker: Client) {
        let restarted: Service
        do {
            let reopened = try SQLiteStore(directory: SessionRun.directory, durability: .normal, logCapacity: F.logCapacity, exclusive: false)
            let contents = try reopened.load()
            guard contents.epoch == F.epoch else {
                problems.append("after a restart the epoch is \(contents.epoch ?? "(none)"), not \(F.epoch)")
                return
            }
            let store2 = try Store(limits: F.limits, logCapacity: F.logCapacity, epoch: F.epoch, startRevision: 0)
            try store2.restore(states: contents.states, log: contents.log, revision: contents.revision)
            restarted = Service(store: store2, policy: AccessPolicy(owner: SessionRun.owner), log: EventLog(quiet: true))
        } catch {
            problems.append("the SQLite store does not open again: \(error)")
            return
        }
        let after = Client(restarted.open(peer: Peer(pid: 5, uid: SessionRun.owner, gid: getgid())), store: restarted.store)
        defer { restarted.closed(after.session) }
        func stats(_ c: Client) -> StatsReply? {
            c.call("io.tether.Stats", [:]).first.flatMap { try? StatsReply(parameters: $0.parameters) }
        }
        guard let s1 = stats(checker), let s2 = stats(after) else {
            problems.append("Stats failed around a restart")
            return
        }
        if (s1.revision, s1.epoch, s1.states, s1.oldestRevision) != (s2.revision, s2.epoch, s2.states, s2.oldestRevision) {
            problems.append("after a restart Stats says revision \(s2.revision), epoch \(s2.epoch), \(s2.states) states, oldest \(s2.oldestRevision); before it \(s1.revision), \(s1.epoch), \(s1.states), \(s1.oldestRevision)")
        }
        for name in names {
            for method in ["io.tether.Get", "io.tether.Describe"] {
                let p: [String: Value] = ["name": .string(name)]
                let r1 = checker.call(method, p).first, r2 = after.call(method, p).first
                if r1 != r2 {
                    problems.append("after a restart \(method) \(name) answers \(text(r2.map { .object($0.parameters) })); before it \(text(r1.map { .object($0.parameters) }))")
                }
            }
        }
        // The log: a Watch from the oldest revision it holds.
        let from: [String: Value] = ["prefix": .string(""), "from_revision": .int(Int64(s1.oldestRevision)), "epoch": .string(F.epoch)]
        let w1 = Client(service.open(peer: Peer(pid: 6, uid: SessionRun.owner, gid: getgid())), store: store)
        let w2 = Client(restarted.open(peer: Peer(pid: 6, uid: SessionRun.owner, gid: getgid())), store: restarted.store)
        w1.call("io.tether.Watch", from, more: true)
        w2.call("io.tether.Watch", from, more: true)
        var ignored: [String] = []
        let h1 = w1.replies(&ignored), h2 = w2.replies(&ignored)
        if h1 != h2 {
            let first = zip(h1, h2).first { $0.0 != $0.1 }
            problems.append("after a restart a Watch from \(s1.oldestRevision) replays \(h2.count) replies, before it \(h1.count); first difference: \(text(first.map { .object($0.1.parameters) })) for \(text(first.map { .object($0.0.parameters) }))")
        }
        service.closed(w1.session)
        restarted.closed(w2.session)
    }

    private mutating func compare(_ mirror: [String: Value], _ actual: [String: Value], _ what: String) {
        guard mirror != actual else { return }
        for name in Set(mirror.keys).union(actual.keys).sorted() where mirror[name] != actual[name] {
            problems.append("\(what): applying its changes gives \(name) = \(text(mirror[name])); the store has \(text(actual[name]))")
        }
    }
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
