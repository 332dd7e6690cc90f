/// A daemon kept across inputs (making a new one for each was ~2% of an
/// input) and emptied between them, so that an input's run does not depend
/// on the inputs before it (`Service.reset`: it then answers as a new one
/// would; ServiceResetTests).
///
/// Emptied at the end of the input that used it (`release`, from
/// `DaemonFuzzer.run`), not at the start of the next: libFuzzer counts each
/// run's mallocs and frees, and runs an input that ends holding more than
/// it started with a second time, to look for a leak. A daemon holding the
/// input's states, log and sessions until the next input's reset made
/// about one input in four run twice (perf, a replay of the fast corpus:
/// 10% of the time under `TryDetectingAMemoryLeak`).
final class Kept<Daemon> {
    private var daemon: Daemon?
    /// Taken since it was last emptied.
    private var used = false
    private let make: () -> Daemon
    private let empty: (Daemon) -> Void

    init(make: @escaping () -> Daemon, empty: @escaping (Daemon) -> Void) {
        self.make = make
        self.empty = empty
    }

    /// The daemon, as a new one is: emptied here too if the last input did
    /// not release it (a replay of several targets' checks takes it twice).
    func take() -> Daemon {
        if let daemon {
            if used { empty(daemon) }
            used = true
            return daemon
        }
        let made = make()
        daemon = made
        used = true
        return made
    }

    /// Empties it, once the input's checks are done with it.
    func release() {
        guard let daemon, used else { return }
        empty(daemon)
        used = false
    }
}
