// tetherd-fuzz: the frame decoder and the dispatcher under libFuzzer, in
// process (DaemonFuzzer says what each input is checked for).
//
// Built for fuzzing (`make fuzz`, docs/robustness.md):
//     swift build -c release --product tetherd-fuzz --scratch-path .build-fuzz \
//       -Xswiftc -sanitize=fuzzer,address -Xswiftc -DTETHER_LIBFUZZER
// main hands over to libFuzzer (LLVMFuzzerRunDriver: SwiftPM gives an
// executable its own main, so libFuzzer's is not used), which takes its
// usual options; a violation is a crash (fatalError with its message), and
// libFuzzer saves the input.
//
// Built plainly (swift build), it replays inputs without libFuzzer:
//     tetherd-fuzz FILE|DIR ...    runs each file (each file of a DIR);
//                                  prints the violations of every input
//                                  that has some, and exits 1 then

import CFuzzer
import Foundation
import TetherDaemonFuzz

/// One input: a violation is a crash, for libFuzzer to report and keep.
/// (Exported under libFuzzer's name too: -sanitize=fuzzer links libFuzzer's
/// own main, which refers to it.)
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let problems = DaemonFuzzer.run(UnsafeRawBufferPointer(start: data, count: size), target: fuzzTarget)
    if !problems.isEmpty {
        fatalError("tetherd-fuzz: \(problems.count) violation(s):\n" + problems.prefix(20).joined(separator: "\n"))
    }
    return 0
}

/// TETHER_FUZZ_TARGET=fast|watch|fastpath|store picks the checks
/// (DaemonFuzzer.Target); unset, a replay runs all four and libFuzzer runs
/// the fast one.
let fuzzTarget: DaemonFuzzer.Target? = {
    if let name = getenv("TETHER_FUZZ_TARGET").map({ String(cString: $0) }) {
        guard let target = DaemonFuzzer.Target(rawValue: name) else {
            let names = DaemonFuzzer.Target.allCases.map(\.rawValue).joined(separator: ", ")
            fputs("tetherd-fuzz: TETHER_FUZZ_TARGET must be one of \(names), not \(name)\n", stderr)
            exit(2)
        }
        return target
    }
    #if TETHER_LIBFUZZER
    return .fast
    #else
    return nil
    #endif
}()

@main
enum TetherdFuzz {
    static func main() {
        #if TETHER_LIBFUZZER
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) })
        #else
        replay(Array(CommandLine.arguments.dropFirst()))
        #endif
    }

    static func replay(_ arguments: [String]) {
        var files: [String] = []
        for argument in arguments {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                print("tetherd-fuzz: no such file: \(argument)")
                exit(2)
            }
            if isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
                files += names.sorted().map { argument + "/" + $0 }
            } else {
                files.append(argument)
            }
        }
        if files.isEmpty {
            print("usage: tetherd-fuzz FILE|DIR ...   (replays inputs; `make fuzz` builds it for libFuzzer)")
            exit(2)
        }
        var failed = 0
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            let problems = DaemonFuzzer.run([UInt8](data), target: fuzzTarget)
            if !problems.isEmpty {
                failed += 1
                print("FAIL \(file)")
                for p in problems { print("    \(p)") }
            }
        }
        print("tetherd-fuzz: \(files.count) inputs, \(failed) with violations")
        exit(failed == 0 ? 0 : 1)
    }
}
