import Dispatch
import Foundation
import Glibc
import TetherCore
import TetherWire
import XCTest

/// A fake tetherd on a socket of the test's: each call is handed to
/// `answer`, which replies through the connection (or never: a daemon that
/// accepts and answers nothing). `dropAll()` closes every open connection,
/// as a daemon that goes away does. Every Watch call is recorded.
final class ScriptedDaemon: @unchecked Sendable {
    /// One accepted connection.
    final class Connection: @unchecked Sendable {
        let fd: Int32
        init(fd: Int32) { self.fd = fd }

        func send(_ bytes: [UInt8]) {
            var done = 0
            while done < bytes.count {
                let n = bytes[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n <= 0 { return }
                done += n
            }
        }

        func reply(_ parameters: ValueObject, continues: Bool = false) {
            var out: [UInt8] = []
            try! MessageEncoder.append(Reply(parameters: parameters, continues: continues), to: &out)
            send(out)
        }

        func error(_ name: String, _ message: String) {
            var parameters = ValueObject()
            parameters["message"] = .string(message)
            var out: [UInt8] = []
            try! MessageEncoder.append(Reply(parameters: parameters, error: name), to: &out)
            send(out)
        }
    }

    let directory: String
    let path: String
    var address: String { "unix:" + path }
    private let listener: Int32
    private let lock = NSLock()
    private var open: [Int32] = []
    private var watchCalls: [WatchParameters] = []
    /// Signalled once per Watch call, after `answer` returned.
    let watchAnswered = DispatchSemaphore(value: 0)
    /// Signalled when a connection that carried a Watch is closed by the client.
    let watchClosed = DispatchSemaphore(value: 0)
    /// The handler: the call, the number of Watch calls so far (this one
    /// included), the connection to answer on.
    private let answer: (Call, Int, Connection) -> Void

    var watches: [WatchParameters] { lock.lock(); defer { lock.unlock() }; return watchCalls }

    /// Connections accepted so far, in the kernel's order (one accept
    /// thread takes them from the backlog first come, first served).
    private var acceptedCount = 0
    private let acceptedChanged = NSCondition()
    var accepted: Int { acceptedChanged.lock(); defer { acceptedChanged.unlock() }; return acceptedCount }

    /// Waits until `count` connections were accepted (false after 60 s).
    func waitAccepted(_ count: Int) -> Bool {
        acceptedChanged.lock()
        defer { acceptedChanged.unlock() }
        let deadline = Date().addingTimeInterval(60)
        while acceptedCount < count { if !acceptedChanged.wait(until: deadline) { return false } }
        return true
    }

    /// `accepting: false`: a listener that never accepts (connections
    /// wait in its backlog, as with a stopped daemon).
    init(accepting: Bool = true, answer: @escaping (Call, Int, Connection) -> Void) throws {
        directory = try temporaryDirectory("tether-fake")
        path = directory + "/fake.sock"
        self.answer = answer
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw FixtureError("socket: errno \(errno)") }
        guard withUnixAddress(path, { bind(listener, $0, $1) }) == 0, listen(listener, 16) == 0 else {
            throw FixtureError("bind/listen: errno \(errno)")
        }
        guard accepting else { return }
        Thread.detachNewThread { [self] in
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 { return }
                lock.lock(); open.append(fd); lock.unlock()
                acceptedChanged.lock(); acceptedCount += 1; acceptedChanged.broadcast(); acceptedChanged.unlock()
                Thread.detachNewThread { [self] in serve(Connection(fd: fd)) }
            }
        }
    }

    /// Closes every open connection (the client sees the daemon go away).
    func dropAll() {
        lock.lock()
        let all = open
        lock.unlock()
        for fd in all { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        dropAll()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func serve(_ connection: Connection) {
        let fd = connection.fd
        defer {
            lock.lock(); open.removeAll { $0 == fd }; lock.unlock()
            close(fd)
        }
        var decoder = MessageDecoder()
        var buffer = [UInt8](repeating: 0, count: 65536)
        var carriedWatch = false
        while true {
            while let message = try? decoder.next() {
                guard let call = try? Call(parsing: message) else { return }
                var count = 0
                if call.method == "io.tether.Watch" {
                    carriedWatch = true
                    lock.lock()
                    if let p = try? WatchParameters(parameters: call.parameters) { watchCalls.append(p) }
                    count = watchCalls.count
                    lock.unlock()
                }
                answer(call, count, connection)
                if call.method == "io.tether.Watch" { watchAnswered.signal() }
            }
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 {
                if carriedWatch { watchClosed.signal() }
                return
            }
            decoder.append(buffer[..<n])
        }
    }
}

/// Runs `body` on a thread of its own and waits for it at most `seconds`
/// (a guard against a hang, which is then a failure, not a stuck test);
/// `unstick` runs first when it did not finish (SIGCONT a daemon, say).
func guarded(_ seconds: Double = 60, _ what: String, unstick: () -> Void = {}, file: StaticString = #filePath, line: UInt = #line,
             _ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        body()
        done.signal()
    }
    if done.wait(timeout: .now() + seconds) == .timedOut {
        XCTFail("\(what): still blocked after \(Int(seconds)) s", file: file, line: line)
        unstick()
        _ = done.wait(timeout: .now() + seconds)
    }
}
