import Foundation
import XCTest

/// The randomized robustness test (Tests/robustness/robustness.py, see
/// docs/robustness.md): 4 writers and 2 watchers, processes of their own on
/// PyPI's varlink client, against the tetherd of this build with a data
/// directory and --durability full, killed with SIGKILL every 1 to 4 s and
/// restarted; then every guarantee is checked against what each client saw.
/// A fixed seed and a bounded run (25 s of writes); the environment may
/// change both: TETHER_ROBUSTNESS_SEED, TETHER_ROBUSTNESS_SECONDS.
final class RobustnessTests: XCTestCase {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().path + "/robustness/robustness.py"

    func testKilledDaemonKeepsEveryGuarantee() throws {
        let probe = try DaemonFixture.run("/usr/bin/env", ["python3", "-c", "import varlink"])
        guard probe.status == 0 else {
            let reason = "python3 cannot import varlink (pip install varlink, or scripts/install-deps.sh): \(probe.stderr)"
            print("RobustnessTests skipped: \(reason)")
            throw XCTSkip(reason)
        }
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["TETHER_ROBUSTNESS_SEED"] ?? "15"
        let seconds = environment["TETHER_ROBUSTNESS_SECONDS"] ?? "25"
        let r = try DaemonFixture.run("/usr/bin/env", ["python3", Self.script, "--tetherd", DaemonFixture.product("tetherd"),
                                                       "--seed", seed, "--duration", seconds])
        print(r.stdout, terminator: "")
        if !r.stderr.isEmpty { print(r.stderr, terminator: "") }
        XCTAssertEqual(r.status, 0, "robustness.py found a violation or could not run (its output is above)")
        XCTAssertTrue(r.stdout.contains("every check passed"), "robustness.py did not pass")
    }

    /// The validators on canned runs, without a daemon (issue 36): a good
    /// run passes; each check's fault is caught by that check, by a
    /// violation naming it; a fault with nothing to act on fails the
    /// self-check (Tests/robustness/test_validators.py).
    func testValidatorsOnCannedRuns() throws {
        let script = URL(fileURLWithPath: Self.script).deletingLastPathComponent().path + "/test_validators.py"
        let r = try DaemonFixture.run("/usr/bin/env", ["python3", script])
        print(r.stdout, terminator: "")
        if !r.stderr.isEmpty { print(r.stderr, terminator: "") }
        XCTAssertEqual(r.status, 0, "test_validators.py failed (its output is above)")
        XCTAssertTrue(r.stdout.contains("test_validators: 0 failed"), "test_validators.py did not finish")
    }
}
