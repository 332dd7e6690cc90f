import Glibc

/// Where the Swift API reports errors it cannot throw: a write through a
/// `value` setter that a validator, a range, a read-only descriptor or a
/// type lock refuses; a computed whose result cannot be encoded. The
/// default prints one line to stderr; a program may set its own (for
/// example to fail a test, or to log through its logger). Called on the
/// thread that made the call.
public enum TetherErrors {
    public typealias Handler = @Sendable (TetherError) -> Void

    private static let lock = Lock()
    nonisolated(unsafe) private static var current: Handler = { error in
        var line = "tether: \(error.message)\n"
        line.withUTF8 { _ = fputs(String(decoding: $0, as: UTF8.self), stderr) }
    }

    /// The handler in force.
    public static var handler: Handler {
        get { lock.lock(); defer { lock.unlock() }; return current }
        set { lock.lock(); current = newValue; lock.unlock() }
    }

    static func report(_ error: TetherError) { handler(error) }
}

extension TetherError {
    /// Any error a user callback threw, as a TetherError (others are
    /// `.rejected`, with their description).
    static func from(_ error: any Error) -> TetherError {
        if let known = error as? TetherError { return known }
        return TetherError(.rejected, String(describing: error))
    }
}
