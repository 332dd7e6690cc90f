import Testing
import TetherCore
@testable import TetherWire
#if canImport(Glibc)
import Glibc
#endif

/// SplitMix64: a fixed sequence, so any failure reproduces from its seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The repository's root, from this file's path.
let repositoryRoot: String = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)  // Tests/TetherWireTests/Support.swift
    return parts.joined(separator: "/")
}()

/// A file's bytes, or nil when it cannot be read.
func readFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        if n == 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
    }
    return bytes
}

func readText(_ path: String) -> String? {
    readFile(path).map { String(decoding: $0, as: UTF8.self) }
}

/// Parses JSON text; records an issue and returns null when it does not parse.
func json(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Value {
    do {
        return try Value(json: text)
    } catch {
        Issue.record("does not parse: \(text): \(error)", sourceLocation: sourceLocation)
        return .null
    }
}

func jsonObject(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> ValueObject {
    guard case .object(let object) = json(text, sourceLocation: sourceLocation) else {
        Issue.record("not an object: \(text)", sourceLocation: sourceLocation)
        return ValueObject()
    }
    return object
}

/// Compact JSON text of a value.
func text(_ value: Value) -> String {
    (try? value.jsonString()) ?? "<not JSON>"
}

/// The error `body` throws; records an issue when it does not throw.
func varlinkError<T>(sourceLocation: SourceLocation = #_sourceLocation,
                     _ body: () throws -> T) -> VarlinkError? {
    do {
        let result = try body()
        Issue.record("expected an error, got \(result)", sourceLocation: sourceLocation)
        return nil
    } catch let error as VarlinkError {
        return error
    } catch {
        Issue.record("expected a VarlinkError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

extension VarlinkError {
    /// The `parameter` of an InvalidParameter, the `field` of an InvalidCall.
    var parameter: String? {
        if case .string(let s)? = parameters["parameter"] { return s }
        if case .string(let s)? = parameters["field"] { return s }
        return nil
    }

    var message: String {
        if case .string(let s)? = parameters["message"] { return s }
        return detail
    }
}

let tetherInterface: VarlinkInterface = VarlinkService.tetherd.interface(named: "io.tether")!
let serviceInterface: VarlinkInterface = VarlinkService.tetherd.interface(named: "org.varlink.service")!
