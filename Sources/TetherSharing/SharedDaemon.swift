import Glibc
import Synchronization

/// The connections `@Shared(.tether(...))` values use: one runtime for the
/// process (made on first use, with its own loop thread) and one
/// connection per daemon address, shared by every `@Shared` of that
/// address and closed when the last of them goes.
public enum SharedDaemon {
    private struct Registry {
        var runtime: Runtime?
        var timeoutMilliseconds: UInt32 = 3_000
        var log: @Sendable (String) -> Void = { line in fputs(line + "\n", stderr) }
        var remotes: [String: WeakRemote] = [:]
        var references: [String: WeakReference] = [:]
    }
    private struct WeakRemote { weak var remote: Remote? }
    private struct WeakReference { weak var reference: AnyObject? }
    private static let registry = Mutex(Registry())

    /// The runtime the shared states live in: make computeds and effects
    /// over `@Shared` values here, so that they are their dependencies.
    public static var runtime: Runtime {
        registry.withLock { registry in
            if let runtime = registry.runtime { return runtime }
            do throws(TetherError) {
                let runtime = try Runtime()
                registry.runtime = runtime
                return runtime
            } catch {
                fatalError("tether: making the runtime of @Shared values: \(error.message)")
            }
        }
    }

    /// How long connecting waits for a daemon that accepts but does not
    /// answer before `@Shared` falls back on its default (3 s); nothing
    /// listening fails at once.
    public static var connectTimeoutMilliseconds: UInt32 {
        get { registry.withLock { $0.timeoutMilliseconds } }
        set { registry.withLock { $0.timeoutMilliseconds = newValue } }
    }

    /// Where a `@Shared` that finds no daemon says so (default: one line
    /// on stderr). Tests and programs with a logger set their own.
    public static var log: @Sendable (String) -> Void {
        get { registry.withLock { $0.log } }
        set { registry.withLock { $0.log = newValue } }
    }

    /// The one reference of `key` in this process while any `@Shared`
    /// holds it (swift-sharing's rule: equal keys, one value).
    static func reference<Value>(_ key: TetherKey<Value>, default defaultValue: Value) -> SharedReference<Value> {
        let id = "\(key.address ?? "")\u{0}\(key.name)\u{0}\(Value.self)"
        if let known = registry.withLock({ $0.references[id]?.reference }) as? SharedReference<Value> {
            return known
        }
        let made = SharedReference(key: key, default: defaultValue)
        return registry.withLock { registry in
            // Another thread may have made it meanwhile: keep the first.
            if let known = registry.references[id]?.reference as? SharedReference<Value> { return known }
            registry.references[id] = WeakReference(reference: made)
            return made
        }
    }

    /// The connection to `address`, made when none is open.
    static func remote(_ address: String?) throws(TetherError) -> Remote {
        let id = address ?? ""
        if let open = registry.withLock({ $0.remotes[id]?.remote }) { return open }
        let runtime = self.runtime
        let made = try runtime.connect(to: address, timeoutMilliseconds: connectTimeoutMilliseconds)
        return registry.withLock { registry in
            if let open = registry.remotes[id]?.remote { return open }
            registry.remotes[id] = WeakRemote(remote: made)
            return made
        }
    }
}
