import Foundation
import XCTest

/// PyPI's `varlink` client, which nobody here wrote, against a real tetherd:
/// python_client.py calls every method of io.tether and org.varlink.service
/// and checks the results and the typed errors.
final class PythonClientTests: XCTestCase {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/python_client.py"

    func testPyPIVarlinkClientCallsEveryMethod() throws {
        let probe = try DaemonFixture.run("/usr/bin/env", ["python3", "-c", "import varlink"])
        guard probe.status == 0 else {
            let reason = "python3 cannot import varlink (pip install varlink, or scripts/install-deps.sh): \(probe.stderr)"
            print("PythonClientTests skipped: \(reason)")
            throw XCTSkip(reason)
        }
        let daemon = try DaemonFixture()
        defer { daemon.stop() }
        let r = try DaemonFixture.run("/usr/bin/env", ["python3", Self.script, daemon.address])
        XCTAssertEqual(r.status, 0, "python_client.py failed:\n\(r.stdout)\(r.stderr)")
        XCTAssertTrue(r.stdout.contains("every check passed"), r.stdout)
    }
}
