import Glibc
import TetherWire

/// How much of the daemon one local uid may hold. The daemon's own uid and
/// root are exempt from the per-uid caps (they are the ones who must always
/// get through); every other uid, granted or not, is held to them.
public struct AdmissionLimits: Sendable, Equatable {
    /// Open connections one uid may have at once.
    public var connectionsPerUid: Int
    /// Bytes of unfinished messages (read, not yet a whole call) one uid's
    /// connections may buffer together. One call may be up to
    /// `Limits.maxMessage` (2 MiB), so the default lets a uid send eight
    /// such calls at once on eight connections.
    public var inputBytesPerUid: Int
    /// File descriptors kept back for the daemon's uid and root: when only
    /// this many are left, other uids' new connections are refused.
    public var reservedDescriptors: Int

    public init(connectionsPerUid: Int = 128, inputBytesPerUid: Int = 16 << 20, reservedDescriptors: Int = 64) {
        self.connectionsPerUid = connectionsPerUid
        self.inputBytesPerUid = inputBytesPerUid
        self.reservedDescriptors = reservedDescriptors
    }

    public static let defaults = AdmissionLimits()
}

/// Who may have a connection, decided from the peer's credentials alone,
/// before a byte of its is read: an ungranted uid, a uid over its caps, or
/// any other uid once only the reserve of descriptors is left, is refused
/// at accept and closed at once, so it holds nothing of the daemon's.
final class Admission {
    let limits: AdmissionLimits
    let owner: UInt32
    /// Descriptors this process may have open (RLIMIT_NOFILE's soft limit
    /// once raised) and how many it used before the first connection.
    var descriptorLimit: Int
    var descriptorBase: Int
    private var connections: [UInt32: Int] = [:]
    private var input: [UInt32: Int] = [:]
    private(set) var openConnections = 0
    /// Refusals per uid since their last log line (a flood of refused
    /// peers is logged once a second per uid, with its count, not once
    /// per connection).
    private var refusedSinceLog: [UInt32: (count: Int, last: UInt64)] = [:]
    /// The clock of those lines, in ms (tests set their own).
    var now: () -> UInt64 = Admission.monotonicMilliseconds

    init(limits: AdmissionLimits, owner: UInt32) {
        self.limits = limits
        self.owner = owner
        descriptorLimit = Admission.descriptorLimit()
        descriptorBase = Admission.openDescriptors()
    }

    /// As a new Admission (`Service.reset`): no connection, no input, no
    /// refusal counted; the descriptor figures, which are the process's,
    /// stay.
    func forgetConnections() {
        connections = [:]
        input = [:]
        openConnections = 0
        refusedSinceLog = [:]
    }

    enum Decision: Equatable {
        case admitted
        case refused(VarlinkError)
    }

    func isPrivileged(_ uid: UInt32) -> Bool { uid == owner || uid == 0 }

    /// Whether `peer` (granted `grant`) may have one more connection.
    func admit(_ peer: Peer, granted: Bool) -> Decision {
        if !granted {
            return .refused(.permissionDenied("uid \(peer.uid) may not use this daemon"))
        }
        if isPrivileged(peer.uid) { return .admitted }
        if connections[peer.uid, default: 0] >= limits.connectionsPerUid {
            return .refused(.limitExceeded(.connections, maximum: limits.connectionsPerUid, actual: limits.connectionsPerUid + 1,
                                           "uid \(peer.uid) already has \(limits.connectionsPerUid) connections open (tetherd --max-connections-per-uid)"))
        }
        if descriptorBase + openConnections >= descriptorLimit - limits.reservedDescriptors {
            let allowed = max(0, descriptorLimit - limits.reservedDescriptors - descriptorBase)
            return .refused(.limitExceeded(.connections, maximum: allowed, actual: openConnections + 1,
                                           "the daemon has \(openConnections) connections open and keeps its last \(limits.reservedDescriptors) descriptors for its own uid and root"))
        }
        return .admitted
    }

    func opened(_ uid: UInt32) {
        openConnections += 1
        connections[uid, default: 0] += 1
    }

    func closed(_ uid: UInt32, pendingInput: Int) {
        openConnections -= 1
        if let n = connections[uid] { connections[uid] = n > 1 ? n - 1 : nil }
        _ = changeInput(uid, by: -pendingInput)
    }

    /// A connection's unfinished input grew (or shrank) by `delta`; false
    /// when the uid is now over its cap (the caller closes that connection).
    func changeInput(_ uid: UInt32, by delta: Int) -> Bool {
        guard delta != 0 else { return true }
        let now = input[uid, default: 0] + delta
        input[uid] = now > 0 ? now : nil
        return isPrivileged(uid) || now <= limits.inputBytesPerUid
    }

    func inputBytes(of uid: UInt32) -> Int { input[uid, default: 0] }
    func connectionCount(of uid: UInt32) -> Int { connections[uid, default: 0] }

    /// Whether a refusal of `uid` should be logged now; with the number of
    /// refusals folded into this line.
    func shouldLogRefusal(of uid: UInt32) -> Int? {
        let now = self.now()
        var entry = refusedSinceLog[uid] ?? (0, 0)
        entry.count += 1
        if entry.last == 0 || now - entry.last >= 1000 {
            let count = entry.count
            refusedSinceLog[uid] = (0, now)
            return count
        }
        refusedSinceLog[uid] = entry
        return nil
    }

    // MARK: Descriptors

    /// Raises RLIMIT_NOFILE's soft limit to its hard limit (as Redis and
    /// systemd services do: the soft 1,024 is for select(), which libuv
    /// does not use); returns the limit in force.
    @discardableResult
    static func raiseDescriptorLimit() -> Int {
        var rl = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return 1024 }
        if rl.rlim_cur < rl.rlim_max {
            var raised = rl
            raised.rlim_cur = rl.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { rl = raised }
        }
        return Int(clamping: min(rl.rlim_cur, rlim_t(Int32.max)))
    }

    static func descriptorLimit() -> Int {
        var rl = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl) == 0 else { return 1024 }
        return Int(clamping: min(rl.rlim_cur, rlim_t(Int32.max)))
    }

    /// Descriptors open now (the entries of /proc/self/fd), plus a margin
    /// for those the store and libuv open later (SQLite's WAL and shm, a
    /// snapshot, the accept reserve libuv keeps for EMFILE).
    static func openDescriptors() -> Int {
        var count = 0
        if let dir = opendir("/proc/self/fd") {
            while readdir(dir) != nil { count += 1 }
            closedir(dir)
            count -= 3  // ".", ".." and the directory's own descriptor
        }
        return max(count, 3) + 16
    }

    static func monotonicMilliseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }
}
