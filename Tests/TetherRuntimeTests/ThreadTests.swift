import Dispatch
import Testing
@testable import TetherRuntime

@Suite struct ThreadTests {
    @Test func writersOnManyThreadsCallbacksNeverOverlap() throws {
        let rt = try Runtime()
        let counter = rt.state(0)
        let inside = Recorder<[Int]>()
        let overlaps = Recorder<Int>()
        let active = rt.state(0)  // only touched by callbacks: they never run concurrently
        _ = active
        final class Flag: @unchecked Sendable { var busy = false }
        let flag = Flag()
        let token = counter.observe(.sync) { change in
            if flag.busy { overlaps.append(1) }
            flag.busy = true
            inside.append([change.old ?? -1, change.new ?? -1])
            flag.busy = false
        }
        let threads = 8, writes = 500
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 1...writes {
                counter.value = t * 100_000 + i  // every write changes the value
            }
        }
        try rt.flush()
        #expect(overlaps.count == 0)
        // Calls coalesce, so their number is not fixed; what is: they chain
        // from 0 without a gap, every value is one a thread wrote, and the
        // last is the final value, the last write of one of the threads.
        let calls = inside.all
        #expect(calls.count >= 1 && calls.count <= threads * writes)
        #expect(calls.first?[0] == 0)
        for (a, b) in zip(calls, calls.dropFirst()) { #expect(a[1] == b[0], "a gap between \(a) and \(b)") }
        let written = Set((0..<threads).flatMap { t in (1...writes).map { t * 100_000 + $0 } })
        #expect(calls.allSatisfy { written.contains($0[1]) })
        #expect(calls.last?[1] == counter.value)
        #expect(counter.value % 100_000 == writes, "the final value is some thread's last write: \(counter.value)")
        _ = token
    }

    @Test func transactionsFromManyThreadsAreAtomic() throws {
        let rt = try Runtime()
        let a = rt.state(0)
        let b = rt.state(0)
        let torn = Recorder<Int>()
        let committed = Recorder<Int>()
        let failures = Recorder<String>()
        let check = rt.effect(sync: true) { if a.value != b.value { torn.append(1) } }
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 1...200 {
                do {
                    try rt.transaction { a.value = t * 1000 + i; b.value = t * 1000 + i }
                    committed.append(1)
                } catch {
                    failures.append("\(error)")
                }
            }
        }
        try rt.flush()
        #expect(failures.all.isEmpty, "transactions failed: \(failures.all.prefix(3))")
        #expect(committed.count == 800)
        #expect(torn.count == 0)
        #expect(a.value == b.value)
        #expect(a.value % 1000 == 200, "the final value is some thread's last transaction: \(a.value)")
        _ = check
    }

    @Test func computedReadFromManyThreads() throws {
        let rt = try Runtime()
        let n = rt.state(1)
        let square = rt.computed { n.value * n.value }
        let wrong = Recorder<Int>()
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 1...300 {
                if t == 0 { n.value = i }
                let s = square.value
                let root = Int(Double(s).squareRoot())
                if root * root != s { wrong.append(s) }
            }
        }
        #expect(wrong.count == 0)
    }

    /// SYNC observers under concurrent writers coalesce, but the calls
    /// chain without a gap and end at the final value (tether.h,
    /// TETHER_OBSERVE_SYNC).
    @Test func syncCallsChainUnderContention() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let pairs = Recorder<[Int]>()
        let token = s.observe(.sync) { pairs.append([$0.old ?? -1, $0.new ?? -1]) }
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for i in 1...500 { s.value = (t + 1) * 1_000_000 + i }
        }
        try rt.flush()
        let calls = pairs.all
        #expect(!calls.isEmpty && calls.count <= 4000)
        #expect(calls.first?[0] == 0)
        #expect(calls.last?[1] == s.value)
        #expect(calls.allSatisfy { $0[0] != $0[1] })
        #expect(zip(calls, calls.dropFirst()).allSatisfy { $0[1] == $1[0] })
        _ = token
    }
}
