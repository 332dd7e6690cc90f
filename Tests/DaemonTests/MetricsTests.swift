import Glibc
import TetherCore
import TetherDaemon
import TetherWire
import XCTest

/// io.tether.Metrics (the text `tetherd --metrics` serves): what it counts,
/// who may read it, and that what peers send cannot grow its label sets.
/// A real Prometheus scrapes it in Tests/metrics/prometheus_test.py.
final class MetricsTests: XCTestCase {
    private func metrics(_ client: InProcessDaemon.Client) -> String {
        client.ok("io.tether.Metrics").string("text") ?? ""
    }

    /// The value of one sample line ("name{labels} value"), nil if absent.
    private func sample(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    func testCountsCallsCommitsErrorsAndWatches() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        for i in 0..<5 { c.ok("io.tether.Set", ["name": .string("zqx.n"), "value": .int(Int64(i))]) }
        c.fails("io.tether.Get", ["name": "nope"], with: "io.tether.NotFound")
        let w = d.connect()
        w.send("io.tether.Watch", ["names": json(#"["zqx.n"]"#)], more: true)
        let text = metrics(c)
        XCTAssertEqual(sample(text, "tetherd_commits_total"), 5)
        XCTAssertEqual(sample(text, #"tetherd_calls_total{method="io.tether.Set"}"#), 5)
        XCTAssertEqual(sample(text, #"tetherd_calls_total{method="io.tether.Get"}"#), 1)
        XCTAssertEqual(sample(text, #"tetherd_call_errors_total{error="io.tether.NotFound"}"#), 1)
        XCTAssertEqual(sample(text, "tetherd_revision"), 5)
        XCTAssertEqual(sample(text, "tetherd_connections_open"), 2)
        XCTAssertEqual(sample(text, "tetherd_connections_total"), 2)
        XCTAssertEqual(sample(text, "tetherd_watchers_open"), 1)
        XCTAssertEqual(sample(text, "tetherd_watchers_total"), 1)
        XCTAssertEqual(sample(text, "tetherd_states"), 1)
        // No state name without namesByPrefix.
        XCTAssertFalse(text.contains("zqx"))
        XCTAssertNil(sample(text, #"tetherd_prefix_commits_total{prefix="zqx"}"#))
    }

    func testOnlyTheOwnerAndRootMayReadThem() throws {
        let other: UInt32 = getuid() == 4242 ? 4343 : 4242
        let policy = AccessPolicy(owner: getuid(), entries: [.init(subject: .uid(other), write: true, prefixes: [""])])
        let d = try InProcessDaemon(policy: policy)
        d.connect(uid: other).fails("io.tether.Metrics", with: "io.tether.AccessDenied")
        XCTAssertFalse(metrics(d.connect()).isEmpty)
    }

    func testPeersCannotGrowTheLabelSets() throws {
        let d = try InProcessDaemon()
        let c = d.connect()
        for i in 0..<50 { c.call("io.tether.Nope\(i)") }        // unknown methods: "other"
        c.send(raw: Array("{not json".utf8) + [0])               // not a call: "other"
        _ = c.replies()
        let text = metrics(c)
        XCTAssertEqual(sample(text, #"tetherd_calls_total{method="other"}"#), 51)
        XCTAssertFalse(text.contains("Nope"))
        let methods = text.split(separator: "\n").filter { $0.hasPrefix("tetherd_calls_total{") }
        XCTAssertEqual(methods.count, TetherMethod.allCases.count + 3)
    }

    func testPrefixesOnlyWhenAskedAndBounded() throws {
        let d = try InProcessDaemon()
        d.service.metrics.namesByPrefix = true
        let c = d.connect()
        c.ok("io.tether.Set", ["name": "app.theme", "value": "dark"])
        c.ok("io.tether.Set", ["name": "app.size", "value": 3])
        c.ok("io.tether.Set", ["name": #"say"\hi"#, "value": 1])  // escaped as a label value
        for i in 0..<120 { c.ok("io.tether.Set", ["name": .string("p\(i).x"), "value": 1]) }
        let text = metrics(c)
        XCTAssertEqual(sample(text, #"tetherd_prefix_commits_total{prefix="app"}"#), 2)
        XCTAssertEqual(sample(text, #"tetherd_prefix_commits_total{prefix="say\"\\hi"}"#), 1)
        let prefixes = text.split(separator: "\n").filter { $0.hasPrefix("tetherd_prefix_commits_total{") }
        XCTAssertEqual(prefixes.count, 101)  // 100 prefixes and "(other)"
        XCTAssertNotNil(sample(text, #"tetherd_prefix_commits_total{prefix="(other)"}"#))
    }
}
