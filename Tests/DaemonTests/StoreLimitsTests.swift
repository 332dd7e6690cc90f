import Foundation
import Glibc
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// Issue 30 §3 and issue 36: a tag has a limit (256 bytes, LimitExceeded
/// `tag`), the number of states has one (`--max-states`, LimitExceeded
/// `states`), and the names are kept in a structure whose insert does not
/// move every name after it (`SortedNames`).
final class StoreLimitsTests: XCTestCase {
    typealias Client = DepthLimitTests.RawClient

    func testATagOverTheLimitIsRefusedOnEveryWritePath() throws {
        let daemon = try DaemonFixture(arguments: ["--memory"])
        let c = try Client(daemon)
        let ok = String(repeating: "t", count: Store.maxTag)
        let long = String(repeating: "t", count: Store.maxTag + 1)
        XCTAssertNil(try c.call("Set", #"{"name":"a","value":1,"tag":"\#(ok)"}"#).error)
        for (method, parameters) in [
            ("Set", #"{"name":"a","value":2,"tag":"\#(long)"}"#),
            ("Set", #"{"name":"new","value":2,"tag":"\#(long)"}"#),
            ("Remove", #"{"name":"a","tag":"\#(long)"}"#),
            ("Transaction", #"{"ops":[{"op":"set","name":"a","value":3}],"tag":"\#(long)"}"#),
        ] {
            let r = try c.call(method, parameters)
            XCTAssertEqual(r.error, "io.tether.LimitExceeded", "\(method) \(r.parameters)")
            XCTAssertEqual(r.parameters["limit"], .string("tag"), method)
            XCTAssertEqual(r.parameters["maximum"], .int(Int64(Store.maxTag)), method)
            XCTAssertEqual(r.parameters["actual"], .int(Int64(Store.maxTag + 1)), method)
        }
        let get = try c.call("Get", #"{"name":"a"}"#)
        XCTAssertEqual(get.parameters["value"], .int(1), "nothing of a refused write was applied")
        XCTAssertEqual(try c.call("Get", #"{"name":"new"}"#).error, "io.tether.NotFound")
    }

    func testTheNumberOfStatesIsBounded() throws {
        let daemon = try DaemonFixture(arguments: ["--memory", "--max-states", "3"])
        let c = try Client(daemon)
        for name in ["a", "b", "c"] { XCTAssertNil(try c.call("Set", #"{"name":"\#(name)","value":1}"#).error) }
        for (method, parameters) in [
            ("Set", #"{"name":"d","value":1}"#),
            ("Transaction", #"{"ops":[{"op":"set","name":"a","value":5},{"op":"set","name":"e","value":1}]}"#),
            ("Declare", #"{"name":"f","descriptor":{},"value":1}"#),
        ] {
            let r = try c.call(method, parameters)
            XCTAssertEqual(r.error, "io.tether.LimitExceeded", "\(method) \(r.parameters)")
            XCTAssertEqual(r.parameters["limit"], .string("states"), method)
            XCTAssertEqual(r.parameters["maximum"], .int(3), method)
        }
        XCTAssertEqual(try c.call("Get", #"{"name":"a"}"#).parameters["value"], .int(1), "the refused transaction changed nothing")
        XCTAssertNil(try c.call("Set", #"{"name":"a","value":2}"#).error, "existing states are written")
        XCTAssertNil(try c.call("Remove", #"{"name":"b"}"#).error)
        XCTAssertNil(try c.call("Set", #"{"name":"d","value":1}"#).error, "room again after a Remove")
        let list = try c.call("List", #"{"prefix":""}"#)
        XCTAssertEqual(list.parameters["states"].flatMap { if case .array(let a) = $0 { a.count } else { nil } }, 3)
    }

    /// Against a plain sorted array, across chunk splits and removals.
    func testSortedNamesKeepByteOrder() {
        var names = SortedNames()
        var reference: [String] = []
        var generator = SystemRandomNumberGenerator()
        for i in 0..<6000 {
            let name = "n\(UInt32.random(in: 0..<4000, using: &generator))" + (i % 7 == 0 ? "é" : "")
            let inserted = names.insert(name)
            XCTAssertEqual(inserted, !reference.contains(name))
            if inserted { reference.append(name) }
            if i % 5 == 0, let gone = reference.randomElement(using: &generator) {
                XCTAssertTrue(names.remove(gone))
                reference.removeAll { $0 == gone }
            }
        }
        reference.sort { Store.precedes($0, $1) }
        XCTAssertEqual(names.all, reference)
        XCTAssertEqual(names.count, reference.count)
        XCTAssertGreaterThan(names.chunks.count, 1, "the test splits chunks")
        XCTAssertTrue(names.chunks.allSatisfy { !$0.isEmpty && $0.count <= SortedNames.chunkLimit })
        XCTAssertFalse(names.remove("absent"))
        // lowerBound, then stepping, walks the names from there.
        for probe in ["", "n1", "n25", "n3999", "o"] {
            var at = names.lowerBound(probe)
            var walked: [String] = []
            while let n = names.name(at: at), walked.count < 5 { walked.append(n); at = names.after(at) }
            XCTAssertEqual(walked, Array(reference.filter { !Store.precedes($0, probe) }.prefix(5)), probe)
        }
    }
}
