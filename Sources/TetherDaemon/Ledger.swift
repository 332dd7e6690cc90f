import CLibUV
import TetherCore
import TetherWire

/// A shared ledger that decides commits for several daemons at once (etcd:
/// `Backends/Etcd`, docs/daemon.md "Several machines").
///
/// With a ledger the store no longer decides: a write is planned against
/// the host's mirror of the states (every check a local write makes, and
/// the states as the commit would leave them), proposed, and installed
/// only when the ledger's own stream of commits delivers it
/// (`Store.install`), in the ledger's order, the same on every host. The
/// call's reply waits until then, so a client reads its own writes on its
/// host. Threads: every method is called on the daemon's loop thread, and
/// every callback comes back on it.
public protocol Ledger: AnyObject {
    /// A short description for the log ("etcd http://…").
    var summary: String { get }
    /// Starts following the ledger on the daemon's loop: the store's
    /// states are installed from it from now on.
    func attach(loop: UnsafeMutablePointer<uv_loop_t>, store: Store, log: EventLog) throws(TetherError)
    /// Stops (the daemon stops): proposals not answered yet end Busy.
    func detach()
    /// Proposes a commit; `done` is called once, on the loop thread.
    func propose(_ proposal: Proposal, done: @escaping (ProposalOutcome) -> Void)
    /// Asks the ledger to forget its history up to `revision`; errors are
    /// logged (the host's own log is compacted already).
    func compact(through revision: UInt64)
    /// The ledger's revision now (asked after this call, so that a read
    /// answered once the host installed it sees every commit acknowledged
    /// before the read came: linearizable reads). `done` on the loop thread.
    func readBarrier(done: @escaping (Result<UInt64, VarlinkError>) -> Void)
}

/// One commit as a host proposes it.
public struct Proposal {
    /// Every state the commit read or wrote, with the revision its host
    /// mirror had (0: absent): the ledger commits only if each is still
    /// so, and says `stale` otherwise. Preconditions are among them.
    public var expected: [(name: String, modified: UInt64)]
    /// Each changed state as the commit leaves it (value nil: removed).
    public var images: [StateImage]
    /// Descriptors the commit sets (a Declare), by state name.
    public var descriptors: [(name: String, descriptor: Descriptor)]
    /// States whose descriptor goes with them (removed states).
    public var droppedDescriptors: [String]
    /// The commit's changes, as watchers are sent them.
    public var changes: [Change]
    public var tag: String?
    public var origin: UInt64?
    /// The sum of the changed values' sizes (compact JSON).
    public var bytes: Int
}

/// What the ledger made of a proposal.
public enum ProposalOutcome {
    /// Committed at `revision`: the reply waits until the store installed it.
    case committed(revision: UInt64)
    /// A state it expected changed meanwhile (another host wrote it): the
    /// host catches up to `revision`, then plans the call again.
    case stale(revision: UInt64)
    /// Not committed, and never will be (the ledger refused it, or could
    /// not be reached: Busy), or its outcome is unknown (TimedOut).
    case failed(VarlinkError)
}

extension Store {
    /// How often a call planned against a mirror that turned out stale is
    /// planned again before it gets Busy (another host keeps writing the
    /// same states).
    static let maxProposalAttempts = 8

    /// A write through the ledger: planned against the mirror, proposed,
    /// answered once installed (see `Ledger`). `done` gets the reply.
    func propose(_ ops: [Op], preconditions: [Precondition], tag: String?, origin: UInt64?, attempt: Int = 1,
                 done: @escaping (Result<WriteReply, VarlinkError>) -> Void) {
        guard ledger != nil else { return done(Result { () throws(VarlinkError) in try apply(ops, preconditions: preconditions, tag: tag, origin: origin) }) }
        let proposal: Proposal
        do throws(VarlinkError) {
            guard let planned = try plan(ops, preconditions: preconditions, tag: tag, origin: origin) else {
                return done(.success(WriteReply(revision: revision, changed: false)))
            }
            proposal = planned
        } catch {
            return done(.failure(error))
        }
        answer(proposal, attempt: attempt, what: "the states this write reads", done: done,
               reply: { WriteReply(revision: $0, changed: true) },
               again: { self.propose(ops, preconditions: preconditions, tag: tag, origin: origin, attempt: attempt + 1, done: done) })
    }

    /// A Declare through the ledger.
    func proposeDeclare(_ name: String, _ descriptor: Descriptor, value: Value, attempt: Int = 1,
                        done: @escaping (Result<DeclareReply, VarlinkError>) -> Void) {
        guard ledger != nil else { return done(Result { () throws(VarlinkError) in try declare(name, descriptor, value: value) }) }
        let proposal: Proposal
        let created: Bool
        do throws(VarlinkError) {
            (proposal, created) = try planDeclare(name, descriptor, value: value)
        } catch {
            return done(.failure(error))
        }
        answer(proposal, attempt: attempt, what: "'\(name)'", name: name, done: done,
               reply: { DeclareReply(revision: $0, created: created) },
               again: { self.proposeDeclare(name, descriptor, value: value, attempt: attempt + 1, done: done) })
    }

    /// Proposes `proposal` and answers `done` with what the ledger made of
    /// it: `reply(revision)` once committed and installed; `again()`
    /// once the host caught up, when the plan was stale (Busy after
    /// `maxProposalAttempts`); the error when it failed.
    private func answer<Reply>(_ proposal: Proposal, attempt: Int, what: String, name: String? = nil,
                               done: @escaping (Result<Reply, VarlinkError>) -> Void,
                               reply: @escaping (UInt64) -> Reply, again: @escaping () -> Void) {
        ledger?.propose(proposal) { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .committed(let revision):
                self.whenInstalled(revision) { done(.success(reply(revision))) }
            case .stale(let revision):
                guard attempt < Store.maxProposalAttempts else {
                    return done(.failure(VarlinkError(TetherError(.busy, "\(what) kept changing on other hosts (\(attempt) attempts): nothing was applied; retry"), name: name)))
                }
                self.whenInstalled(revision, then: again)
            case .failed(let error):
                done(.failure(error))
            }
        }
    }

    /// Waits for a read's barrier (`Ledger.readBarrier`): `done(nil)` once
    /// the store installed every commit the ledger had when it was asked.
    func readBarrier(done: @escaping (VarlinkError?) -> Void) {
        guard let ledger else { return done(nil) }
        ledger.readBarrier { [weak self] result in
            switch result {
            case .success(let revision): self?.whenInstalled(revision) { done(nil) }
            case .failure(let error): done(error)
            }
        }
    }

    /// Runs `then` once the store installed `revision` (now, if it has).
    func whenInstalled(_ revision: UInt64, then: @escaping () -> Void) {
        if self.revision >= revision { return then() }
        installWaiters.append((revision, then))
    }
}

/// A backend of tetherd other than SQLite (`tetherd --backend SCHEME:SPEC`):
/// it opens a store whose `ledger` is set and whose states are loaded.
public protocol StoreBackend {
    static func open(spec: String, options: StoreBackendOptions, log: EventLog) throws(TetherError) -> Store
}

/// The daemon's settings a backend's store takes.
public struct StoreBackendOptions {
    public var logCapacity: Int
    public var logBytes: Int
    public var maxStates: Int
    /// A snapshot file to start from (`--restore`), under `newEpoch`.
    public var restore: String?
    public var newEpoch: String

    public init(logCapacity: Int, logBytes: Int, maxStates: Int, restore: String?, newEpoch: String) {
        self.logCapacity = logCapacity
        self.logBytes = logBytes
        self.maxStates = maxStates
        self.restore = restore
        self.newEpoch = newEpoch
    }
}

extension TetherMethod {
    /// The methods that read states (or the revision): on a host a ledger
    /// feeds, each waits for a read barrier first (`Store.readsAfterBarrier`).
    var readsStates: Bool {
        switch self {
        case .get, .list, .describe, .watch, .stats: return true
        default: return false
        }
    }
}
