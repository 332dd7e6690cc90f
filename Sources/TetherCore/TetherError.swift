// TetherError.swift — the error codes and error type shared by the core and the C face.

/// The error model shared by the core and the C face. Raw values are the
/// `TETHER_E*` codes of include/tether.h, so the C face passes them through.
public enum ErrorCode: Int32, Sendable, CaseIterable {
    case invalidArgument = -1   // TETHER_EINVAL
    case stale = -2             // TETHER_ESTALE
    case wrongType = -3         // TETHER_ETYPE
    case badPath = -4           // TETHER_EPATH
    case notFound = -5          // TETHER_ENOTFOUND
    case badJSON = -6           // TETHER_EJSON
    case outOfRange = -7        // TETHER_ERANGE
    case noMemory = -8          // TETHER_ENOMEM
    case feedbackLoop = -9      // TETHER_ELOOP
    case busy = -10             // TETHER_EBUSY
    case wrongThread = -11      // TETHER_ETHREAD
    case loopFailure = -12      // TETHER_EUV
    case readOnly = -13         // TETHER_EREADONLY
    case cycle = -14            // TETHER_ECYCLE
    case rejected = -15         // TETHER_EREJECTED
    case untrusted = -16        // TETHER_EUNTRUSTED
    case timedOut = -17         // TETHER_ETIMEDOUT
}

/// An error with a message that says what was wrong, in words a C programmer
/// can act on. Messages are built only on the failure path.
public struct TetherError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
