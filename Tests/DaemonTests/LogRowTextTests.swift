import Foundation
import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// `LogRowText` writes a log row's `changes` and `images` columns without
/// `Value` trees; the text must be what the trees gave (stores written by
/// either read the same), so each case is compared byte for byte with the
/// tree encoding it replaced.
final class LogRowTextTests: XCTestCase {
    static let values: [Value] = [
        .null, .bool(true), .bool(false), .int(0), .int(-7), .int(.max), .int(.min),
        .double(0.5), .double(-0.0), .double(1e300), .double(3),
        .string(""), .string("plain"), .string("quote \" backslash \\ newline \n tab \t nul \u{0} é 😀 \u{7F}"),
        .bytes([]), .bytes([0, 1, 2, 255]),
        .array([]), .array([.int(1), .string("x"), .bytes([9]), .array([.null])]),
        .object(ValueObject()),
        try! Value(json: #"{"z":1,"a":{"k":[true,false,null]},"m":"s"}"#),
        .object({ var o = ValueObject(); o["b"] = .bytes([1, 2]); o["n"] = .array([.bytes([3])]); o["s"] = .string("t"); return o }()),
    ]

    static let names = ["a", "with space", "quote\"name", "é😀", "tab\tname"]

    static let descriptors: [Descriptor] = [
        Descriptor(),
        Descriptor(type: .double),
        Descriptor(type: .string, readOnly: true),
        Descriptor(readOnly: true),
        Descriptor(range: NumericRange(minimum: 0, maximum: 1)),
        Descriptor(type: .int, range: NumericRange(minimum: -5, maximum: nil)),
    ]

    func treeChanges(_ changes: [TetherWire.Change]) throws -> String {
        try Value.array(changes.map(\.wireValue)).jsonString()
    }

    func treeImages(_ images: [StateImage]) throws -> String {
        var values: [Value] = []
        for image in images { values.append(try SQLiteStore.imageValue(image)) }
        return try Value.array(values).jsonString()
    }

    /// Written after other bytes into the smallest writer (so it grows
    /// in the middle of a row), as the store appends a group's rows.
    func fastChanges(_ changes: [TetherWire.Change]) throws -> String {
        var out = ByteWriter(capacity: 0)
        out.append("prefix")
        try LogRowText.changes(changes, into: &out)
        let text = String(decoding: out.bytes(6, out.count), as: UTF8.self)
        XCTAssertEqual(String(decoding: out.bytes(0, 6), as: UTF8.self), "prefix")
        return text
    }

    func fastImages(_ images: [StateImage]) throws -> String {
        var out = ByteWriter(capacity: 0)
        out.append("prefix")
        try LogRowText.images(images, into: &out)
        XCTAssertEqual(String(decoding: out.bytes(0, 6), as: UTF8.self), "prefix")
        let text = String(decoding: out.bytes(6, out.count), as: UTF8.self)
        if images.count == 1 {  // the one-state commit's own writer, the same text
            var one = ByteWriter(capacity: 0)
            try LogRowText.images(of: images[0], into: &one)
            XCTAssertEqual(String(decoding: one.bytes(0, one.count), as: UTF8.self), text)
        }
        return text
    }

    /// ByteWriter's ints and strings are what TetherCore's writer gives.
    func testByteWriterIntsAndStringsAreTheWritersText() throws {
        var ints: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, 12345, -98765, .max, .min, .max - 1, .min + 1]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bits = Int.random(in: 1...64, using: &rng)
            ints.append(Int64(truncatingIfNeeded: rng.next() >> UInt64(64 - bits)) * (Bool.random(using: &rng) ? 1 : -1))
        }
        var out = ByteWriter(capacity: 0)
        var expected: [UInt8] = []
        for n in ints {
            out.appendInt(n)
            out.append(UInt8(ascii: ","))
            try Value.int(n).writeJSON(into: &expected)
            expected.append(UInt8(ascii: ","))
        }
        for s in LogRowTextTests.names + ["", "\\", "\u{1F}x", String(repeating: "long ", count: 100)] {
            try out.appendString(s)
            try Value.string(s).writeJSON(into: &expected)
        }
        for value in LogRowTextTests.values {
            try out.appendValue(value)
            try value.writeJSON(into: &expected)
        }
        XCTAssertEqual(Array(out.bytes(0, out.count)), expected)
        out.removeAll()
        XCTAssertEqual(out.count, 0)
        out.append("again")
        XCTAssertEqual(String(decoding: out.bytes(0, out.count), as: UTF8.self), "again")
    }

    func testChangesAreTheTreesText() throws {
        let paths = [JSONPointer.root, try JSONPointer(parsing: "/a/0"), try JSONPointer(parsing: "/~1x~0/é")]
        var all: [TetherWire.Change] = []
        for name in LogRowTextTests.names {
            for path in paths {
                for value in LogRowTextTests.values {
                    let change = TetherWire.Change(name: name, path: path, write: .set(value))
                    XCTAssertEqual(try fastChanges([change]), try treeChanges([change]))
                    all.append(change)
                }
                let remove = TetherWire.Change(name: name, path: path, write: .remove)
                XCTAssertEqual(try fastChanges([remove]), try treeChanges([remove]))
                all.append(remove)
            }
        }
        XCTAssertEqual(try fastChanges([]), try treeChanges([]))
        XCTAssertEqual(try fastChanges(all), try treeChanges(all))
    }

    func testImagesAreTheTreesText() throws {
        var all: [StateImage] = []
        for name in LogRowTextTests.names {
            for descriptor in LogRowTextTests.descriptors {
                for value in LogRowTextTests.values {
                    for modified: UInt64 in [0, 42, UInt64(Int64.max) + 3] {
                        let image = StateImage(name: name, value: value, modified: modified, descriptor: descriptor)
                        XCTAssertEqual(try fastImages([image]), try treeImages([image]))
                        all.append(image)
                    }
                }
            }
            let removed = StateImage(name: name, value: nil, modified: 9, descriptor: Descriptor())
            XCTAssertEqual(try fastImages([removed]), try treeImages([removed]))
            all.append(removed)
        }
        XCTAssertEqual(try fastImages([]), try treeImages([]))
        XCTAssertEqual(try fastImages(all), try treeImages(all))
    }

    /// A commit's entry (`LogRowText.commit`): the short form
    /// `["name",value]` for one whole scalar Set, the change list for
    /// anything else; both read back as the commit's changes. Its images
    /// are `0` exactly when they follow from that one change, and read
    /// back as the image itself.
    func testShortFormsReadBackAsTheCommit() throws {
        func entry(_ changes: [TetherWire.Change]) throws -> String {
            var out = ByteWriter(capacity: 0)
            try LogRowText.commit(changes, into: &out)
            return String(decoding: out.bytes(0, out.count), as: UTF8.self)
        }
        let paths = [JSONPointer.root, try JSONPointer(parsing: "/a/0")]
        for name in LogRowTextTests.names {
            for path in paths {
                for value in LogRowTextTests.values {
                    let change = TetherWire.Change(name: name, path: path, write: .set(value))
                    let text = try entry([change])
                    let scalar: Bool
                    switch value {
                    case .bytes, .array, .object: scalar = false
                    default: scalar = true
                    }
                    if path.isRoot && scalar {
                        XCTAssertEqual(text, "[" + (try Value.string(name).jsonString()) + "," + (try value.jsonString()) + "]")
                    } else {
                        XCTAssertEqual(text, try treeChanges([change]))
                    }
                    let back = try SQLiteStore.decodeChanges(text, revision: 7)
                    XCTAssertEqual(back.count, 1)
                    XCTAssertEqual(back.first?.name, name)
                    XCTAssertEqual(back.first?.path, path)
                    XCTAssertEqual(back.first?.write, .set(value))

                    // The image: left out only when the change gives it whole.
                    let commit = Commit(revision: 7, changes: [change], tag: nil, origin: nil)
                    for descriptor in LogRowTextTests.descriptors {
                        for modified: UInt64 in [7, 6] {
                            let image = StateImage(name: name, value: value, modified: modified, descriptor: descriptor)
                            let follows = LogRowText.imageFollows(from: commit, image)
                            XCTAssertEqual(follows, path.isRoot && modified == 7 && descriptor == Descriptor())
                            guard follows else { continue }
                            let images = try SQLiteStore.decodeImages(.int(0), of: commit)
                            XCTAssertEqual(images.count, 1)
                            XCTAssertEqual(images.first?.name, name)
                            XCTAssertEqual(images.first?.value, value)
                            XCTAssertEqual(images.first?.modified, 7)
                            XCTAssertEqual(images.first?.descriptor, Descriptor())
                        }
                    }
                    let other = StateImage(name: name, value: .string("not the value"), modified: 7, descriptor: Descriptor())
                    XCTAssertEqual(LogRowText.imageFollows(from: commit, other), value == .string("not the value") && path.isRoot)
                }
            }
            let remove = TetherWire.Change(name: name, write: .remove)
            XCTAssertEqual(try entry([remove]), try treeChanges([remove]))
            let removed = Commit(revision: 3, changes: [remove], tag: nil, origin: nil)
            XCTAssertFalse(LogRowText.imageFollows(from: removed, StateImage(name: name, value: nil, modified: 3, descriptor: Descriptor())))
            XCTAssertThrowsError(try SQLiteStore.decodeImages(.int(0), of: removed), "a 0 its changes do not give is a malformed row")
        }
        let two = [TetherWire.Change(name: "a", write: .set(.int(1))), TetherWire.Change(name: "b", write: .set(.int(2)))]
        XCTAssertEqual(try entry(two), try treeChanges(two))
        XCTAssertFalse(LogRowText.imageFollows(from: Commit(revision: 1, changes: two, tag: nil, origin: nil),
                                               StateImage(name: "a", value: .int(1), modified: 1, descriptor: Descriptor())))
    }

    func testAValueJSONCannotHoldFailsAsBefore() {
        let change = TetherWire.Change(name: "a", write: .set(.double(.nan)))
        XCTAssertThrowsError(try fastChanges([change]))
        XCTAssertThrowsError(try treeChanges([change]))
        let image = StateImage(name: "a", value: .double(.infinity), modified: 1, descriptor: Descriptor())
        XCTAssertThrowsError(try fastImages([image]))
        XCTAssertThrowsError(try treeImages([image]))
    }
}

/// Log rows are inserted together, up to `SQLiteStore.rowsPerInsert` per
/// statement, before the COMMIT or anything else that touches the store:
/// every row of a group larger than that, and rows pending when Compact
/// or Declare comes, read back after a restart.
final class BatchedLogRowsTests: XCTestCase {
    /// Groups without tags or origins go in through the statement that
    /// leaves those columns out; a group with one tagged row through the
    /// other; all read back the same.
    func testUntaggedAndTaggedGroupsReadBack() throws {
        let template = NSTemporaryDirectory() + "tether-rows.XXXXXX"
        var bytes = Array(template.utf8CString)
        let directory = String(cString: try XCTUnwrap(mkdtemp(&bytes)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let groups = [1, 5, SQLiteStore.rowsPerInsert + 2, 3, 1]
        let taggedRevision: UInt64 = 8  // in the third group
        var revision: UInt64 = 0
        do {
            let sqlite = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 10_000)
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            for size in groups {
                for _ in 0..<size {
                    revision += 1
                    let tagged = revision == taggedRevision
                    let value = Value.int(Int64(revision))
                    try sqlite.record(Commit(revision: revision, changes: [TetherWire.Change(name: "s\(revision % 4)", write: .set(value))],
                                             tag: tagged ? "" : nil, origin: tagged ? 0 : nil),
                                      state: StateImage(name: "s\(revision % 4)", value: value, modified: revision, descriptor: Descriptor()))
                }
                try sqlite.sync()
            }
        }
        let contents = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 10_000).load()
        XCTAssertEqual(contents.log.map(\.revision), Array(1...revision))
        for commit in contents.log {
            XCTAssertEqual(commit.tag, commit.revision == taggedRevision ? "" : nil)
            XCTAssertEqual(commit.origin, commit.revision == taggedRevision ? 0 : nil)
            XCTAssertEqual(commit.changes, [TetherWire.Change(name: "s\(commit.revision % 4)", write: .set(.int(Int64(commit.revision))))])
        }
        XCTAssertEqual(contents.states.first { $0.name == "s\(revision % 4)" }?.value, .int(Int64(revision)))
    }

    func testEveryRowOfALargeGroupReadsBack() throws {
        let template = NSTemporaryDirectory() + "tether-rows.XXXXXX"
        var bytes = Array(template.utf8CString)
        let directory = String(cString: try XCTUnwrap(mkdtemp(&bytes)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func commit(_ sqlite: SQLiteStore, _ revision: UInt64) throws {
            let name = "s\(revision % 7)"
            let value = Value.string("v\(revision)")
            try sqlite.record(Commit(revision: revision, changes: [TetherWire.Change(name: name, write: .set(value))],
                                     tag: revision % 3 == 0 ? "t\(revision)" : nil, origin: revision % 5 == 0 ? revision : nil),
                              states: [StateImage(name: name, value: value, modified: revision, descriptor: Descriptor())])
        }
        do {
            let sqlite = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 10_000)
            _ = try sqlite.load()
            try sqlite.start(epoch: "e1")
            // 2 * rowsPerInsert + 3 rows in one group; then rows pending
            // when a descriptor and a Compact come, in the same group.
            let n = UInt64(2 * SQLiteStore.rowsPerInsert + 3)
            for revision in 1...n { try commit(sqlite, revision) }
            try sqlite.sync()
            try commit(sqlite, n + 1)
            try sqlite.describe("s1", Descriptor(readOnly: true))
            try commit(sqlite, n + 2)
            try sqlite.compact(through: 2)  // syncs
        }
        let reopened = try SQLiteStore(directory: directory, durability: .normal, logCapacity: 10_000)
        let contents = try reopened.load()
        let n = UInt64(2 * SQLiteStore.rowsPerInsert + 5)
        XCTAssertEqual(contents.revision, n)
        XCTAssertEqual(contents.log.map(\.revision), Array(3...n))
        for commit in contents.log {
            XCTAssertEqual(commit.tag, commit.revision % 3 == 0 ? "t\(commit.revision)" : nil)
            XCTAssertEqual(commit.origin, commit.revision % 5 == 0 ? commit.revision : nil)
            XCTAssertEqual(commit.changes, [TetherWire.Change(name: "s\(commit.revision % 7)", write: .set(.string("v\(commit.revision)")))])
        }
        for state in contents.states {
            let newest = (1...n).last { "s\($0 % 7)" == state.name }!
            XCTAssertEqual(state.value, .string("v\(newest)"), state.name)
            XCTAssertEqual(state.modified, newest)
            XCTAssertEqual(state.descriptor.readOnly, state.name == "s1")
        }
        XCTAssertEqual(contents.states.count, 7)
    }
}
