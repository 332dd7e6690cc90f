// swift-tools-version:6.1
// tetherd with the etcd backend (`tetherd --backend etcd:URL,…`: docs/daemon.md,
// "Several machines"). A package of its own so that gRPC, SwiftNIO and the
// generated etcd API weigh on neither libtether.so nor the default build:
// `make etcd` builds it (Backends/Etcd/.build/release/tetherd-etcd, which
// the default tetherd runs when given --backend etcd:), and it
// depends on the main package by path.
import PackageDescription
import Foundation

// SwiftPM names a path dependency after its folder: the checkout's.
let mainFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
let main = mainFolder.lastPathComponent.lowercased()

let package = Package(
    name: "TetherEtcd",
    products: [
        .executable(name: "tetherd-etcd", targets: ["tetherd-etcd"]),
    ],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/grpc/grpc-swift-2", exact: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", exact: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", exact: "2.4.1"),
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
    ],
    targets: [
        // etcd 3.4's gRPC API, generated once by scripts/generate.sh and
        // committed (its plugins take minutes to build).
        .target(
            name: "EtcdAPI",
            dependencies: [
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // The ledger on etcd: proposals as Txns, one Watch feeding the store.
        .target(
            name: "TetherEtcd",
            dependencies: [
                "EtcdAPI",
                .product(name: "TetherDaemon", package: main),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // tetherd with the etcd backend registered; the default tetherd
        // runs it when given --backend etcd: (it is `tetherd-etcd` beside
        // it, or on PATH): target names are unique across packages.
        .executableTarget(
            name: "tetherd-etcd",
            dependencies: ["TetherEtcd", .product(name: "TetherdCommand", package: main)],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
