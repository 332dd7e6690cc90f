// core_chain.swift — the 50-deep chain on TetherCore alone: no runtime, no
// lock, no C face, Swift closures for the computes. Built with the core's
// sources into one module by core_chain.py, which counts it under callgrind
// (N and 2N writes) beside `bench_tether`'s chain: what the evaluation model
// itself costs a recompute, whatever calls it (docs/performance.md, issue 16's
// eighth round).
//
// Each computed reads the one before with the core's plain tracked read (the
// read a C compute's `tether_computed_get_int` ends in), and the head is read
// likewise; after each write the last computed is read, pulling all 50.
@main struct CoreChain {
    static func main() {
        guard CommandLine.arguments.count == 2, let writes = Int(CommandLine.arguments[1]), writes >= 0 else {
            print("usage: core_chain WRITES")
            return
        }
        let graph = Graph(ownerID: 1)  // reads from "callbacks of runtime 1" are tracked
        let head = try! graph.createState(.int(0))
        var previous: DerivedID? = nil
        for _ in 0..<50 {
            let source = previous
            let body = DerivedBody(compute: { result in
                // The plain read when it applies (the steady state: the pull
                // brought the source up to date first), else the full one.
                let plain: Int64?, full: () throws(TetherError) -> Value
                if let source {
                    plain = graph.plainComputedInt(source.index, source.generation, callbackOf: 1)
                    full = { () throws(TetherError) in try graph.readComputed(source, tracked: true) }
                } else {
                    plain = graph.plainInt(head.index, head.generation, callbackOf: 1)
                    full = { () throws(TetherError) in try graph.read(head, tracked: true) }
                }
                var v: Int64
                if let plain {
                    v = plain
                } else {
                    do throws(TetherError) {
                        guard case let .int(x) = try full() else { return TetherError(.wrongType, "not an int") }
                        v = x
                    } catch {
                        return error
                    }
                }
                result = .int(v + 1)
                return nil
            })
            previous = try! graph.createDerived(.computed, body: body)
        }
        var sum: Int64 = 0
        for i in 0..<writes {
            _ = try! graph.write(head, .int(Int64(i + 1)))
            guard case let .int(x) = try! graph.readComputed(previous!) else { fatalError("not an int") }
            sum &+= x
        }
        // Each read is the write plus 50: the sum says every pull recomputed.
        let expected = Int64(writes) * Int64(writes + 1) / 2 + 50 * Int64(writes)
        print(sum == expected ? "ok \(sum)" : "WRONG \(sum), expected \(expected)")
    }
}
