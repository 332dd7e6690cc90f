import Glibc
import TetherCore
import TetherDaemon
import TetherWire

/// What the fuzzer (Sources/tetherd-fuzz, `make fuzz`) runs on each input,
/// in process, and what FuzzRegressionTests replays: the input is a byte
/// stream a client might send. Its checks are four targets (`Target`), each
/// its own libFuzzer run; a replay with no target runs them all.
///
/// 1. **The frame decoder** (`FrameDecoderCheck`; `fast`).
/// 2. **The dispatcher** (`SessionRun`; `fast` on an in-memory store,
///    `watch` on one too, `store` on SQLite): an in-process daemon with
///    small limits. Each NUL-terminated message of the input goes to a
///    client session; when that session closes (a call after its Watch, a
///    message past the limit, a refused peer) the next message goes to a
///    new one, whose peer rotates among the owner, a granted uid
///    (read-write `a`, read `b`) and a stranger. (A Snapshot writes its
///    copy into the fuzzer's own directory, whatever path the input
///    names.) After each message:
///    - the session's output is a sequence of NUL-terminated replies, each
///      a valid Reply that the interface definition accepts (its output
///      type, or its error's fields, no unknown field);
///    - exactly one final reply per call (none for a oneway call), or a
///      stream for a Watch; the LimitExceeded of an oversize message;
///    - the revision never decreases, moves by at most one per call, and
///      only for a write that says it changed something;
///    and the idle timer ticks every third message (progress replies).
/// 3. **The watches** (`WatchCheck`; `watch` and `store`): four sessions
///    watch the daemon from the start; each reply they get is checked,
///    and at the end applying them reproduces every state (List and Get),
///    and a Watch from revision 0 replays them (or resyncs, flagged).
/// 4. **The fast paths** (`FastPathCheck`; `fastpath`): every message gets
///    the same reply bytes, revision and close from a pair of daemons, one
///    with the fast paths off.
/// 5. **The store** (`store`): its row readers (`SQLiteStore.checkReaders`),
///    and the SQLite store (synced after each message, as the daemon does
///    at the end of each loop turn), opened again as a restarted daemon
///    would, holds the same revision, epoch, states (Get and Describe
///    answer the same) and log (a Watch from the oldest revision replays
///    the same replies) (`checkRestart`).
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
    /// then for three in-process daemons, then for four watches and the
    /// end-of-input reads, so the checks are four targets, each its own
    /// libFuzzer run with its own corpus (`make fuzz` runs all;
    /// docs/robustness.md, "The fuzzer"). Every check runs in one of them
    /// on every input of that target; a replay with no target runs all.
    public enum Target: String, Sendable, CaseIterable {
        /// What issue 36 names: the frame decoder, and the dispatcher and
        /// sessions on an in-memory store, each reply checked; no watch.
        case fast
        /// The same dispatcher on an in-memory store, watched by four
        /// sessions from the start, read back at the end (`WatchCheck`).
        case watch
        /// The fast paths against the slow path (`FastPathCheck`): two
        /// daemons, no watches, the same messages.
        case fastpath
        /// The dispatcher on the SQLite store, watched, synced after each
        /// message and opened again as a restarted daemon would.
        case store
    }

    /// Runs one input; returns the violations (empty when every invariant
    /// held). `target` nil runs every target's checks (FuzzRegressionTests).
    public static func run(_ input: UnsafeRawBufferPointer, target: Target? = nil) -> [String] {
        defer {
            // Everything the input made is freed before it returns (Kept).
            Decodes.reset()
            SessionRun.kept.release()
            FastPathCheck.kept.release()
        }
        var problems: [String] = []
        func runs(_ t: Target) -> Bool { target == nil || target == t }
        if runs(.fast) {
            FrameDecoderCheck.run(input, &problems)
        }
        if runs(.fastpath) {
            FastPathCheck.run(input, &problems)
        }
        if runs(.store) {
            // The store's row readers (and an input that is an SQLite file,
            // loaded, salvaged and loaded again) belong to the disk's target.
            problems += SQLiteStore.checkReaders(input, scratch: storeScratch)
        }
        // The dispatcher, once per target that has it: unwatched (fast),
        // watched (watch), watched on SQLite (store).
        for (t, durable, watched) in [(Target.fast, false, false), (.watch, false, true), (.store, true, true)] where runs(t) {
            var run = SessionRun(durable: durable, watched: watched)
            run.feed(input)
            run.finish()
            problems += run.problems
        }
        return problems
    }

    public static func run(_ bytes: [UInt8], target: Target? = nil) -> [String] {
        bytes.withUnsafeBytes { run($0, target: target) }
    }
}
