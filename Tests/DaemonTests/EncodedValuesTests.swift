import Foundation
import Glibc
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// Whole-state Gets answered from a kept encoding (EncodedValues.swift,
/// issue 30 §4): the reply bytes are the fresh encoding's, byte for byte,
/// and no change of a state's value is ever answered from an old one.
final class EncodedValuesTests: XCTestCase {
    /// Values of every shape: nested, bytes (nested too), unicode, escapes,
    /// control bytes, doubles, empty containers; small and big.
    static var values: [Value] {
        let big = String(repeating: "x", count: 5000)
        var members = ValueObject()
        for i in 0..<2000 { members["k\(i)"] = .string("v\(i)") }
        return [
            .bool(true), .int(-7), .double(0.5), .double(1e300), .string(""), .string("é\"\\\n\t\u{1}\u{1F600}"),
            .string(big), .string(big + "\u{0}\u{1F}\"\\ünï"), .bytes([]), .bytes(Array(repeating: 0xFF, count: 6000)),
            .array([]), .object(ValueObject()),
            json(#"{"a":[1,2.5,{"b":null,"c":"\u00e9\u0000"}],"d":{"e\"f":true,"g\\h":[[],{}]}}"#),
            .object(members),
            .array((0..<3000).map { .int(Int64($0) * 1_000_003) }),
            .array([.bytes([1, 2, 3]), .object(object(["x/y~z": .bytes(Array(repeating: 7, count: 5000)), "s": .string(big)]))]),
            .object(object(["deep": .array([.array([.object(object(["b": .bytes([0, 1])]))])]), "pad": .string(big)])),
        ]
    }

    /// A Get of `name` with the kept encoding and without it: the bytes
    /// are the same; returns them.
    @discardableResult
    private func checkedGet(_ d: InProcessDaemon, _ c: InProcessDaemon.Client, _ name: String,
                            file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        let call = try! callBytes("Get", ["name": .string(name)])
        d.store.keepsEncodedValues = true
        call.withUnsafeBytes { c.session.receive($0) }
        let kept = c.session.takeOutput()
        d.store.keepsEncodedValues = false
        call.withUnsafeBytes { c.session.receive($0) }
        let fresh = c.session.takeOutput()
        d.store.keepsEncodedValues = true
        XCTAssertTrue(kept == fresh, "\(String(decoding: kept.prefix(300), as: UTF8.self)) against \(String(decoding: fresh.prefix(300), as: UTF8.self))", file: file, line: line)
        return kept
    }

    private func callBytes(_ method: String, _ parameters: [String: Value]) throws -> [UInt8] {
        var out: [UInt8] = []
        try MessageEncoder.append(Call(method: "io.tether." + method, parameters: object(parameters)), to: &out)
        return out
    }

    private func value(in reply: [UInt8]) -> Value? {
        guard reply.last == 0, let r = try? Reply(parsing: Array(reply.dropLast())) else { return nil }
        guard r.error == nil else { return nil }
        return try? GetReply(from: .object(r.parameters)).value
    }

    func testTheKeptBytesAreTheFreshEncoding() throws {
        for minimum in [0, Store.defaultEncodedMinimum] {
            let d = try InProcessDaemon()
            d.store.encodedMinimum = minimum
            let c = d.connect()
            for (i, v) in Self.values.enumerated() {
                // Through the store: a bytes value as it is (a call would
                // need its bytes_at).
                XCTAssertNoThrow(try d.store.write(Op(name: "s\(i)", path: .root, write: .set(v)), tag: nil, origin: nil))
                let first = checkedGet(d, c, "s\(i)")
                let second = checkedGet(d, c, "s\(i)")  // from the kept bytes
                XCTAssertTrue(first == second, "value \(i)")
                XCTAssertTrue(value(in: first) == v, "value \(i)")
                let r = try XCTUnwrap(d.store.record("s\(i)"))
                let size = Store.fragment(of: v)?.count ?? 0
                XCTAssertEqual(r.encoded != nil, size >= max(minimum, 1) && r.sizeBound >= minimum, "value \(i)")
            }
            XCTAssertGreaterThan(d.store.encodedBytes, 0)
            XCTAssertEqual(d.store.encodedBytes, d.store.encodedRecords.values.reduce(0) { $0 + $1.encoded!.capacity })
            // Not found, and a Get at a path, as before.
            checkedGet(d, c, "missing")
            XCTAssertEqual(c.call("io.tether.Get", ["name": "missing"]).error, "io.tether.NotFound")
        }
    }

    func testNoChangeIsAnsweredFromAnOldEncoding() throws {
        let d = try InProcessDaemon()
        d.store.encodedMinimum = 0
        let c = d.connect()
        func expect(_ name: String, _ v: Value?, file: StaticString = #filePath, line: UInt = #line) {
            let bytes = checkedGet(d, c, name, file: file, line: line)
            XCTAssertEqual(value(in: bytes), v, file: file, line: line)
        }
        let a = json(#"{"list":[1,2,3],"text":"é"}"#)
        XCTAssertNil(c.call("io.tether.Set", ["name": "a", "value": a]).error)
        expect("a", a)
        // Set, Get.
        XCTAssertNil(c.call("io.tether.Set", ["name": "a", "value": json(#"{"list":[]}"#)]).error)
        expect("a", json(#"{"list":[]}"#))
        // A Set of an equal value: no commit, the same bytes.
        XCTAssertNil(c.call("io.tether.Set", ["name": "a", "value": json(#"{"list":[]}"#)]).error)
        expect("a", json(#"{"list":[]}"#))
        // A Set and a Remove at a path.
        XCTAssertNil(c.call("io.tether.Set", ["name": "a", "path": "/list/-", "value": 9]).error)
        expect("a", json(#"{"list":[9]}"#))
        XCTAssertNil(c.call("io.tether.Remove", ["name": "a", "path": "/list/0"]).error)
        expect("a", json(#"{"list":[]}"#))
        // With a tag (setWhole inside a runtime transaction).
        XCTAssertNil(c.call("io.tether.Set", ["name": "a", "value": "tagged", "tag": "t"]).error)
        expect("a", "tagged")
        // A Transaction over two states, one created.
        let ops: Value = .array([
            json(#"{"name":"a","op":"set","value":[1]}"#),
            json(#"{"name":"b","op":"set","value":{"x":1}}"#),
            json(#"{"name":"a","op":"set","path":"/-","value":2}"#),
        ])
        XCTAssertNil(c.call("io.tether.Transaction", ["ops": ops]).error)
        expect("a", json("[1,2]"))
        expect("b", json(#"{"x":1}"#))
        // A Transaction refused part way: nothing of it, the kept bytes stay good.
        let refused: Value = .array([
            json(#"{"name":"a","op":"set","value":"changed"}"#),
            json(#"{"name":"nope","op":"set","path":"/x","value":1}"#),
        ])
        XCTAssertNotNil(c.call("io.tether.Transaction", ["ops": refused]).error)
        expect("a", json("[1,2]"))
        // Remove, and a new state of the same name.
        XCTAssertNil(c.call("io.tether.Remove", ["name": "b"]).error)
        expect("b", nil)
        XCTAssertEqual(c.call("io.tether.Get", ["name": "b"]).error, "io.tether.NotFound")
        XCTAssertNil(c.call("io.tether.Set", ["name": "b", "value": "again"]).error)
        expect("b", "again")
        // Removed and created again in one Transaction.
        let again: Value = .array([json(#"{"name":"b","op":"remove"}"#), json(#"{"name":"b","op":"set","value":[true]}"#)])
        XCTAssertNil(c.call("io.tether.Transaction", ["ops": again]).error)
        expect("b", json("[true]"))
        // Declare: locked to double, the int becomes a double.
        XCTAssertNil(c.call("io.tether.Set", ["name": "n", "value": 3]).error)
        expect("n", .int(3))
        XCTAssertNil(c.call("io.tether.Declare", ["name": "n", "descriptor": json(#"{"type":"double"}"#), "value": 0]).error)
        expect("n", .double(3))
        // Declare of a new state.
        XCTAssertNil(c.call("io.tether.Declare", ["name": "m", "descriptor": json("{}"), "value": json("[1]")]).error)
        expect("m", json("[1]"))
        XCTAssertEqual(d.store.encodedBytes, d.store.encodedRecords.values.reduce(0) { $0 + $1.encoded!.capacity })
        XCTAssertTrue(d.store.encodedRecords.values.allSatisfy { d.store.record($0.name) === $0 },
                      "no removed record keeps bytes")
    }

    func testTheKeptBytesAreBounded() throws {
        let d = try InProcessDaemon()
        d.store.encodedMinimum = 100
        d.store.encodedLimit = 5000
        let c = d.connect()
        for i in 0..<10 {
            XCTAssertNil(c.call("io.tether.Set", ["name": .string("s\(i)"), "value": .string(String(repeating: "y", count: 1000 + i))]).error)
            checkedGet(d, c, "s\(i)")
            XCTAssertLessThanOrEqual(d.store.encodedBytes, 5000)
            XCTAssertNotNil(d.store.record("s\(i)")?.encoded, "the newest is kept")
        }
        // Older ones were dropped to make room (each weighs over 1,000).
        XCTAssertLessThan(d.store.encodedRecords.count, 5)
        XCTAssertEqual(d.store.encodedBytes, d.store.encodedRecords.values.reduce(0) { $0 + $1.encoded!.capacity })
        // Too big to keep at all: answered, not kept.
        XCTAssertNil(c.call("io.tether.Set", ["name": "huge", "value": .string(String(repeating: "z", count: 6000))]).error)
        checkedGet(d, c, "huge")
        XCTAssertNil(d.store.record("huge")?.encoded)
        XCTAssertLessThanOrEqual(d.store.encodedBytes, 5000)
    }

    /// A group the store refuses is undone in memory: a Get after it does
    /// not show the refused value, even one kept by a Get in the refused
    /// turn; and a restart reads what the store holds.
    func testARefusedGroupAndARestartAreNotAnsweredFromOldBytes() throws {
        let directory = try temporaryDirectory("tether-encoded")
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }

        var d: StorageFullTests.Daemon? = try StorageFullTests.Daemon(directory: directory, mode: .inline)
        let writer = d!.connect(), reader = d!.connect()
        func payload(_ i: Int) -> Value { .string(String(i) + String(repeating: "p", count: 6000)) }
        writer.send("io.tether.Set", ["name": "big", "value": payload(0)])
        d!.turn()
        XCTAssertNil(writer.written().first?.error)
        reader.send("io.tether.Get", ["name": "big"])
        d!.turn()
        XCTAssertEqual(reader.written().first.flatMap { try? GetReply(from: .object($0.parameters)).value }, payload(0))
        XCTAssertNotNil(d!.store.record("big")?.encoded)

        try d!.sqlite.setMaxPageCount(try d!.sqlite.pageCount() + 20)
        var acknowledged = payload(0)
        var refused = false
        for i in 1..<200 {
            // The write, then a Get of it in the same turn (the written value kept).
            writer.send("io.tether.Set", ["name": "big", "value": payload(i)])
            writer.send("io.tether.Get", ["name": "big"])
            d!.turn()
            let r = writer.written()
            XCTAssertEqual(r.count, 2)
            if r.first?.error == "io.tether.StorageFull" {
                refused = true
                break
            }
            XCTAssertNil(r.first?.error)
            acknowledged = payload(i)
        }
        XCTAssertTrue(refused, "the disk never filled")
        reader.send("io.tether.Get", ["name": "big"])
        d!.turn()
        let after = reader.written()
        XCTAssertEqual(after.first.flatMap { try? GetReply(from: .object($0.parameters)).value }, acknowledged)
        // The same bytes as a fresh encoding.
        let call = try callBytes("Get", ["name": "big"])
        call.withUnsafeBytes { reader.session.receive($0) }
        let kept = reader.session.takeOutput()
        d!.store.keepsEncodedValues = false
        call.withUnsafeBytes { reader.session.receive($0) }
        let fresh = reader.session.takeOutput()
        d!.store.keepsEncodedValues = true
        XCTAssertEqual(kept, fresh)

        try d!.sqlite.setMaxPageCount(0)
        d!.close()
        d = nil
        d = try StorageFullTests.Daemon(directory: directory, mode: .inline)
        let again = d!.connect()
        again.send("io.tether.Get", ["name": "big"])
        d!.turn()
        XCTAssertEqual(again.written().first.flatMap { try? GetReply(from: .object($0.parameters)).value }, acknowledged)
        d!.close()
    }
}

/// Watch snapshots of whole states use the kept fragment: the same bytes.
final class EncodedSnapshotTests: XCTestCase {
    func testSnapshotRepliesAreTheFreshEncoding() throws {
        for minimum in [0, Store.defaultEncodedMinimum] {
            let d = try InProcessDaemon()
            d.store.encodedMinimum = minimum
            var names: [Value] = []
            for (i, v) in EncodedValuesTests.values.enumerated() {
                XCTAssertNoThrow(try d.store.write(Op(name: "s\(i)", path: .root, write: .set(v)), tag: nil, origin: nil))
                names.append(.string("s\(i)"))
            }
            names.append("missing")
            func watch(keeping: Bool) -> [UInt8] {
                d.store.keepsEncodedValues = keeping
                defer { d.store.keepsEncodedValues = true }
                let c = d.connect()
                c.send("io.tether.Watch", ["names": .array(names)], more: true)
                return c.session.takeOutput()
            }
            for round in 0..<2 {
                let fresh = watch(keeping: false)
                let kept = watch(keeping: true)
                let again = watch(keeping: true)  // from the kept bytes
                XCTAssertGreaterThan(fresh.count, 50_000)
                XCTAssertTrue(kept == fresh, "round \(round)")
                XCTAssertTrue(again == fresh, "round \(round)")
                XCTAssertGreaterThan(d.store.encodedBytes, 0)
                // Every state changed: the next snapshots show the new values.
                for (i, v) in EncodedValuesTests.values.enumerated() {
                    XCTAssertNoThrow(try d.store.write(Op(name: "s\(i)", path: .root, write: .set(.array([v, .int(Int64(round))]))),
                                                       tag: nil, origin: nil))
                }
            }
        }
    }

    func testTheHandWrittenSnapshotReplyIsTheEncoders() throws {
        for v in EncodedValuesTests.values {
            guard let fragment = Store.fragment(of: v) else { continue }
            for resync in [false, true] {
                for (name, epoch) in [("a", "e1"), ("é \"q\" \\", "")] {
                    var hand: [UInt8] = []
                    try Store.appendSnapshotReply(fragment, name: name, revision: 12, epoch: epoch, modified: 7,
                                                  resync: resync, to: &hand)
                    var encoder: [UInt8] = []
                    let reply = WatchReply(event: .snapshot(Entry(name: name, value: v, modified: 7), resync: resync),
                                           revision: 12, epoch: epoch)
                    try MessageEncoder.append(Reply(parameters: reply.parameters, continues: true), to: &encoder)
                    XCTAssertTrue(hand == encoder, String(decoding: hand.prefix(200), as: UTF8.self))
                }
            }
            var hand: [UInt8] = []
            Store.appendGetReply(fragment, revision: UInt64.max, modified: 3, to: &hand)
            var encoder: [UInt8] = []
            try MessageEncoder.append(Reply(parameters: GetReply(value: v, revision: UInt64.max, modified: 3).parameters), to: &encoder)
            XCTAssertTrue(hand == encoder)
        }
    }
}
