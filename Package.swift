// swift-tools-version:6.0
import PackageDescription
import Foundation

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path

// libtether.so = the C face (Tether) over the runtime (TetherRuntime) over the
// reactive core (TetherCore). The core has no threads and no C types, so it
// can be tested and measured alone; the runtime owns threads, the libuv loop,
// delivery, transactions, scopes and lifetimes, and is the public Swift API
// (Swift programs and tetherd use it); the C face only decodes arguments,
// calls the runtime and encodes results. CTether exposes include/tether.h to
// Swift so the @_cdecl exports are checked against the very types C sees.
// The graph is only touched under its runtime's lock and never re-entered, so
// Swift's dynamic exclusivity checks guard nothing here, yet they were a third
// of a write's cost (profiled: swift_beginAccess/endAccess per array access).
let fastPaths: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked", "-cross-module-optimization"], .when(configuration: .release))]

let package = Package(
    name: "Tether",
    products: [
        .library(name: "tether", type: .dynamic, targets: ["Tether"]),
        .library(name: "TetherRuntime", targets: ["TetherRuntime"]),
        .library(name: "TetherSharing", targets: ["TetherSharing"]),
        .executable(name: "tetherd", targets: ["tetherd"]),
        // For tetherd's builds with another backend (Backends/Etcd): the
        // daemon and its command, to which they add theirs.
        .library(name: "TetherDaemon", targets: ["TetherDaemon"]),
        .library(name: "TetherdCommand", targets: ["TetherdCommand"]),
        .executable(name: "tetherctl", targets: ["tetherctl"]),
    ],
    dependencies: [
        // tetherctl's command line (the only package dependency; the
        // library and the daemon need none).
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .target(name: "CTether"),
        // The system calls tetherd makes that Swift cannot (no glibc wrapper).
        .target(name: "CDaemonSupport"),
        // SQLite for tetherd's store (libsqlite3-dev); only the daemon links it.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(
            name: "TetherCore",
            swiftSettings: fastPaths
        ),
        // Swift 5 mode for the runtime and the C face: raw pointers and
        // manual locking, which strict concurrency checking cannot see into
        // (the public Swift types say what is Sendable themselves).
        .target(
            name: "TetherRuntime",
            dependencies: ["TetherCore", "TetherWire", "CTether", "CLibUV"],
            swiftSettings: [.swiftLanguageMode(.v5)] + fastPaths
        ),
        .target(
            name: "Tether",
            dependencies: ["TetherRuntime", "TetherCore", "CTether", "CLibUV"],
            exclude: ["exports.map"],
            swiftSettings: [.swiftLanguageMode(.v5)] + fastPaths,
            linkerSettings: [.unsafeFlags(["-Xlinker", "--version-script=\(root)/Sources/Tether/exports.map"])]
        ),
        // The Swift API's parts that need Swift's Observation module:
        // @Shared(.tether("key")) and ObservableState. Apart from
        // TetherRuntime so that libtether.so does not carry Observation.
        .target(name: "TetherSharing", dependencies: ["TetherRuntime"], swiftSettings: [.swiftLanguageMode(.v5)]),
        .testTarget(name: "TetherCoreTests", dependencies: ["TetherCore"]),
        // The Varlink protocol tetherd and its clients speak: framing,
        // calls and replies, the io.tether interface (protocol/*.varlink)
        // and its typed model. Pure Swift on TetherCore's JSON: no sockets,
        // no threads, so Swift 6 language mode.
        .target(
            name: "TetherWire",
            dependencies: ["TetherCore"],
            swiftSettings: fastPaths
        ),
        .testTarget(name: "TetherWireTests", dependencies: ["TetherWire", "TetherCore"], exclude: ["check_idl.py"]),
        // tetherd: the daemon (Varlink server, store, watches, access) as a
        // library so tests and fuzzers can drive it in process; the
        // executable only parses options and runs it.
        .target(
            name: "TetherDaemon",
            dependencies: ["TetherRuntime", "TetherWire", "TetherCore", "CLibUV", "CSQLite", "CDaemonSupport"],
            swiftSettings: [.swiftLanguageMode(.v5)] + fastPaths
        ),
        .target(name: "TetherdCommand", dependencies: ["TetherDaemon", "TetherWire", "TetherCore", .product(name: "ArgumentParser", package: "swift-argument-parser")],
                path: "Sources/tetherd", swiftSettings: [.swiftLanguageMode(.v5)]),
        .executableTarget(name: "tetherd", dependencies: ["TetherdCommand"], path: "Sources/tetherd-main",
                          swiftSettings: [.swiftLanguageMode(.v5)]),
        // The fuzzer of the frame decoder and the dispatcher: what each input
        // is checked for (a library, so DaemonTests replays the corpus and
        // the regressions), and its entry point, libFuzzer's or a replayer
        // (`make fuzz`, docs/robustness.md).
        .target(name: "TetherDaemonFuzz", dependencies: ["TetherDaemon", "TetherWire", "TetherCore"],
                swiftSettings: [.swiftLanguageMode(.v5)]),
        .systemLibrary(name: "CFuzzer"),
        .executableTarget(name: "tetherd-fuzz", dependencies: ["TetherDaemonFuzz", "CFuzzer"],
                          swiftSettings: [.swiftLanguageMode(.v5)]),
        // tetherctl: the command line, a blocking Varlink client.
        .executableTarget(
            name: "tetherctl",
            dependencies: ["TetherWire", "TetherCore", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // Tests that start a real tetherd (and tetherctl, and PyPI's
        // varlink client) as processes on a temporary socket.
        // They link the C face too (HijackTests call tether_remote_connect).
        .testTarget(name: "DaemonTests", dependencies: ["TetherWire", "TetherCore", "TetherDaemon", "TetherDaemonFuzz", "Tether", "CTether", "TetherSharing"],
                    exclude: ["python_client.py"]),
        // A short Swift program that teaches the Swift API (`swift run tether-swift-example`).
        .executableTarget(name: "tether-swift-example", dependencies: ["TetherRuntime", "TetherSharing"]),
        // The Swift API's tests; they link the C face too, to prove that C
        // and Swift share one runtime in one process.
        .testTarget(name: "TetherRuntimeTests", dependencies: ["TetherRuntime", "TetherSharing", "Tether", "CTether"]),
    ]
)
