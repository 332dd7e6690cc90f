import Glibc
import TetherCore
import TetherDaemon
import TetherWire
import XCTest

/// A daemon without sockets: a Service and its sessions, driven with the
/// bytes a client would send; replies are read back with TetherWire.
final class InProcessDaemon {
    let store: Store
    let service: Service

    init(limits: Limits = .defaults, logCapacity: Int = 1000, policy: AccessPolicy? = nil,
         admission: AdmissionLimits = .defaults) throws {
        store = try Store(limits: limits, logCapacity: logCapacity, epoch: "e1")
        service = Service(store: store, policy: policy ?? AccessPolicy(owner: getuid()), log: EventLog(quiet: true),
                          admission: admission)
    }

    func connect(uid: UInt32 = getuid()) -> Client {
        Client(session: service.open(peer: Peer(pid: 1, uid: uid, gid: uid)), limits: store.limits)
    }

    final class Client {
        let session: Session
        private var decoder: MessageDecoder

        init(session: Session, limits: Limits) {
            self.session = session
            decoder = MessageDecoder(maxMessage: limits.maxReply)
        }

        /// Sends raw bytes (one or more NUL-terminated messages).
        func send(raw: [UInt8]) {
            raw.withUnsafeBytes { session.receive($0) }
        }

        func send(_ method: String, _ parameters: [String: Value] = [:], more: Bool = false, oneway: Bool = false) {
            var object = ValueObject()
            for (k, v) in parameters.sorted(by: { $0.key < $1.key }) { object[k] = v }
            var out: [UInt8] = []
            try! MessageEncoder.append(Call(method: method, parameters: object, oneway: oneway, more: more), to: &out)
            send(raw: out)
        }

        /// Every reply the session has written so far.
        func replies() -> [Reply] {
            let bytes = session.takeOutput()
            decoder.append(bytes)
            var result: [Reply] = []
            while let message = try! decoder.next() {
                result.append(try! Reply(parsing: message))
            }
            return result
        }

        /// Calls and returns the one reply.
        @discardableResult
        func call(_ method: String, _ parameters: [String: Value] = [:], file: StaticString = #filePath, line: UInt = #line) -> Reply {
            send(method, parameters)
            let r = replies()
            XCTAssertEqual(r.count, 1, "one reply to \(method)", file: file, line: line)
            return r.first ?? Reply(error: "none")
        }

        /// Calls and expects success; returns the parameters.
        @discardableResult
        func ok(_ method: String, _ parameters: [String: Value] = [:], file: StaticString = #filePath, line: UInt = #line) -> ValueObject {
            let r = call(method, parameters, file: file, line: line)
            XCTAssertNil(r.error, "\(method) failed: \(r.parameters)", file: file, line: line)
            return r.parameters
        }

        /// Calls and expects the error `name`; returns its parameters.
        @discardableResult
        func fails(_ method: String, _ parameters: [String: Value] = [:], with name: String,
                   file: StaticString = #filePath, line: UInt = #line) -> ValueObject {
            let r = call(method, parameters, file: file, line: line)
            XCTAssertEqual(r.error, name, "\(method): \(r.parameters)", file: file, line: line)
            return r.parameters
        }
    }
}

func json(_ text: String) -> Value { try! Value(json: text) }

extension ValueObject {
    func int(_ key: String) -> Int64? {
        if case .int(let i)? = self[key] { return i }
        return nil
    }

    func bool(_ key: String) -> Bool? {
        if case .bool(let b)? = self[key] { return b }
        return nil
    }

    func string(_ key: String) -> String? {
        if case .string(let s)? = self[key] { return s }
        return nil
    }
}

// Literals for the tests' parameters ("name": "x", "value": 1).
extension Value: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
}

func object(_ members: [String: Value]) -> ValueObject {
    var o = ValueObject()
    for (k, v) in members.sorted(by: { $0.key < $1.key }) { o[k] = v }
    return o
}
