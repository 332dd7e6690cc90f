// Support.swift — what every subcommand shares: options, the connection, output, errors and exit codes.

import ArgumentParser
import Glibc
import TetherCore
import TetherWire

/// tetherctl's exit codes (see the root command's discussion and docs/tetherctl.md).
enum Exit {
    static let ok: Int32 = 0
    /// The daemon answered with an error (or with a reply tetherctl cannot read).
    static let daemonError: Int32 = 1
    /// A usage error: bad options, a value that is not JSON, a bad document.
    static let usage: Int32 = 2
    /// Cannot connect to the daemon, or the connection broke before the answer.
    static let cannotConnect: Int32 = 3
    /// A transaction's precondition failed (io.tether.RevisionMismatch).
    static let revisionMismatch: Int32 = 4
    /// No such state, or nothing at the path (io.tether.NotFound).
    static let notFound: Int32 = 5
}

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The daemon's address, unix:/path/to/socket.",
        discussion: "Default: $TETHER_ADDRESS, else unix:/run/tether/tetherd.sock for root, else unix:$XDG_RUNTIME_DIR/tether/tetherd.sock (unix:${TMPDIR:-/tmp}/tether-UID/tetherd.sock without XDG_RUNTIME_DIR). Before sending anything tetherctl checks the socket's directory and that the process listening is its own uid, root or $TETHER_DAEMON_UID (exit 3 otherwise).",
        valueName: "address"))
    var address: String?

    @Option(name: .long, help: ArgumentHelp(
        "How long to wait for the daemon, in seconds (0: without limit).",
        discussion: "Connecting, and the answer to the call (for watch: its first reply), must come within this time, else tetherctl exits 3 naming the timeout; a set, rm or tx that timed out may or may not have been applied.",
        valueName: "seconds"))
    var timeout: Double = 10

    @Flag(name: .long, help: "Indent the JSON output (default: one compact line).")
    var pretty = false

    func validate() throws {
        if !(timeout >= 0) || !timeout.isFinite { throw ValidationError("--timeout must be a number of seconds, 0 or more") }
    }

    /// Resolves the address and connects, or reports why not (exit 3).
    func connect() throws -> VarlinkConnection {
        let daemon: DaemonAddress
        do {
            if let address {
                daemon = try DaemonAddress(parsing: address)
            } else {
                daemon = try DaemonAddress.standard(uid: getuid(), environment: Environment.current())
            }
        } catch {
            let tried = address ?? "$TETHER_ADDRESS (\(Environment.current()["TETHER_ADDRESS"] ?? ""))"
            throw report(.cannotConnect(address: tried, reason: error.detail))
        }
        let trust: SocketTrust
        do {
            trust = try SocketTrust.current(environment: Environment.current())
        } catch {
            throw report(.untrusted(address: daemon.description, reason: error.message))
        }
        do {
            return try VarlinkConnection(address: daemon, trust: trust, timeout: timeout)
        } catch {
            throw report(error)
        }
    }

    /// One call on a fresh connection: its reply's parameters, checked
    /// against the typed model `reply`; reports any failure and throws the
    /// exit code for it.
    func call<R: WireStruct>(_ method: String, _ parameters: ValueObject = ValueObject(), reply: R.Type) throws -> ValueObject {
        let connection = try connect()
        defer { connection.close() }
        do {
            let result = try connection.call(method, parameters)
            try check(result, as: R.self)
            return result
        } catch {
            throw report(error)
        }
    }

    /// Prints `object` as one line of JSON (or indented with --pretty).
    func print(_ object: ValueObject) throws {
        try Output.line(.object(object), pretty: pretty)
    }
}

/// `--tag` and `--origin`, the transaction metadata of a write.
struct WriteOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("A tag for the commit: every watcher and observer of it gets it.", valueName: "tag"))
    var tag: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "An origin for the commit: an integer (int64, or a uint64 sent with the same bits).", valueName: "n"))
    var origin: String?

    func validate() throws {
        _ = try originValue()
    }

    func originValue() throws -> UInt64? {
        guard let origin else { return nil }
        if let n = UInt64(origin) { return n }
        if let n = Int64(origin) { return UInt64(bitPattern: n) }
        throw ValidationError("--origin must be an integer (int64 or uint64), not '\(origin)'")
    }
}

/// Checks a reply's parameters against the typed model of its method.
func check<R: WireStruct>(_ parameters: ValueObject, as type: R.Type) throws(ClientError) {
    do {
        _ = try R(parameters: parameters)
    } catch {
        throw .badReply("the reply does not match the interface: \(error)")
    }
}

/// Prints what went wrong on one line of stderr; returns the exit code to throw.
func report(_ error: ClientError) -> ExitCode {
    switch error {
    case .cannotConnect(let address, let reason):
        Output.error("cannot connect to \(address): \(reason)")
        return ExitCode(Exit.cannotConnect)
    case .connectionLost(let address, let reason):
        Output.error("lost the connection to \(address): \(reason)")
        return ExitCode(Exit.cannotConnect)
    case .interrupted:
        return ExitCode(Exit.ok)
    case .untrusted(let address, let reason):
        Output.error("refusing to talk to \(address): \(reason)")
        return ExitCode(Exit.cannotConnect)
    case .timedOut(let address, let seconds, let write):
        let limit = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
        Output.error("tetherd at \(address) did not answer within \(limit) s (--timeout \(limit)); is it stopped or hung?"
            + (write ? " The write may or may not have been applied (its outcome is unknown: get the state again once tetherd answers)." : ""))
        return ExitCode(Exit.cannotConnect)
    case .remote(let error):
        var line = error.name
        var rest = error.parameters
        if case .string(let message)? = rest["message"] {
            line += ": " + message
            rest = rest.removing("message")
        }
        if rest.count > 0, let json = try? Value.object(rest).jsonString() {
            line += " " + json
        }
        Output.error(line)
        switch error.name {
        case "io.tether.RevisionMismatch": return ExitCode(Exit.revisionMismatch)
        case "io.tether.NotFound": return ExitCode(Exit.notFound)
        default: return ExitCode(Exit.daemonError)
        }
    case .badReply(let detail):
        Output.error("tetherd sent a reply tetherctl cannot read: \(detail)")
        return ExitCode(Exit.daemonError)
    }
}

/// Reports a usage problem found after parsing (a value that is not
/// JSON, a bad transaction document) and returns exit code 2.
func usageError(_ message: String) -> ExitCode {
    Output.error(message)
    return ExitCode(Exit.usage)
}

extension ValueObject {
    func removing(_ key: String) -> ValueObject {
        var copy = ValueObject()
        for (k, v) in members where k.string != key { copy[k.string] = v }
        return copy
    }
}

/// stdout and stderr without Foundation.
enum Output {
    /// Writes one value as a line and flushes, so a reader sees each line as
    /// it comes. A closed stdout (a reader that went away: SIGPIPE is
    /// ignored) ends tetherctl quietly with exit 0.
    static func line(_ value: Value, pretty: Bool) throws {
        var bytes: [UInt8] = []
        do {
            try value.writeJSON(into: &bytes, pretty: pretty)
        } catch {
            Output.error("cannot print the reply as JSON: \(error.message)")
            throw ExitCode(Exit.daemonError)
        }
        bytes.append(UInt8(ascii: "\n"))
        try write(bytes)
    }

    static func write(_ bytes: [UInt8]) throws {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in Glibc.write(1, raw.baseAddress! + written, raw.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                // EPIPE (the reader is gone) or any other: nobody to tell.
                throw ExitCode(Exit.ok)
            }
            written += n
        }
    }

    /// One line on stderr, "tetherctl: ..."; newlines in `message` become spaces.
    static func error(_ message: String) {
        var text = "tetherctl: "
        for c in message.unicodeScalars { text.unicodeScalars.append(c == "\n" || c == "\r" ? " " : c) }
        text += "\n"
        var bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeMutableBytes { raw in Glibc.write(2, raw.baseAddress! + written, raw.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            written += n
        }
    }
}

enum Environment {
    /// The process environment, from `environ`.
    static func current() -> [String: String] {
        var result: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "=") {
                result[String(text[..<eq])] = String(text[text.index(after: eq)...])
            }
            p += 1
        }
        return result
    }
}

/// Input: a JSON argument, stdin ("-") or a file.
enum Input {
    /// All of a file descriptor's bytes.
    static func readAll(_ fd: Int32) -> (bytes: [UInt8], error: Int32?) {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress!, raw.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return (bytes, errno)
            }
            if n == 0 { return (bytes, nil) }
            bytes.append(contentsOf: chunk[..<n])
        }
    }

    /// The text of `argument`, or of stdin when it is "-", or of the file
    /// `path`; a usage error when it cannot be read.
    static func file(_ path: String) throws -> [UInt8] {
        if path == "-" {
            let (bytes, error) = readAll(0)
            if let error { throw usageError("cannot read stdin: \(String(cString: strerror(error)))") }
            return bytes
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw usageError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let (bytes, error) = readAll(fd)
        if let error { throw usageError("cannot read \(path): \(String(cString: strerror(error)))") }
        return bytes
    }

    /// A JSON value given on the command line ("-": read from stdin),
    /// with bytes where `bytesAt` says; `what` names it in errors.
    static func value(_ argument: String, bytesAt: [String], what: String) throws -> Value {
        let bytes: [UInt8] = argument == "-" ? try file("-") : Array(argument.utf8)
        let parsed = bytes.withUnsafeBytes { raw in
            Result { () throws(TetherError) -> Value in try Value(json: raw) }
        }
        let value: Value
        switch parsed {
        case .success(let v):
            value = v
        case .failure(let error):
            var message = "\(what) is not valid JSON: \(error.message.replacingOccurrences("invalid JSON at ", ""))"
            if argument != "-", let first = argument.unicodeScalars.first,
               !"\"[{-0123456789".unicodeScalars.contains(first), !["true", "false", "null"].contains(argument) {
                message += " (a string needs JSON quotes: '\"\(argument)\"')"
            }
            throw usageError(message)
        }
        guard !bytesAt.isEmpty else { return value }
        do {
            return try BytesAt.decode(value, at: bytesAt, parameter: "--bytes-at")
        } catch {
            throw usageError("\(what): \(error.detail)")
        }
    }

    /// A JSON Pointer argument; a usage error when it is malformed.
    static func path(_ text: String?) throws -> JSONPointer {
        guard let text else { return .root }
        do {
            return try JSONPointer(parsing: text)
        } catch {
            throw usageError("'\(text)' is not a path (a JSON Pointer such as /font/size, or \"\" for the whole value): \(error.message)")
        }
    }
}

extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        result += rest
        return result
    }
}
