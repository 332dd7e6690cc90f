// swift-tools-version:5.9
// The Swift Observation anchor of the benchmark suite (`make bench` builds it
// in release mode with --scratch-path .build-bench-observation). A package of
// its own, so the library's Package.swift knows nothing about benchmarks.
import PackageDescription

let package = Package(
  name: "ObservationBench",
  targets: [
    .target(name: "CMallinfo", path: "Sources/CMallinfo"),
    .executableTarget(
      name: "ObservationBench",
      dependencies: ["CMallinfo"],
      path: "Sources/ObservationBench"
    )
  ]
)
