// swift-tools-version:6.0
import PackageDescription
import Foundation

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path

// libtether.so = the C face (Tether) over the reactive core (TetherCore).
// The core has no C types so it can be tested and measured alone and reused by
// the daemon; CTether exposes include/tether.h to Swift so the @_cdecl exports
// are checked against the very types C programs see.
// The graph is only touched under its runtime's lock and never re-entered, so
// Swift's dynamic exclusivity checks guard nothing here, yet they were a third
// of a write's cost (profiled: swift_beginAccess/endAccess per array access).
let fastPaths: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked", "-cross-module-optimization"], .when(configuration: .release))]

let package = Package(
    name: "Tether",
    products: [
        .library(name: "tether", type: .dynamic, targets: ["Tether"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .target(name: "CTether"),
        .target(
            name: "TetherCore",
            swiftSettings: fastPaths
        ),
        // Swift 5 mode for the C face: it is all raw pointers and manual
        // locking, which strict concurrency checking cannot see into.
        .target(
            name: "Tether",
            dependencies: ["TetherCore", "CTether", "CLibUV"],
            exclude: ["exports.map"],
            swiftSettings: [.swiftLanguageMode(.v5)] + fastPaths,
            linkerSettings: [.unsafeFlags(["-Xlinker", "--version-script=\(root)/Sources/Tether/exports.map"])]
        ),
        .testTarget(name: "TetherCoreTests", dependencies: ["TetherCore"]),
    ]
)
