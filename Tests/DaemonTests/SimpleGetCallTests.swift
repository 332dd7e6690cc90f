import Glibc
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// The Get fast path (`SimpleGetCall`, `Store.appendGet`) against the slow
/// path it stands in for, as SimpleSetCallTests does for Set: each input's
/// outcome is asserted first, then both daemons' reply bytes compared.
final class SimpleGetCallTests: XCTestCase {
    typealias Pair = SimpleSetCallTests.Pair

    func put(_ store: Store, _ name: String, _ value: Value) throws {
        _ = try store.write(Op(name: name, path: .root, write: .set(value)), tag: nil, origin: nil)
    }

    static func get(_ name: String) -> String {
        #"{"method":"io.tether.Get","parameters":{"name":"\#(name)"}}"#
    }

    static let simple: [String] = [
        get("a"),
        #"{"parameters":{"name":"a"},"method":"io.tether.Get"}"#,
        " {\n\t\"method\" : \"io.tether.Get\" ,\r\n \"parameters\" : { \"name\" : \"a\" } } \n",
        "{\"method\":\"io.tether.Get\",\"parameters\":{\"name\": \"a\" } }\t",
        get("missing"),
        get(""),
        get(String(repeating: "n", count: 300)),
    ]

    static let notSimple: [String] = [
        #"{"method":"io.tether.Get","parameters":{"name":"a","path":""}}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a","path":"/x"}}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a"},"oneway":true}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a"},"more":true}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a"},"upgrade":true}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a","name":"b"}}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a"},"parameters":{"name":"b"}}"#,
        #"{"method":"io.tether.Get","method":"io.tether.Get","parameters":{"name":"a"}}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a","extra":1}}"#,
        #"{"method":"io.tether.Get","parameters":{}}"#,
        #"{"method":"io.tether.Get","parameters":{"name":1}}"#,
        #"{"method":"io.tether.Get","parameters":{"name":null}}"#,
        #"{"method":"io.tether.Get","parameters":null}"#,
        #"{"method":"io.tether.Get"}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"\u0061"}}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"caf\#u{e9}"}}"#,
        #"{"method":"io.tether.G\u0065t","parameters":{"name":"a"}}"#,
        #"{"method":"io.tether.Gett","parameters":{"name":"a"}}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a"}}x"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a"}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a"},}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a",}}"#,
        #"{"method":"io.tether.Get","parameters":{"name":"a"}} {}"#,
        #"{"method":"io.tether.Set","parameters":{"name":"a"}}"#,
        "",
        "{}",
    ]

    func testScannerTakesTheCommonShapeAndNothingElse() {
        for text in SimpleGetCallTests.simple {
            let parsed = Array(text.utf8).withUnsafeBytes { SimpleGetCall.parse($0) }
            XCTAssertNotNil(parsed, "the scanner should take \(text.prefix(120))")
            XCTAssertEqual(parsed?.name, (try? Call(parsing: Array(text.utf8)))?.parameters["name"].flatMap { if case .string(let s) = $0 { s } else { nil } })
        }
        for text in SimpleGetCallTests.notSimple {
            XCTAssertNil(Array(text.utf8).withUnsafeBytes { SimpleGetCall.parse($0) }, "the scanner should leave \(text) to the slow path")
        }
        XCTAssertNil([UInt8](#"{"method":"io.tether.Get","parameters":{"name":"a"#.utf8 + [0xFF] + #""}}"#.utf8).withUnsafeBytes { SimpleGetCall.parse($0) })
    }

    /// Values of every kind, small and past the kept-encoding threshold,
    /// read on both paths: the outcome first, then the bytes.
    func testRepliesMatchTheSlowPathOnEveryValue() throws {
        let pair = try Pair()
        let values: [(String, String)] = [
            ("int", "42"), ("neg", "-9223372036854775808"), ("dbl", "1.5"), ("negzero", "-0.0"), ("exp", "1e300"),
            ("t", "true"), ("f", "false"), ("null", "null"),
            ("s", #""with \"quotes\", \\, \u00e9, \ud83d\ude00 and \u0001""#), ("empty", #""""#),
            ("arr", #"[1,"two",[3.5,null],{"k":false}]"#), ("obj", #"{"z":1,"a":{"b":[]},"":"empty key"}"#),
            ("big", "\"" + String(repeating: "x", count: 10_000) + "\""),
            ("bigobj", "{" + (0..<600).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}"),
        ]
        for (name, json) in values {
            XCTAssertTrue(pair.send(SimpleSetCallTests.set(name, json)).hasPrefix(#"{"parameters":{"revision":"#), name)
        }
        pair.send(#"{"method":"io.tether.Declare","parameters":{"name":"typed","descriptor":{"type":"double"},"value":2.0}}"#)
        for (name, json) in values {
            // Twice: a big value's second Get copies the kept encoding.
            for _ in 0..<2 {
                let reply = pair.send(SimpleGetCallTests.get(name))
                let parsed = try Reply(parsing: Array(reply.utf8.dropLast()))
                XCTAssertNil(parsed.error, "\(name): \(reply.prefix(200))")
                XCTAssertEqual(parsed.parameters["value"] ?? .null, try Value(json: json), name)
                XCTAssertEqual(parsed.parameters.int("revision"), Int64(pair.fast.store.revision), name)
            }
        }
        XCTAssertTrue(pair.send(SimpleGetCallTests.get("typed")).contains(#""type":"double""#))
        XCTAssertTrue(pair.send(SimpleGetCallTests.get("missing")).contains(#""error":"io.tether.NotFound""#))
        XCTAssertTrue(pair.send(SimpleGetCallTests.get("")).contains(#""error":"org.varlink.service.InvalidParameter""#))
        // The other shapes, and what the scanner leaves alone, answered alike.
        for text in SimpleGetCallTests.simple + SimpleGetCallTests.notSimple { pair.send(text) }
        // A write in between: the reply says the new revision and value.
        pair.send(SimpleSetCallTests.set("int", "43"))
        XCTAssertTrue(pair.send(SimpleGetCallTests.get("int")).hasPrefix(#"{"parameters":{"value":43,"type":"int","revision":"#))
    }

    func testAccessIsCheckedAsOnTheSlowPath() throws {
        let other: UInt32 = getuid() == 4242 ? 4243 : 4242
        let policy = try AccessPolicy(owner: getuid(), json: #"{"grants":[{"uid":\#(other),"access":"read","prefixes":["r."]}]}"#)
        let owner = try Pair(policy: policy)
        owner.send(SimpleSetCallTests.set("r.x", "1"))
        owner.send(SimpleSetCallTests.set("s.x", "2"))
        let granted = try Pair(policy: policy, uid: other)
        // The reader shares no daemon with the owner: it reads its own pair's states.
        for store in [granted.fast.store, granted.slow.store] {
            try put(store, "r.x", .int(1))
            try put(store, "s.x", .int(2))
        }
        XCTAssertTrue(granted.send(SimpleGetCallTests.get("r.x")).hasPrefix(#"{"parameters":{"value":1,"#))
        XCTAssertTrue(granted.send(SimpleGetCallTests.get("s.x")).contains(#""error":"io.tether.AccessDenied""#))
        let stranger = try Pair(policy: policy, uid: other + 1)
        let refused = stranger.send(SimpleGetCallTests.get("r.x"))
        XCTAssertFalse(refused.contains(#""value""#), refused)
        XCTAssertNotNil(stranger.lastCloseReason, "a uid without a grant is refused at accept")
    }

    func testAfterAWatchAGetClosesTheConnectionAsOnTheSlowPath() throws {
        let pair = try Pair()
        pair.send(SimpleSetCallTests.set("a", "1"))
        pair.send(#"{"method":"io.tether.Watch","parameters":{"names":["a"]},"more":true}"#)
        XCTAssertNil(pair.lastCloseReason)
        XCTAssertEqual(pair.send(SimpleGetCallTests.get("a")), "")
        XCTAssertTrue(pair.lastCloseReason?.hasPrefix("a call after Watch") == true, "\(pair.lastCloseReason ?? "not closed")")
    }

    /// The reply bytes are `MessageEncoder`'s for the same GetReply.
    func testAppendGetWritesWhatTheEncoderWrites() throws {
        let d = try InProcessDaemon()
        var object = ValueObject()
        object["k"] = .string("v")
        // Every scalar has a path of its own in `appendFragment`: each kind,
        // its extremes, and strings that need escapes.
        let values: [Value] = [.int(0), .int(-1), .int(.min), .int(.max), .double(0.1), .double(-0.0), .double(1e-7),
                               .double(1.7976931348623157e308), .bool(true), .bool(false), .string("é\u{1}\""), .string(""),
                               .string("\\/\u{7F}\u{10FFFF}"), .bytes([0, 0xFF]), .array([.int(1), .null]), .object(object)]
        for (i, value) in values.enumerated() {
            try put(d.store, "v\(i)", value)
            var fast: [UInt8] = []
            XCTAssertTrue(try d.store.appendGet("v\(i)", to: &fast), "\(value)")
            var slow: [UInt8] = []
            try MessageEncoder.append(Reply(parameters: try d.store.get("v\(i)", at: .root).parameters), to: &slow)
            XCTAssertEqual(String(decoding: fast, as: UTF8.self), String(decoding: slow, as: UTF8.self))
        }
        try put(d.store, "n", .null)
        var none: [UInt8] = [7]
        XCTAssertFalse(try d.store.appendGet("n", to: &none), "null goes the ordinary way")
        XCTAssertEqual(none, [7], "and appends nothing")
        XCTAssertThrowsError(try d.store.appendGet("absent", to: &none)) { error in
            XCTAssertEqual((error as? VarlinkError)?.name, "io.tether.NotFound")
        }
    }
}
