import Glibc
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// The Set fast path (`SimpleSetCall`, `Store.setWhole`, `WriteReplyBytes`)
/// against the slow path it stands in for: two in-process daemons fed the
/// same bytes, one as built and one with both fast paths off, must answer
/// every message with the same bytes and end at the same revision. The
/// inputs include every kind of bad input; which of them the scanner takes
/// is checked too, so a scanner that took nothing would fail here.
final class SimpleSetCallTests: XCTestCase {
    /// The same messages to a daemon as built and to one without fast paths.
    final class Pair {
        let fast: InProcessDaemon
        let slow: InProcessDaemon
        var fastClient: InProcessDaemon.Client
        var slowClient: InProcessDaemon.Client
        let uid: UInt32
        /// Why the last message's connection closed (both paths agree), if it did.
        var lastCloseReason: String?

        init(limits: Limits = .defaults, policy: AccessPolicy? = nil, uid: UInt32 = getuid()) throws {
            fast = try InProcessDaemon(limits: limits, policy: policy)
            slow = try InProcessDaemon(limits: limits, policy: policy)
            slow.service.simpleCalls = false
            slow.store.setsWholeStates = false
            self.uid = uid
            fastClient = fast.connect(uid: uid)
            slowClient = slow.connect(uid: uid)
        }

        /// Sends one message (a NUL is added) to both; fails the test when
        /// the replies or revisions differ. Returns the fast side's reply bytes.
        @discardableResult
        func send(_ message: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> String {
            let framed = message + [0]
            fastClient.send(raw: framed)
            slowClient.send(raw: framed)
            let a = fastClient.session.takeOutput(), b = slowClient.session.takeOutput()
            let shown = String(decoding: message.prefix(200), as: UTF8.self)
            XCTAssertEqual(String(decoding: a, as: UTF8.self), String(decoding: b, as: UTF8.self), "replies to \(shown)", file: file, line: line)
            XCTAssertEqual(a, b, "reply bytes to \(shown)", file: file, line: line)
            XCTAssertEqual(fast.store.revision, slow.store.revision, "revision after \(shown)", file: file, line: line)
            XCTAssertEqual(fastClient.session.closeReason, slowClient.session.closeReason, file: file, line: line)
            lastCloseReason = fastClient.session.closeReason
            if fastClient.session.closeReason != nil {  // go on with a new connection
                fastClient = fast.connect(uid: uid)
                slowClient = slow.connect(uid: uid)
            }
            return String(decoding: a, as: UTF8.self)
        }

        @discardableResult
        func send(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
            send(Array(text.utf8), file: file, line: line)
        }
    }

    static func set(_ name: String, _ valueJSON: String) -> String {
        #"{"method":"io.tether.Set","parameters":{"name":"\#(name)","value":\#(valueJSON)}}"#
    }

    /// Messages the scanner must take (and the replies must still match).
    static let longName: String = String(repeating: "n", count: 300)
    static let bigString: String = "\"" + String(repeating: "x", count: 2000) + "\""

    static let simple: [String] = [
        set("a", "1"),
        set("a", "1"),  // the same value: changed false
        set("a", "2"),
        #"{"parameters":{"value":3,"name":"a"},"method":"io.tether.Set"}"#,
        " {\n\t\"method\" : \"io.tether.Set\" ,\r\n \"parameters\" : { \"name\" : \"a\" , \"value\" : 4 } } \n",
        // The canonical prefix (compared at once), then whitespace.
        "{\"method\":\"io.tether.Set\",\"parameters\":{\"name\": \"a\" ,\n\"value\" : 5 } }\t",
        set("a", "-0"), set("a", "1.5"), set("a", "1e3"), set("a", "1E-3"), set("a", "-12.5e+2"),
        set("a", "9223372036854775807"), set("a", "9223372036854775808"), set("a", "-9223372036854775808"),
        set("a", "true"), set("a", "false"), set("a", "null"), set("a", "\"\""),
        set("a", #""text""#), set("a", #""with \"quotes\" and \\ and \u00e9 \ud83d\ude00""#),
        set("a", "\"caf\u{e9} \u{1F600}\""),
        set("a", "[]"), set("a", "{}"), set("a", "[1,[2,[3]],{\"k\":\"]\"}]"),
        set("a", #"{"x":{"y":[true,null,"}{"]},"z":"\\"}"#),
        set("a", " [ 1 , 2 ] "),
        set("new", "1"),  // a new state: the slow store path
        set("b", "\"s\""),
        set("", "1"),  // empty name: InvalidParameter
        set(longName, "1"),  // too long
        set("dbl", "3"),  // int into a double-locked state
        set("dbl", "\"x\""),  // wrong type
        set("rng", "5"),  // out of range
        set("rng", "0.5"),
        set("ro", "\"y\""),  // read-only
        set("big", bigString),  // over max_value
        set("a", "1e-400"),
    ]

    static let notSimpleText: [String] = [
        set("a", "1e400"),  // the parser refuses a number past Double
        #"{"method":"io.tether.Get","parameters":{"name":"a"}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1},"oneway":true}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1},"more":true}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1},"upgrade":true}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1},"oneway":false}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1,"tag":"t"}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1,"origin":7}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","path":"/x","value":1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":"AAE=","bytes_at":[""]}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1,"extra":1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a"}}"#,
        #"{"method":"io.tether.Set","parameters":{"value":1}}"#,
        #"{"method":"io.tether.Set","parameters":{}}"#,
        #"{"method":"io.tether.Set","parameters":null}"#,
        #"{"method":"io.tether.Set","parameters":[1]}"#,
        #"{"method":"io.tether.Set"}"#,
        #"{"parameters":{"name":"a","value":1}}"#,
        #"{"method":"io.tether.Set","method":"io.tether.Get","parameters":{"name":"a","value":1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1},"parameters":{"name":"b","value":2}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","name":"b","value":1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1,"value":2}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1,"name":"b"}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1}} {}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":[1,}}"#,
        #"{"method":"io.tether.Sett","parameters":{"name":"a","value":1}}"#,
        #"{"method":"io.tether.set","parameters":{"name":"a","value":1}}"#,
        #"{"method":"io.tether.Nope","parameters":{"name":"a","value":1}}"#,
        #"{"method":"io.tether.S\u0065t","parameters":{"name":"a","value":1}}"#,
        #"{"m\u0065thod":"io.tether.Set","parameters":{"name":"a","value":1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"\u0061","value":1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"\u0001","value":1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"caf\#u{e9}","value":1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":1,"value":1}}"#,
        #"{"method":1,"parameters":{"name":"a","value":1}}"#,
        // Bad JSON.
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1}}x"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1}},"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":01}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1.}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":+1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":tru}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":nul}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":[1,}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":[1,]}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":{"k":1,}}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":{"k"}}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":[1 2]}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1 2}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":"open}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":"bad \x"}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":"\ud800"}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":]}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value"}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a""value":1}}"#,
        #"{"method":"io.tether.Set""parameters":{"name":"a","value":1}}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1},}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a","value":1,}}"#,
        "{\"method\":\"io.tether.Set\",\"parameters\":{\"name\":\"a\",\"value\":\"tab\tin string\"}}",  // a raw tab in a string
        #"["method","io.tether.Set"]"#,
        #""io.tether.Set""#,
        "",
        " ",
        "{}",
    ]

    static func bytes(_ before: String, _ middle: [UInt8], _ after: String) -> [UInt8] {
        Array(before.utf8) + middle + Array(after.utf8)
    }

    /// Invalid UTF-8, in the value, the name, the method and outside strings.
    static let invalidUTF8: [[UInt8]] = [
        bytes(#"{"method":"io.tether.Set","parameters":{"name":"a","value":""#, [0xFF], #""}}"#),
        bytes(#"{"method":"io.tether.Set","parameters":{"name":"a","value":""#, [0xC3], #""}}"#),
        bytes(#"{"method":"io.tether.Set","parameters":{"name":"a"#, [0xC3, 0x28], #"","value":1}}"#),
        bytes(#"{"method":"io.tether.Se"#, [0xFF], #"","parameters":{"name":"a","value":1}}"#),
        bytes(#"{"method":"io.tether.Set","parameters":{"name":"a","value":1}}"#, [0xFF], ""),
        bytes(#"{"method":"io.tether.Set","parameters":{"name":"a","value":[1"#, [0xE2, 0x82], #"]}}"#),
    ]

    /// Messages the scanner must leave to the slow path.
    static let notSimple: [[UInt8]] = notSimpleText.map { Array($0.utf8) } + invalidUTF8

    func testScannerTakesTheCommonShapeAndNothingElse() {
        let maxDepth = Limits.defaults.maxDepth
        for text in SimpleSetCallTests.simple {
            let parsed = Array(text.utf8).withUnsafeBytes { SimpleSetCall.parse($0, maxDepth: maxDepth) }
            XCTAssertNotNil(parsed, "the scanner should take \(text.prefix(120))")
        }
        for message in SimpleSetCallTests.notSimple {
            let parsed = message.withUnsafeBytes { SimpleSetCall.parse($0, maxDepth: maxDepth) }
            XCTAssertNil(parsed, "the scanner should leave \(String(decoding: message, as: UTF8.self)) to the slow path")
        }
    }

    func testTheScannerReadsWhatTheParserReads() throws {
        for text in SimpleSetCallTests.simple {
            let bytes = Array(text.utf8)
            guard let parsed = bytes.withUnsafeBytes({ SimpleSetCall.parse($0, maxDepth: Limits.defaults.maxDepth) }) else { continue }
            let call = try Call(parsing: bytes)
            XCTAssertEqual(call.method, "io.tether.Set")
            XCTAssertEqual(call.parameters.count, 2)
            XCTAssertEqual(Value.string(parsed.name), call.parameters["name"])
            let value = call.parameters["value"] ?? .null
            XCTAssertEqual(parsed.value, value, text)
            if case .double(let a) = parsed.value, case .double(let b) = value {
                XCTAssertEqual(a.bitPattern, b.bitPattern, "the same double, sign of zero included: \(text)")
            }
        }
    }

    /// `plainInt` says what the JSON parser says of every number it takes,
    /// and nothing of what it leaves to the parser.
    func testPlainIntsAreWhatTheParserReads() throws {
        var texts = ["0", "-0", "1", "-1", "9", "10", "-10", "00", "01", "-01", "-", "", "+1", "1.0", "1e2", "1 ", " 1",
                     "0x1", "1-", "--1", "123456789012345678", "-123456789012345678", "999999999999999999",
                     "1234567890123456789", "-1234567890123456789", "9223372036854775807", "-9223372036854775808",
                     "9223372036854775808", "12a", "\u{0}", "١"]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            let digits = Int.random(in: 1...20, using: &rng)
            var t = Bool.random(using: &rng) ? "-" : ""
            for _ in 0..<digits { t += String(Int.random(in: 0...9, using: &rng)) }
            texts.append(t)
        }
        for text in texts {
            let bytes = Array(text.utf8)
            let fast = bytes.withUnsafeBufferPointer { SimpleSetCall.plainInt($0) }
            let parsed = try? Value(json: text)
            if let fast {
                XCTAssertEqual(parsed, .int(fast), text)
            } else if case .int? = parsed, !text.contains(" ") {
                // Left to the parser: only past 18 digits (or with the
                // whitespace the parser skips, which valueExtent never includes).
                XCTAssertGreaterThan(bytes.filter { $0 != UInt8(ascii: "-") }.count, 18, text)
            }
        }
    }

    /// Declares the states the inputs write to (typed, ranged, read-only).
    func prepare(_ pair: Pair) {
        pair.send(#"{"method":"io.tether.Set","parameters":{"name":"a","value":0}}"#)
        pair.send(#"{"method":"io.tether.Set","parameters":{"name":"big","value":0}}"#)
        pair.send(#"{"method":"io.tether.Declare","parameters":{"name":"dbl","descriptor":{"type":"double"},"value":1.0}}"#)
        pair.send(#"{"method":"io.tether.Declare","parameters":{"name":"rng","descriptor":{"range":{"minimum":0.0,"maximum":1.0}},"value":0.0}}"#)
        pair.send(#"{"method":"io.tether.Declare","parameters":{"name":"ro","descriptor":{"type":"string","read_only":true},"value":"x"}}"#)
    }

    func testRepliesMatchTheSlowPathOnEveryInput() throws {
        let pair = try Pair(limits: Limits(maxValue: 1024))
        prepare(pair)
        for text in SimpleSetCallTests.simple { pair.send(text) }
        for message in SimpleSetCallTests.notSimple { pair.send(message) }
        // And the simple ones again, now that every state exists.
        for text in SimpleSetCallTests.simple { pair.send(text) }
        let replies = pair.send(SimpleSetCallTests.set("a", "77"))
        XCTAssertTrue(replies.hasPrefix(#"{"parameters":{"revision":"#), replies)
        // The states read back the same.
        for name in ["a", "b", "new", "dbl", "rng", "ro", "big"] {
            pair.send(#"{"method":"io.tether.Get","parameters":{"name":"\#(name)"}}"#)
        }
    }

    func testDepthLimitsMatch() throws {
        for maxDepth in [0, 1, 2, 3, 4, 6] {
            let pair = try Pair(limits: Limits(maxDepth: maxDepth))
            for depth in 0...6 {
                // The value sits two levels down in the call ({"parameters":{"value":…}}):
                // it may nest maxDepth - 2 levels; anything deeper is BadJSON.
                let allowed = depth + 2 <= maxDepth
                let value = String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
                let object = String(repeating: #"{"k":"#, count: depth) + "1" + String(repeating: "}", count: depth)
                for v in [value, object] {
                    let reply = pair.send(SimpleSetCallTests.set("d", v))
                    if allowed {
                        XCTAssertTrue(reply.hasPrefix(#"{"parameters":{"revision":"#), "depth \(depth) under max_depth \(maxDepth): \(reply)")
                    } else {
                        XCTAssertTrue(reply.contains(#""error":"io.tether.BadJSON""#), "depth \(depth) over max_depth \(maxDepth): \(reply)")
                    }
                }
            }
        }
    }

    func testAccessIsCheckedAsOnTheSlowPath() throws {
        let other: UInt32 = getuid() == 4242 ? 4243 : 4242
        let policy = try AccessPolicy(owner: getuid(), json: #"{"grants":[{"uid":\#(other),"access":"read-write","prefixes":["w."]},{"uid":\#(other),"access":"read","prefixes":["r."]}]}"#)
        let owner = try Pair(policy: policy)
        let ok = #"{"parameters":{"revision":"#, denied = #""error":"io.tether.AccessDenied""#
        XCTAssertTrue(owner.send(SimpleSetCallTests.set("r.x", "1")).hasPrefix(ok))
        XCTAssertTrue(owner.send(SimpleSetCallTests.set("w.x", "1")).hasPrefix(ok))
        let granted = try Pair(policy: policy, uid: other)
        for name in ["r.x", "w.x", "w.y", "z"] {
            let mayWrite = name.hasPrefix("w.")
            for _ in 0..<2 {
                let reply = granted.send(SimpleSetCallTests.set(name, "2"))
                XCTAssertTrue(mayWrite ? reply.hasPrefix(ok) : reply.contains(denied), "\(name): \(reply)")
            }
        }
        // A uid without a grant is refused at accept: its Set is never read.
        let before = (granted.fast.store.revision, granted.slow.store.revision)
        let stranger = try Pair(policy: policy, uid: other + 1)
        let refused = stranger.send(SimpleSetCallTests.set("w.x", "3"))
        XCTAssertTrue(refused.contains(#""error":"org.varlink.service.PermissionDenied""#) || refused.contains(denied), refused)
        XCTAssertNotNil(stranger.lastCloseReason)
        for d in [stranger.fast, stranger.slow] { XCTAssertEqual(d.store.revision, 0, "the stranger wrote nothing") }
        XCTAssertEqual(before.0, granted.fast.store.revision)
    }

    func testAfterAWatchASetClosesTheConnectionAsOnTheSlowPath() throws {
        let pair = try Pair()
        let snapshot = pair.send(#"{"method":"io.tether.Watch","parameters":{"names":["a"]},"more":true}"#)
        XCTAssertTrue(snapshot.contains(#""event":"progress""#), snapshot)
        XCTAssertNil(pair.lastCloseReason)
        let reply = pair.send(SimpleSetCallTests.set("a", "1"))
        XCTAssertEqual(reply, "", "no reply: an error would end the Watch for the client")
        XCTAssertTrue(pair.lastCloseReason?.hasPrefix("a call after Watch") == true, "\(pair.lastCloseReason ?? "not closed")")
        XCTAssertEqual(pair.fast.store.revision, 0, "the Set was not applied")
        XCTAssertNil(pair.fast.store.record("a"))
    }

    func testWriteReplyBytesAreReplyWriteJSONs() throws {
        for revision: UInt64 in [0, 1, 9, 10, 12345, UInt64(Int64.max), UInt64(Int64.max) + 1, .max] {
            for changed in [true, false] {
                let reply = WriteReply(revision: revision, changed: changed)
                var slow: [UInt8] = []
                try MessageEncoder.append(Reply(parameters: reply.parameters), to: &slow)
                var fast: [UInt8] = []
                WriteReplyBytes.append(reply, to: &fast)
                XCTAssertEqual(String(decoding: fast, as: UTF8.self), String(decoding: slow, as: UTF8.self))
            }
        }
    }
}
