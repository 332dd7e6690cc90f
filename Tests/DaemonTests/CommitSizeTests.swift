import TetherCore
@testable import TetherDaemon
import TetherWire
import XCTest

/// The log's byte count (`--log-bytes`) reads `Commit.approximateBytes`;
/// a whole-value Set's commit takes a shortcut (`approximateBytes(ofWholeSet:)`,
/// also handed in by `Store.setWhole`), which must count what the general
/// sum over the changes counts.
final class CommitSizeTests: XCTestCase {
    /// The general sum, as `approximateBytes` makes it for any commit.
    func summed(_ commit: Commit) -> Int {
        var total = 64 + (commit.tag?.utf8.count ?? 0)
        for change in commit.changes {
            total += 48 + change.name.utf8.count
            if !change.path.isRoot { total += change.path.tokens.reduce(0) { $0 + $1.utf8.count + 16 } }
            if case .set(let value) = change.write { total += Commit.approximateBytes(of: value) }
        }
        return total
    }

    func testTheWholeSetShortcutCountsWhatTheSumCounts() throws {
        let values: [Value] = [.null, .bool(true), .int(7), .double(0.5), .string(""), .string("twelve chars"),
                               .bytes([1, 2, 3]), .array([.int(1), .string("xy")]), try Value(json: #"{"a":{"b":[1,2]}}"#)]
        for name in ["a", "a longer name", "é😀"] {
            for value in values {
                for tag: String? in [nil, "", "a tag"] {
                    let commit = Commit(revision: 3, changes: [Change(name: name, write: .set(value))], tag: tag, origin: nil)
                    XCTAssertEqual(commit.approximateBytes, summed(commit))
                    XCTAssertEqual(Commit.approximateBytes(ofWholeSet: name, value) + (tag?.utf8.count ?? 0), summed(commit))
                }
            }
        }
        // Everything else takes the sum.
        let other = [Commit(revision: 1, changes: [Change(name: "a", path: try JSONPointer(parsing: "/x/0"), write: .set(.int(1)))], tag: nil, origin: nil),
                     Commit(revision: 2, changes: [Change(name: "a", write: .remove)], tag: "t", origin: 4),
                     Commit(revision: 3, changes: [Change(name: "a", write: .set(.int(1))), Change(name: "b", write: .set(.string("s")))], tag: nil, origin: nil),
                     Commit(revision: 4, changes: [], tag: nil, origin: nil)]
        for commit in other { XCTAssertEqual(commit.approximateBytes, summed(commit)) }
    }
}
