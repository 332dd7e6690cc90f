/// A connection of a runtime to tetherd, the state daemon every process of
/// the machine shares (`tether_remote_t` in C).
///
///     let rt = try Runtime()
///     let daemon = try rt.connect()                        // the default socket
///     let theme = try daemon.state("settings", as: Settings.self)
///     let view = theme.observe(\.theme) { print($0.new ?? "") }
///     theme.value.theme = "dark"                           // every process sees it
///
/// A remote state is an ordinary `State`: reads are local (a mirror kept
/// current by a watch), writes go to the daemon and come back in its
/// order. Outside callbacks a write returns once the daemon committed it
/// and the mirror shows it; `Runtime.flush()` also waits for writes made
/// inside callbacks. See include/tether.h, "Remote states", for the rules.
public final class Remote: @unchecked Sendable {
    /// The `id` of the C `tether_remote_t`.
    public let handle: UInt64

    init(handle: UInt64) {
        self.handle = handle
    }

    deinit { free() }

    /// Closes the connections; the states it mirrors are freed.
    public func free() {
        try? Runtimes.freeRemote(handle)
    }

    /// How long a call that waits on the daemon (a write, a transaction,
    /// `state(_:as:)`'s first value, sync) waits before it throws
    /// `.timedOut`, in milliseconds; 0: without limit. Default 10 000
    /// (`tether_remote_set_timeout`).
    public var timeoutMilliseconds: UInt32 {
        get { (try? Runtimes.remoteTimeout(handle)) ?? 0 }
        set { try? Runtimes.setRemoteTimeout(handle, milliseconds: newValue) }
    }

    /// Whether the connection is up (writes fail with `.loopFailure` while not).
    public var isConnected: Bool {
        (try? Runtimes.remoteConnected(handle)) ?? false
    }

    /// Waits until every state this remote mirrors shows at least what
    /// the daemon held when this was called: what another process wrote
    /// before it (that process having returned) is then read here
    /// (`tether_remote_sync`). Not from a callback of the runtime.
    public func sync() throws(TetherError) {
        try Runtimes.syncRemote(handle)
    }

    /// The daemon's state `name` as a state of this runtime (it need not
    /// exist yet: it then reads as null, so use an optional `T`). The
    /// state keeps this connection alive; freeing the connection frees it.
    public func state<T: Codable>(_ name: String, as type: T.Type = T.self) throws(TetherError) -> State<T> {
        State(mirroredBy: self, handle: try Runtimes.remoteState(handle, name: name))
    }
}

extension Runtime {
    /// Connects to tetherd at `address` (`unix:/path`; nil: `$TETHER_ADDRESS`
    /// or the default socket) and waits until connected. Before anything
    /// is sent the socket's directory and the listener's uid are checked
    /// (as `tether_remote_connect` says): a socket that fails throws
    /// `TetherError` with code `.untrusted`, naming the path and its owner.
    ///
    /// Connecting waits at most `timeoutMilliseconds` (0: without limit)
    /// for the daemon to answer a first call (`.timedOut` when something
    /// listens but does not answer, `.loopFailure` when nothing listens);
    /// the remote's later calls wait as long (`Remote.timeoutMilliseconds`).
    public func connect(to address: String? = nil, timeoutMilliseconds: UInt32 = 10_000) throws(TetherError) -> Remote {
        Remote(handle: try Runtimes.connectRemote(handle, address: address, timeoutMilliseconds: timeoutMilliseconds))
    }
}

extension State {
    /// The daemon revision that last changed this remote state, as applied
    /// here (for `expect(revision:)`); throws for a local state.
    public var daemonRevision: UInt64 {
        get throws(TetherError) { try Runtimes.remoteRevision(handle) }
    }

    /// Inside `Runtime.transaction`: the commit applies only if the daemon's
    /// state was last changed at `revision` (else it throws `.rejected` and
    /// nothing changes).
    public func expect(revision: UInt64) throws(TetherError) {
        try Runtimes.expectRemote(handle, revision: revision)
    }
}
