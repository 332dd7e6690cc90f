import Foundation
import Glibc
import XCTest

/// A real `tetherd` on a temporary socket, for one test.
///
/// It is started with `NOTIFY_SOCKET` pointing at a datagram socket of the
/// fixture's, and `init` returns once the daemon has sent `READY=1` (the
/// systemd readiness protocol): no sleeping, no polling of the socket file.
/// `stop()` sends SIGTERM and waits for the exit; `deinit` does it too.
final class DaemonFixture {
    let directory: String
    let socketPath: String
    /// `unix:<socketPath>`, what clients take as `--address`.
    var address: String { "unix:\(socketPath)" }
    let process: Process
    private let stderrPipe = Pipe()
    private var stopped = false

    /// The directory of the built products (tetherd, tetherctl): the one
    /// that holds this test bundle.
    static var productsDirectory: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // swift test runs <products>/<Name>PackageTests.xctest
        if url.pathExtension == "xctest" { url = url.deletingLastPathComponent() }
        return url.path
    }

    static func product(_ name: String) -> String { productsDirectory + "/" + name }

    /// A memory figure of the daemon from /proc/PID/status, in bytes:
    /// "VmRSS" (resident now) or "VmHWM" (its peak); 0 when unreadable.
    func memory(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return 0 }
        return kib * 1024
    }

    /// `TETHER_TEST_ETCD=URL,…` (and `TETHER_TEST_TETHERD_ETCD`, the
    /// tetherd-etcd to run): every fixture's daemon runs on that etcd
    /// cluster instead of SQLite (docs/daemon.md, "Several machines").
    static var etcdBackend: (endpoints: String, tetherd: String)? {
        let env = ProcessInfo.processInfo.environment
        guard let endpoints = env["TETHER_TEST_ETCD"], !endpoints.isEmpty else { return nil }
        return (endpoints, env["TETHER_TEST_TETHERD_ETCD"] ?? "Backends/Etcd/.build/debug/tetherd-etcd")
    }

    /// The cluster's tetherd keys removed: the daemon about to start makes
    /// a new epoch, and starts at revision 0 as a fresh SQLite store does.
    static func wipeEtcd(_ endpoints: String) throws {
        let (status, _, errors) = try run("/usr/bin/env", ["etcdctl", "--endpoints", endpoints, "del", "--prefix", "/tether/"],
                                          environment: ["ETCDCTL_API": "3"])
        if status != 0 { throw FixtureError("etcdctl del --prefix /tether/ failed: \(errors)") }
    }

    /// The options that only the SQLite backend takes, dropped.
    static func withoutSQLiteOptions(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var skip = false
        for (i, arg) in arguments.enumerated() {
            if skip { skip = false; continue }
            if ["--memory"].contains(arg) { continue }
            if ["--durability", "--group-commit", "--marker-interval", "--data-dir"].contains(arg), i + 1 < arguments.count {
                skip = true
                continue
            }
            out.append(arg)
        }
        return out
    }

    /// `socketPath` and `dataDirectory` default to `tetherd.sock` and
    /// `data` in the fixture's own temporary directory.
    init(arguments: [String] = [], environment extra: [String: String] = [:],
         socketPath chosenSocket: String? = nil, dataDirectory: String? = nil,
         file: StaticString = #filePath, line: UInt = #line) throws {
        directory = try temporaryDirectory("tetherd-test")
        socketPath = chosenSocket ?? directory + "/tetherd.sock"

        let notifyPath = directory + "/notify"
        let notify = try DaemonFixture.datagramSocket(boundTo: notifyPath)
        defer { close(notify) }

        process = Process()
        process.executableURL = URL(fileURLWithPath: DaemonFixture.product("tetherd"))
        process.arguments = ["--address", "unix:\(socketPath)", "--data-dir", dataDirectory ?? directory + "/data"] + arguments
        if let etcd = DaemonFixture.etcdBackend {
            // The same test against a tetherd on etcd (Tests/etcd/daemon-tests.sh):
            // SQLite's own options left out, and a fresh cluster keyspace for
            // each new store. A data directory an earlier daemon of the test
            // had stands for the same store (a restart): kept.
            let given = process.arguments!
            let data = given.lastIndex(of: "--data-dir").flatMap { $0 + 1 < given.count ? given[$0 + 1] : nil } ?? directory + "/data"
            if !FileManager.default.fileExists(atPath: data) {
                try DaemonFixture.wipeEtcd(etcd.endpoints)
                try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            }
            process.executableURL = URL(fileURLWithPath: etcd.tetherd)
            process.arguments = DaemonFixture.withoutSQLiteOptions(process.arguments!) + ["--backend", "etcd:" + etcd.endpoints]
        }
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notifyPath
        environment.removeValue(forKey: "LISTEN_FDS")
        environment.removeValue(forKey: "LISTEN_PID")
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()

        // Wait for READY=1, or for the daemon to die first (then say why).
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(60)
        while true {
            var pfd = pollfd(fd: notify, events: Int16(POLLIN), revents: 0)
            let rc = poll(&pfd, 1, 200)
            if rc > 0 {
                let n = recv(notify, &buffer, buffer.count, 0)
                if n > 0, String(decoding: buffer[..<n], as: UTF8.self).split(separator: "\n").contains("READY=1") {
                    break
                }
            }
            if !process.isRunning {
                let text = String(decoding: stderrPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                throw FixtureError("tetherd exited with status \(process.terminationStatus) before it was ready:\n\(text)")
            }
            if Date() > deadline {
                process.terminate()
                throw FixtureError("tetherd sent no READY=1 within 60 s")
            }
        }
    }

    /// SIGTERM, then waits; returns the exit status and what it logged.
    @discardableResult
    func stop() -> (status: Int32, log: String) {
        if !stopped {
            stopped = true
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
        }
        let log = String(decoding: stderrPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, log)
    }

    deinit {
        if !stopped { stop() }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The longest a program run by `run` may take (the slowest, a
    /// daemon's start on a loaded machine, takes a few seconds).
    static let runDeadline: Double = 120

    /// Runs a built product or any program; returns status and output.
    /// `unset`: variables of this process's environment the child does not get.
    static func run(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:],
                    unset: [String] = [], input: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : product(executable))
        child.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in extra { environment[key] = value }
        for key in unset { environment.removeValue(forKey: key) }
        child.environment = environment
        let out = Pipe(), err = Pipe()
        child.standardOutput = out
        child.standardError = err
        if let input {
            let inPipe = Pipe()
            child.standardInput = inPipe
            try child.run()
            inPipe.fileHandleForWriting.write(Data(input.utf8))
            try inPipe.fileHandleForWriting.close()
        } else {
            child.standardInput = FileHandle.nullDevice
            try child.run()
        }
        // A child that never ends (a second daemon that should have been
        // refused, and was not) fails its test instead of hanging the run:
        // SIGKILLed after `runDeadline`, its pipes then end.
        let pid = child.processIdentifier
        let overdue = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + runDeadline, execute: overdue)
        // Read both to the end before waiting: a full pipe would block it.
        final class Box: @unchecked Sendable { var data = Data() }
        let errBox = Box()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async { errBox.data = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        let errData = errBox.data
        child.waitUntilExit()
        overdue.cancel()
        if child.terminationReason == .uncaughtSignal && child.terminationStatus == SIGKILL {
            throw FixtureError("\(executable) \(arguments.joined(separator: " ")) did not end within \(Int(runDeadline)) s: killed; it wrote:\n\(String(decoding: errData, as: UTF8.self))")
        }
        return (child.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    private static func datagramSocket(boundTo path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket failed: errno \(errno)") }
        let rc = withUnixAddress(path) { bind(fd, $0, $1) }
        guard rc == 0 else { close(fd); throw FixtureError("bind \(path) failed: errno \(errno)") }
        return fd
    }
}

/// Calls `body` with `path` as a Unix socket address (cut to fit).
func withUnixAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        let bytes = Array(path.utf8)
        raw.copyBytes(from: bytes.prefix(raw.count - 1))
        raw[min(bytes.count, raw.count - 1)] = 0
    }
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A raw stream connection to the daemon at `path`, whose reads a test
/// controls; `receiveBuffer` sets SO_RCVBUF first.
func connectStream(_ path: String, receiveBuffer: Int32? = nil) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw FixtureError("socket failed: errno \(errno)") }
    if var size = receiveBuffer {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    guard withUnixAddress(path, { Glibc.connect(fd, $0, $1) }) == 0 else {
        close(fd)
        throw FixtureError("connect failed: errno \(errno)")
    }
    return fd
}

/// A new directory under the temporary directory, named `prefix` and six
/// random characters (mkdtemp): the caller removes it.
func temporaryDirectory(_ prefix: String) throws -> String {
    var bytes = Array((NSTemporaryDirectory() + prefix + ".XXXXXX").utf8CString)
    guard mkdtemp(&bytes) != nil else { throw FixtureError("mkdtemp failed: errno \(errno)") }
    return bytes.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
