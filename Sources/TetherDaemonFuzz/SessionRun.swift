import Glibc
import TetherCore
import TetherDaemon
import TetherWire

/// One input through an in-process daemon: every message of the input to a
/// client session, each reply checked as it comes (DaemonFuzzer's doc says
/// what). With `watched`, four watches are opened first and checked at the
/// end (`WatchCheck`); with `durable`, the store is SQLite and is checked
/// again as a restarted daemon (`checkRestart`, RestartCheck.swift).
struct SessionRun {
    typealias F = DaemonFuzzer
    let store: Store
    let service: Service
    var problems: [String] = []
    private var client: Client!
    private var sessionsOpened = 0
    /// The `watch` and `store` targets' watches: nil for the `fast` target,
    /// whose input then costs only its own messages (opening the four
    /// watches and reading everything back at the end was 0.44 ms of an
    /// input, a committing call's replies to them up to ~0.4 ms more).
    private var watches: WatchCheck?
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

    /// The in-memory daemon of the fast and watch targets, kept across
    /// inputs and emptied between them (`Kept`).
    nonisolated(unsafe) static let kept = Kept<Service>(make: {
        let store = try! Store(limits: F.limits, logCapacity: F.logCapacity, epoch: F.epoch)
        return Service(store: store, policy: policy, log: EventLog(quiet: true))
    }, empty: { try! $0.reset() })

    init(durable: Bool, watched: Bool) {
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
            service = SessionRun.kept.take()
            store = service.store
        }
        self.store = store
        self.service = service
        // Opened before the first message, so that they see every commit.
        watches = watched ? WatchCheck(service: service, store: store) : nil
    }
    // MARK: Feeding

    mutating func feed(_ input: UnsafeRawBufferPointer) {
        var start = 0
        for i in NULs(in: input) {
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

    private func confined(_ parsed: Result<Call, VarlinkError>?) -> [UInt8]? {
        guard var call = try? parsed?.get(),
              call.method == TetherMethod.snapshot.qualifiedName, case .string? = call.parameters["path"] else { return nil }
        call.parameters["path"] = .string(SessionRun.snapshotPath)
        var out: [UInt8] = []
        guard (try? MessageEncoder.append(call, to: &out)) != nil else { return nil }
        return out
    }

    private mutating func message(_ original: UnsafeRawBufferPointer, length originalLength: Int) {
        // The message read as a call once (deliver checks its reply
        // against it); one past the limit is never parsed.
        let parsed = originalLength <= F.limits.maxMessage ? Decodes.call(UnsafeRawBufferPointer(rebasing: original.dropLast())) : nil
        let rewritten = confined(parsed)
        defer { if rewritten != nil { unlink(SessionRun.snapshotPath) } }
        if let rewritten {
            rewritten.withUnsafeBytes { deliver($0, length: $0.count - 1, parsed: nil) }
        } else {
            deliver(original, length: originalLength, parsed: parsed)
        }
    }

    /// `parsed`: the message read as a call, when the caller has it.
    private mutating func deliver(_ bytes: UnsafeRawBufferPointer, length: Int, parsed: Result<Call, VarlinkError>?) {
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
            call = try (parsed ?? Decodes.call(UnsafeRawBufferPointer(rebasing: bytes.dropLast()))).get()
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

    /// The end-of-input checks (the watches', then the restart's, when
    /// this run has them), and every connection closed: the kept daemon is
    /// then emptied (`Kept.release`, at the end of `DaemonFuzzer.run`).
    mutating func finish() {
        var opened: [Client] = client.map { [$0] } ?? []
        if let watches {
            let end = watches.finish(compacted: compacted, &problems)
            opened += end.opened
            if sqlite != nil, let checker = end.checker { checkRestart(names: end.names, checker: checker) }
        }
        for c in opened { service.closed(c.session) }
    }
}
