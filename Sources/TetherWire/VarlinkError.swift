// VarlinkError.swift — Varlink errors: the standard org.varlink.service ones, io.tether's, and Tether's codes as names.

import TetherCore

/// A Varlink error: a fully-qualified name and its parameters, ready to be
/// sent as a reply (`reply`) or read back from one (`init(reply:)`).
///
/// Everything in this module that refuses input throws one, so a server
/// sends what it caught as it is. `detail` says in words what was wrong,
/// for a log line: io.tether's errors carry it as their `message` parameter;
/// org.varlink.service's errors have no such field, so it stays local.
public struct VarlinkError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var parameters: ValueObject
    public var detail: String

    public init(name: String, parameters: ValueObject = ValueObject(), detail: String = "") {
        self.name = name
        self.parameters = parameters
        self.detail = detail
    }

    /// The error a reply carries; nil when the reply is not an error.
    public init?(reply: Reply) {
        guard let name = reply.error else { return nil }
        self.name = name
        parameters = reply.parameters
        if case .string(let message)? = reply.parameters["message"] {
            detail = message
        } else {
            detail = ""
        }
    }

    /// The reply that reports this error.
    public var reply: Reply { Reply(parameters: parameters, error: name) }

    public var description: String {
        var text = name
        let shown = (try? Value.object(parameters).jsonString()) ?? "{}"
        if shown != "{}" { text += " " + shown }
        if !detail.isEmpty, parameters["message"] == nil { text += ": " + detail }
        return text
    }

    // MARK: org.varlink.service

    public static let serviceInterface = "org.varlink.service"

    public static func interfaceNotFound(_ interface: String) -> VarlinkError {
        VarlinkError(name: "org.varlink.service.InterfaceNotFound", parameters: members(["interface": .string(interface)]),
                     detail: "no interface \(quoted(interface)) on this service")
    }

    public static func methodNotFound(_ method: String) -> VarlinkError {
        VarlinkError(name: "org.varlink.service.MethodNotFound", parameters: members(["method": .string(method)]),
                     detail: "no method \(quoted(method)) on this service")
    }

    public static func methodNotImplemented(_ method: String) -> VarlinkError {
        VarlinkError(name: "org.varlink.service.MethodNotImplemented", parameters: members(["method": .string(method)]),
                     detail: "\(quoted(method)) is defined but not implemented")
    }

    /// `parameter` names the parameter as a path: "ops[2].name".
    public static func invalidParameter(_ parameter: String, _ detail: String) -> VarlinkError {
        VarlinkError(name: "org.varlink.service.InvalidParameter", parameters: members(["parameter": .string(parameter)]),
                     detail: detail)
    }

    public static func permissionDenied(_ detail: String) -> VarlinkError {
        VarlinkError(name: "org.varlink.service.PermissionDenied", detail: detail)
    }

    public static func expectedMore(_ method: String) -> VarlinkError {
        VarlinkError(name: "org.varlink.service.ExpectedMore", detail: "\(method) streams its replies: call it with \"more\": true")
    }

    // MARK: io.tether

    public static let tetherInterface = "io.tether"

    /// A Tether error under its io.tether name, with the state it concerns
    /// and the index of the op in a transaction.
    public init(_ error: TetherError, name stateName: String? = nil, op: Int? = nil) {
        self.init(name: VarlinkError.tetherInterface + "." + VarlinkError.errorName(of: error.code),
                  parameters: VarlinkError.members(["message": .string(error.message),
                                                    "name": stateName.map(Value.string),
                                                    "op": op.map { .int(Int64($0)) }]),
                  detail: error.message)
    }

    /// The Tether error this is, for io.tether's errors named after an
    /// `ErrorCode`; nil for every other error.
    public var tetherError: TetherError? {
        let prefix = VarlinkError.tetherInterface + "."
        guard name.hasPrefix(prefix) else { return nil }
        let member = String(name.dropFirst(prefix.count))
        guard let code = ErrorCode.allCases.first(where: { VarlinkError.errorName(of: $0) == member }) else { return nil }
        return TetherError(code, detail)
    }

    /// The io.tether error name of each code, e.g. "NotFound" for TETHER_ENOTFOUND.
    public static func errorName(of code: ErrorCode) -> String {
        switch code {
        case .invalidArgument: "InvalidArgument"
        case .stale: "Stale"
        case .wrongType: "WrongType"
        case .badPath: "BadPath"
        case .notFound: "NotFound"
        case .badJSON: "BadJSON"
        case .outOfRange: "OutOfRange"
        case .noMemory: "NoMemory"
        case .feedbackLoop: "FeedbackLoop"
        case .busy: "Busy"
        case .wrongThread: "WrongThread"
        case .loopFailure: "LoopFailure"
        case .readOnly: "ReadOnly"
        case .cycle: "Cycle"
        case .rejected: "Rejected"
        case .untrusted: "Untrusted"
        case .timedOut: "TimedOut"
        }
    }

    /// A compare-on-revision precondition (number `index`) did not hold.
    public static func revisionMismatch(name: String, expected: UInt64, actual: UInt64, index: Int) -> VarlinkError {
        let message = actual == 0
            ? "state \(quoted(name)) does not exist; the precondition expected revision \(expected)"
            : expected == 0
                ? "state \(quoted(name)) exists (modified at revision \(actual)); the precondition expected it not to"
                : "state \(quoted(name)) was modified at revision \(actual); the precondition expected \(expected)"
        return VarlinkError(name: "io.tether.RevisionMismatch",
                            parameters: members(["name": .string(name), "expected": wireInt(expected),
                                                 "actual": wireInt(actual), "index": .int(Int64(index)),
                                                 "message": .string(message)]),
                            detail: message)
    }

    /// What went over a limit, as the `Limit` enum of io.tether names it.
    public enum Limit: String, Sendable, CaseIterable {
        case message, value, ops, preconditions, names
        case nameLength = "name_length"
        /// Admission caps on one uid (tetherd's Admission): its open
        /// connections, the bytes of its unfinished calls.
        case connections, input
        /// A write's tag (tetherd's Store.maxTag), and how many states
        /// the daemon holds (its --max-states).
        case tag, states
        /// The bytes one commit may change on a daemon whose states live
        /// in etcd (its request limit bounds a Txn).
        case commit
    }

    public static func limitExceeded(_ limit: Limit, maximum: Int, actual: Int, _ message: String) -> VarlinkError {
        VarlinkError(name: "io.tether.LimitExceeded",
                     parameters: members(["limit": .string(limit.rawValue), "maximum": .int(Int64(maximum)),
                                          "actual": .int(Int64(actual)), "message": .string(message)]),
                     detail: message)
    }

    /// A message that is JSON but not a Varlink call (or reply); `field`
    /// names the envelope field at fault.
    public static func invalidCall(field: String?, _ message: String) -> VarlinkError {
        VarlinkError(name: "io.tether.InvalidCall",
                     parameters: members(["field": field.map(Value.string), "message": .string(message)]),
                     detail: message)
    }

    public static func accessDenied(name stateName: String?, _ message: String) -> VarlinkError {
        VarlinkError(name: "io.tether.AccessDenied",
                     parameters: members(["name": stateName.map(Value.string), "message": .string(message)]),
                     detail: message)
    }

    /// The daemon's store cannot take a write (its disk is full): nothing
    /// of the call was applied; reads go on, and writes succeed again once
    /// the disk has room (docs/protocol.md, docs/robustness.md).
    public static func storageFull(_ message: String) -> VarlinkError {
        VarlinkError(name: "io.tether.StorageFull", parameters: members(["message": .string(message)]), detail: message)
    }

    /// A message that is not JSON (or not UTF-8): io.tether.BadJSON.
    static func badJSON(_ message: String) -> VarlinkError {
        VarlinkError(TetherError(.badJSON, message))
    }

    // MARK: Helpers

    /// An object of the non-nil members, in the order given.
    static func members(_ pairs: KeyValuePairs<String, Value?>) -> ValueObject {
        // At its size from the start: every refused call builds one (a
        // hostile peer's garbage too), and growing it member by member was
        // most of its allocations.
        var table = MemberTable(reservingCapacity: pairs.count)
        for (key, value) in pairs {
            if let value { table[MemberKey(key)] = value }
        }
        return ValueObject(table)
    }

    static func quoted(_ s: String) -> String {
        (try? Value.string(s).jsonString()) ?? s
    }
}

/// A revision or count as a Varlink int (int64); never negative here.
func wireInt(_ n: UInt64) -> Value {
    .int(Int64(exactly: n) ?? .max)
}
