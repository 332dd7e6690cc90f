import TetherCore
import TetherWire

/// One client connection, without the socket: bytes in (`receive`),
/// replies out (`output`), in call order. The transport (Connection.swift)
/// moves the bytes; tests and the fuzzer drive a Session directly.
public final class Session {
    unowned let service: Service
    public let peer: Peer
    /// What the peer may do; nil: it may not connect at all (it is sent
    /// PermissionDenied when it connects, and closed).
    let grant: Grant?
    /// Whether the connection counts against its uid's caps (it was not
    /// refused at accept).
    let admitted: Bool
    private var decoder: MessageDecoder
    /// Replies of the current loop turn (tests and the fuzzer take them
    /// directly; the daemon tags them at the end of the turn).
    public internal(set) var output: [UInt8] = []
    /// Output of ended turns waiting until the group commit their turn may
    /// reveal is durable (`Service.endOfTurn`), oldest first: a reply or a
    /// watch event never shows a commit a crash could still lose.
    private var held: [(group: UInt64, bytes: [UInt8])] = []
    private var heldBytes = 0
    /// Output whose groups are durable, for the transport to write.
    private var ready: [UInt8] = []
    /// Whether the session is in the service's list of sessions holding output.
    var holding = false
    /// Set when the connection must close once `output` is written.
    public internal(set) var closeReason: String?
    /// The Watch this connection is held by, once it called one.
    var watcher: Watcher?
    /// Whether the session is in the service's list of sessions to flush.
    var queued = false
    /// The transport, told when there is output (nil in tests). Not a
    /// `weak` reference: a weak reference gives its object a side table,
    /// and every retain and release of the connection then took the slow
    /// path (~250 instructions a Set, docs/daemon-performance.md). The
    /// connection owns this session and clears this back reference in its
    /// `deinit`, so it never names a freed connection.
    unowned(unsafe) var connection: Connection?
    /// Bytes handed to the socket that the peer has not read yet (the
    /// transport keeps it current).
    public internal(set) var unwritten = 0

    /// Past this many unread bytes a watch stops being sent changes and
    /// becomes a cursor into the commit log; below `lowWater` it catches up.
    /// So a watcher that does not read costs the daemon at most this much
    /// (plus what the kernel buffers), however much is written meanwhile.
    /// The service's setting (`tetherd --watch-buffer`), read once.
    let highWater: Int
    public static let defaultHighWater = 4 << 20
    public static let lowWater = 1 << 20

    /// Whether the peer is too far behind to be sent more now: no more
    /// watch events, and no more of its calls handled, so a connection's
    /// unread output is at most `highWater` plus one reply (`max_reply`).
    var isBackedUp: Bool { unwritten + output.count + heldBytes + ready.count > highWater }

    /// Whether output of an ended turn still waits for its group.
    public var isHolding: Bool { !held.isEmpty }

    init(service: Service, peer: Peer, grant: Grant?, admitted: Bool) {
        self.service = service
        self.peer = peer
        self.grant = grant
        self.admitted = admitted
        highWater = service.watchBuffer
        decoder = MessageDecoder(maxMessage: service.store.limits.maxMessage)
    }

    /// Refused at accept: the error is the only reply, sent before the
    /// peer's first byte is read (none ever is), and the connection closes.
    func refuse(_ error: VarlinkError) {
        send(error.reply, oneway: false)
        close("refused: \(error.detail)")
    }

    /// Whether the session was refused at accept (the transport does not
    /// read from it).
    public var isRefused: Bool { !admitted }

    /// Bytes of an unfinished call buffered (counted against the uid's
    /// `AdmissionLimits.inputBytesPerUid`).
    var pendingInput: Int { decoder.pendingCount }

    /// Bytes read from the peer: its complete calls are handled now, one
    /// slice of them when `sliced` (the transport: `drainInput` says the
    /// rest), else all of them (tests and the fuzzer, which take the output
    /// themselves).
    public func receive(_ bytes: UnsafeRawBufferPointer, sliced: Bool = false) {
        guard closeReason == nil, admitted else { return }
        let before = decoder.pendingCount
        decoder.append(bytes)
        drainInput(inputBefore: before, sliced: sliced)
    }

    /// Calls handled in one slice: a connection that pipelines thousands
    /// of calls (or a few big Gets) answers them over several loop turns,
    /// between which every other connection is served.
    public static let sliceCalls = 64
    /// Output one slice may make before it yields (a slice ends after the
    /// call that passes it).
    public static let sliceBytes = 1 << 20

    /// Whether complete calls wait in the decoder: the slice ended, or the
    /// peer's unread output is over `highWater` (then the transport stops
    /// reading until it drains: backpressure instead of buffering replies
    /// without bound, or cutting off a peer that reads).
    public private(set) var inputWaits = false

    /// Handles the complete calls buffered, one slice: up to `sliceCalls`
    /// calls or `sliceBytes` of output, and none while the output is backed
    /// up. Returns whether calls still wait (the caller resumes it on a
    /// later turn, or when the output drains).
    @discardableResult
    public func drainInput(inputBefore: Int? = nil, sliced: Bool = true) -> Bool {
        draining = true
        defer { draining = false }
        let before = inputBefore ?? decoder.pendingCount
        let outputBefore = output.count
        var calls = 0
        inputWaits = false
        while closeReason == nil {
            if awaitingLedger {
                inputWaits = decoder.hasCompleteMessage
                break
            }
            if sliced && (isBackedUp || calls >= Session.sliceCalls || output.count - outputBefore >= Session.sliceBytes) {
                inputWaits = decoder.hasCompleteMessage
                break
            }
            do {
                guard try decoder.nextMessage({ handle($0) }) != nil else { break }
                calls += 1
            } catch {
                // Past the message limit the stream cannot be trusted: say
                // why and close (docs/protocol.md, "Bad input").
                send(Reply(parameters: error.parameters, error: error.name), oneway: false)
                close("\(error.detail)")
            }
        }
        accountInput(from: before)
        return inputWaits
    }

    /// The uid's count of unfinished input follows this connection's.
    private func accountInput(from before: Int) {
        let after = decoder.pendingCount
        if !service.admission.changeInput(peer.uid, by: after - before) && closeReason == nil {
            // The uid's connections hold more unfinished input than its cap:
            // this one, which just grew, is cut off (its buffer goes when it
            // closes), so many partial calls cannot add up past the cap.
            let cap = service.admission.limits.inputBytesPerUid
            let error = VarlinkError.limitExceeded(.input, maximum: cap, actual: service.admission.inputBytes(of: peer.uid),
                                                   "uid \(peer.uid)'s connections hold more than \(cap) bytes of unfinished calls (tetherd --max-input-per-uid)")
            service.log.event("input-cap", "peer" => peer.description, "buffered" => "\(service.admission.inputBytes(of: peer.uid))")
            send(error.reply, oneway: false)
            close(error.detail)
        }
    }

    /// The peer closed its end: a message cut short is logged.
    public func receivedEnd() {
        guard closeReason == nil else { return }
        do {
            try decoder.finish()
        } catch {
            service.log.event("connection-truncated", "peer" => peer.description, "reason" => error.detail)
        }
    }

    /// Closes once the pending output is written.
    func close(_ reason: String) {
        if closeReason == nil {
            closeReason = reason
            service.metrics.cutOffPeers &+= 1
        }
        service.queue(self)
    }

    // MARK: Calls

    private func handle(_ raw: UnsafeRawBufferPointer) {
        if watcher != nil {
            // Varlink: a call with `more` holds the connection until its
            // last reply, and a Watch never ends, so nothing else can be
            // answered here, not even a message that is not a call (its
            // error reply would end the Watch for the client while its
            // changes kept coming).
            let method = (try? Call(parsing: raw, limits: service.store.limits))?.method ?? "(not a call)"
            service.log.event("call-after-watch", "peer" => peer.description, "method" => method)
            close("a call after Watch on the same connection (give each Watch its own connection)")
            return
        }
        // One strong reference for the fast path: each use of the unowned
        // `service` is a reference count check and pair (~25 instructions).
        let service = self.service
        if service.simpleCalls, let grant {
            if let set = SimpleSetCall.parse(raw, maxDepth: service.store.limits.maxDepth) {
                service.metrics.called(.set)
                handleSimpleSet(set, grant, service)
                return
            }
            // A read a ledger's barrier must hold back goes the ordinary way.
            if service.store.ledger == nil || !service.store.readsAfterBarrier, let get = SimpleGetCall.parse(raw) {
                service.metrics.called(.get)
                handleSimpleGet(get, grant, service)
                return
            }
        }
        // A session without a grant was refused at accept and is never
        // read: its rights are decided before any of its bytes is parsed.
        guard let grant else { return }
        let call: Call
        do {
            call = try Call(parsing: raw, limits: service.store.limits)
        } catch {
            service.metrics.called(other: nil)
            send(error.reply, oneway: false)
            return
        }
        do throws(VarlinkError) {
            if let method = TetherMethod(qualifiedName: call.method) {
                service.metrics.called(method)
                // io.tether's methods are TetherMethod's cases (a test holds
                // them equal to the IDL's), so resolving the name once is
                // the whole of VarlinkService.check for them.
                if call.upgrade {
                    throw .invalidCall(field: "upgrade", "\(call.method) cannot upgrade the connection: this service supports no other protocol")
                }
                if method.streams && !call.more { throw .expectedMore(call.method) }
                try handleTether(method, call, grant)
            } else {
                service.metrics.called(other: call.method)
                try service.varlink.check(call, checkingParameters: false)
                if call.method.hasPrefix(VarlinkError.serviceInterface) {
                    try handleService(call)
                } else {
                    throw VarlinkError.methodNotFound(call.method)
                }
            }
        } catch {
            send(error.reply, oneway: call.oneway)
        }
    }

    private func handleService(_ call: Call) throws(VarlinkError) {
        switch call.member {
        case "GetInfo":
            _ = try GetInfoParameters(parameters: call.parameters, limits: service.store.limits)
            let info = GetInfoReply(vendor: "Tether", product: "tetherd", version: Service.version,
                                    url: "https://github.com/tether-runtime/tether",
                                    interfaces: service.varlink.interfaceNames)
            send(Reply(parameters: info.parameters), oneway: call.oneway)
        case "GetInterfaceDescription":
            let p = try GetInterfaceDescriptionParameters(parameters: call.parameters, limits: service.store.limits)
            let text = try service.varlink.describe(p.interface)
            send(Reply(parameters: GetInterfaceDescriptionReply(description: text).parameters), oneway: call.oneway)
        default:
            throw .methodNotImplemented(call.method)
        }
    }

    private func handleTether(_ method: TetherMethod, _ call: Call, _ grant: Grant) throws(VarlinkError) {
        let store = service.store
        let limits = store.limits
        if store.ledger != nil && store.readsAfterBarrier && !pastBarrier && method.readsStates {
            // A read on a host that a ledger feeds: answered once the host
            // has installed everything the ledger had committed when the
            // read came (linearizable), not from a copy that may lag.
            awaitingLedger = true
            store.readBarrier { [weak self] failure in
                guard let self else { return }
                if let failure { return self.answerLedger(.failure(failure), oneway: call.oneway) }
                self.pastBarrier = true
                defer { self.pastBarrier = false }
                do throws(VarlinkError) {
                    try self.handleTether(method, call, grant)
                    self.answerLedger(nil, oneway: call.oneway)
                } catch {
                    self.answerLedger(.failure(error), oneway: call.oneway)
                }
            }
            return
        }
        switch method {
        case .get:
            let p = try GetParameters(parameters: call.parameters, limits: limits)
            try mayRead(p.name, grant)
            // A big value's whole-state Get: its encoding kept (EncodedValues.swift).
            if p.path.isRoot, !call.oneway, try store.appendWholeGet(p.name, to: &output) {
                service.queue(self)
                return
            }
            send(Reply(parameters: try store.get(p.name, at: p.path).parameters), oneway: call.oneway)
        case .set:
            let p = try SetParameters(parameters: call.parameters, limits: limits)
            try mayWrite(p.name, grant)
            let op = Op(name: p.name, path: p.path, write: .set(p.value))
            if store.ledger != nil { return proposeWrite([op], [], p.tag, p.origin, oneway: call.oneway) }
            let reply = try store.write(op, tag: p.tag, origin: p.origin)
            send(Reply(parameters: reply.parameters), oneway: call.oneway)
        case .remove:
            let p = try RemoveParameters(parameters: call.parameters, limits: limits)
            try mayWrite(p.name, grant)
            let op = Op(name: p.name, path: p.path, write: .remove)
            if store.ledger != nil { return proposeWrite([op], [], p.tag, p.origin, oneway: call.oneway) }
            let reply = try store.write(op, tag: p.tag, origin: p.origin)
            send(Reply(parameters: reply.parameters), oneway: call.oneway)
        case .transaction:
            let p = try TransactionParameters(parameters: call.parameters, limits: limits)
            for op in p.ops { try mayWrite(op.name, grant) }
            for pre in p.preconditions { try mayRead(pre.name, grant) }
            if store.ledger != nil { return proposeWrite(p.ops, p.preconditions, p.tag, p.origin, oneway: call.oneway) }
            let reply = try store.apply(p.ops, preconditions: p.preconditions, tag: p.tag, origin: p.origin)
            send(Reply(parameters: reply.parameters), oneway: call.oneway)
        case .list:
            let p = try ListParameters(parameters: call.parameters, limits: limits)
            let reply = try store.list(prefix: p.prefix, after: p.after, count: p.count(limits: limits),
                                   visible: { grant.mayRead($0) })
            send(Reply(parameters: reply.parameters), oneway: call.oneway)
        case .describe:
            let p = try DescribeParameters(parameters: call.parameters, limits: limits)
            try mayRead(p.name, grant)
            send(Reply(parameters: try store.describe(p.name).parameters), oneway: call.oneway)
        case .declare:
            let p = try DeclareParameters(parameters: call.parameters, limits: limits)
            try mayWrite(p.name, grant)
            if store.ledger != nil {
                awaitingLedger = true
                store.proposeDeclare(p.name, p.descriptor, value: p.value) { [weak self] result in
                    self?.answerLedger(result.map(\.parameters), oneway: call.oneway)
                }
                return
            }
            let reply = try store.declare(p.name, p.descriptor, value: p.value)
            send(Reply(parameters: reply.parameters), oneway: call.oneway)
        case .watch:
            let p = try WatchParameters(parameters: call.parameters, limits: limits)
            for name in p.names { try mayRead(name, grant) }
            if let prefix = p.prefix, !grant.mayReadAll(withPrefix: prefix) {
                throw .accessDenied(name: nil, "uid \(peer.uid) may not read every state starting with '\(prefix)'")
            }
            service.startWatch(self, p)
        case .snapshot:
            let p = try SnapshotParameters(parameters: call.parameters, limits: limits)
            try mayMaintain(grant, "copy the store")
            let reply = try store.snapshot(to: p.path)
            service.log.event("snapshot", "peer" => peer.description, "path" => p.path, "revision" => "\(reply.revision)",
                              "bytes" => "\(reply.bytes)")
            send(Reply(parameters: reply.parameters), oneway: call.oneway)
        case .compact:
            let p = try CompactParameters(parameters: call.parameters, limits: limits)
            try mayMaintain(grant, "compact the log")
            let reply = try store.compact(through: p.revision)
            service.log.event("compact", "peer" => peer.description, "oldest" => "\(reply.oldestRevision)")
            send(Reply(parameters: reply.parameters), oneway: call.oneway)
        case .stats:
            _ = try StatsParameters(parameters: call.parameters, limits: limits)
            send(Reply(parameters: service.stats().parameters), oneway: call.oneway)
        case .watchers:
            let p = try WatchersParameters(parameters: call.parameters, limits: limits)
            try mayMaintain(grant, "list who watches what")
            send(Reply(parameters: service.watcherList(prefix: p.prefix).parameters), oneway: call.oneway)
        case .metrics:
            _ = try MetricsParameters(parameters: call.parameters, limits: limits)
            try mayMaintain(grant, "read the daemon's metrics")
            send(Reply(parameters: MetricsReply(text: service.metrics.text(service)).parameters), oneway: call.oneway)
        }
    }

    /// A Set that `SimpleSetCall` read: what `handleTether` does for
    /// `.set` once its parameters are read (they hold no path, tag or
    /// origin), with the reply written without a `Value` tree.
    private func handleSimpleSet(_ set: SimpleSetCall, _ grant: Grant, _ service: Service) {
        let store = service.store
        do throws(VarlinkError) {
            try StateName.check(set.name, parameter: "name", limits: store.limits)
            try mayWrite(set.name, grant)
            if store.ledger != nil { return proposeWrite([Op(name: set.name, path: .root, write: .set(set.value))], [], nil, nil, oneway: false) }
            let reply = try store.write(Op(name: set.name, path: .root, write: .set(set.value)), tag: nil, origin: nil)
            WriteReplyBytes.append(reply, to: &output)
            service.queue(self)
        } catch {
            send(error.reply, oneway: false)
        }
    }

    /// A Get that `SimpleGetCall` read: what `handleTether` does for
    /// `.get` at the root, with the reply written without a `Value` tree.
    private func handleSimpleGet(_ get: SimpleGetCall, _ grant: Grant, _ service: Service) {
        let store = service.store
        do throws(VarlinkError) {
            try StateName.check(get.name, parameter: "name", limits: store.limits)
            try mayRead(get.name, grant)
            if try store.appendGet(get.name, to: &output) {
                service.queue(self)
            } else {
                send(Reply(parameters: try store.get(get.name, at: .root).parameters), oneway: false)
            }
        } catch {
            send(error.reply, oneway: false)
        }
    }

    // MARK: Writes through a ledger (Ledger.swift)

    /// Whether a write of this connection waits for the ledger: its later
    /// calls wait in the decoder (their replies must follow its reply),
    /// and are handled once it is answered.
    private(set) var awaitingLedger = false
    /// Whether `drainInput` is handling calls (a write the ledger answers
    /// at once must not start another drain inside it).
    private var draining = false

    private func proposeWrite(_ ops: [Op], _ preconditions: [Precondition], _ tag: String?, _ origin: UInt64?, oneway: Bool) {
        awaitingLedger = true
        service.store.propose(ops, preconditions: preconditions, tag: tag, origin: origin) { [weak self] result in
            self?.answerLedger(result.map(\.parameters), oneway: oneway)
        }
    }

    /// Whether a read is being answered past its barrier (`handleTether`).
    private var pastBarrier = false

    /// The ledger answered this connection's write (or its read's
    /// barrier): its reply (nil: sent already), then the calls that
    /// waited behind it.
    private func answerLedger(_ result: Result<ValueObject, VarlinkError>?, oneway: Bool) {
        awaitingLedger = false
        switch result {
        case .success(let parameters)?: send(Reply(parameters: parameters), oneway: oneway)
        case .failure(let error)?: send(error.reply, oneway: oneway)
        case nil: break
        }
        // Answered at once (refused while planned): the slice being
        // handled goes on by itself.
        guard !draining else { return }
        if let connection {
            connection.daemon.resumeLater(connection)
        } else if decoder.hasCompleteMessage {
            drainInput(sliced: false)
        }
    }

    /// Snapshot and Compact: the daemon's own uid and root only.
    private func mayMaintain(_ grant: Grant, _ what: String) throws(VarlinkError) {
        if !grant.everything {
            service.log.event("denied", "peer" => peer.description, "access" => what)
            throw .accessDenied(name: nil, "uid \(peer.uid) may not \(what): only the daemon's uid and root may")
        }
    }

    private func mayRead(_ name: String, _ grant: Grant) throws(VarlinkError) {
        if !grant.mayRead(name) {
            service.log.event("denied", "peer" => peer.description, "name" => name, "access" => "read")
            throw .accessDenied(name: name, "uid \(peer.uid) may not read '\(name)'")
        }
    }

    private func mayWrite(_ name: String, _ grant: Grant) throws(VarlinkError) {
        if !grant.mayWrite(name) {
            service.log.event("denied", "peer" => peer.description, "name" => name, "access" => "write")
            throw .accessDenied(name: name, "uid \(peer.uid) may not write '\(name)'")
        }
    }

    // MARK: Output

    /// Appends a reply (none for a oneway call) and queues the session.
    func send(_ reply: Reply, oneway: Bool) {
        if let error = reply.error { service.metrics.failed(error) }
        guard !oneway else { return }
        do {
            try MessageEncoder.append(reply, to: &output)
        } catch {
            // Only a value the encoder cannot write (a NaN) gets here.
            try? MessageEncoder.append(VarlinkError(TetherError(.invalidArgument, "the reply could not be written: \(error.detail)")).reply, to: &output)
        }
        service.queue(self)
    }

    /// Appends a reply already encoded (one encoding shared by watchers).
    func send(encoded bytes: [UInt8]) {
        output.append(contentsOf: bytes)
        service.queue(self)
    }

    /// The store refused this turn's group (`Service.groupFailed`): this
    /// turn's output is rewritten before anything of it is written. A
    /// watch keeps only events of revisions up to `durable` (a snapshot
    /// dropped is sent again, fresh); any other connection gets `refusal`
    /// instead of each reply that was not an error (a write of the group,
    /// or a read that may have shown it). Returns the calls refused.
    func refuseTurn(after durable: UInt64, with refusal: VarlinkError) -> Int {
        guard !output.isEmpty else { return 0 }
        var messages: [ArraySlice<UInt8>] = []
        var start = 0
        for i in output.indices where output[i] == 0 {
            messages.append(output[start...i])
            start = i + 1
        }
        var kept: [UInt8] = []
        var refused = 0
        var droppedSnapshot = false
        for message in messages {
            let reply = message.dropLast().withUnsafeBytes { try? Reply(parsing: $0, limits: service.store.limits) }
            if watcher != nil {
                if case .int(let revision)? = reply?.parameters["revision"], UInt64(bitPattern: revision) > durable {
                    if reply?.parameters["event"] == .string("snapshot") { droppedSnapshot = true }
                    continue
                }
                kept.append(contentsOf: message)
            } else if reply?.error != nil {
                kept.append(contentsOf: message)
            } else {
                try? MessageEncoder.append(refusal.reply, to: &kept)
                refused += 1
            }
        }
        output = kept
        if droppedSnapshot, let w = watcher { service.resnapshot(w) }
        return refused
    }

    /// Hands the current turn's output to the caller (tests, the fuzzer).
    public func takeOutput() -> [UInt8] {
        defer { output.removeAll(keepingCapacity: true) }
        return output
    }

    /// The end of a loop turn: its output waits for `group`.
    func hold(until group: UInt64) {
        guard !output.isEmpty else { return }
        var bytes: [UInt8] = []
        swap(&bytes, &output)
        heldBytes += bytes.count
        held.append((group, bytes))
    }

    /// Moves the held output of groups up to `durable` to the ready
    /// output, in order; returns whether there is anything for the
    /// transport (bytes, or a close no longer waiting).
    func release(through durable: UInt64) -> Bool {
        var n = 0
        while n < held.count && held[n].group <= durable {
            heldBytes -= held[n].bytes.count
            if ready.isEmpty { swap(&ready, &held[n].bytes) } else { ready.append(contentsOf: held[n].bytes) }
            n += 1
        }
        if n > 0 { held.removeFirst(n) }
        return !ready.isEmpty || (closeReason != nil && held.isEmpty)
    }

    /// The end of a turn whose output may be written at once (nothing of
    /// this session is held, and everything it may show is durable): its
    /// output joins the ready output. Returns what `release` returns.
    func releaseNow() -> Bool {
        if !output.isEmpty {
            if ready.isEmpty {
                swap(&ready, &output)  // `output` takes the written buffer's capacity
            } else {
                ready.append(contentsOf: output)
                output.removeAll(keepingCapacity: true)
            }
        }
        return !ready.isEmpty || closeReason != nil
    }

    /// Whether output is ready for the transport.
    var hasReady: Bool { !ready.isEmpty }

    /// Passes the ready output to `write`, then forgets it, keeping a
    /// small buffer for the next turn's output (one allocation less per
    /// turn; a large one is let go).
    func writeReady(_ write: ([UInt8]) -> Void) {
        write(ready)
        if ready.capacity > Session.keptCapacity { ready = [] } else { ready.removeAll(keepingCapacity: true) }
    }

    static let keptCapacity = 16 << 10

    /// The transport is gone: nothing more will be written.
    func dropOutput() {
        held.removeAll()
        heldBytes = 0
        ready.removeAll()
    }

    /// Hands the output released for writing to the transport.
    public func takeReady() -> [UInt8] {
        defer { ready = [] }
        return ready
    }
}
