import Dispatch
import Testing
@testable import TetherRuntime

/// Callbacks that write, cancel, free and flush from inside, and the
/// thread rules: each gets a clear error or the documented behaviour.
@Suite struct CallbackTests {
    final class Slot<T>: @unchecked Sendable { var value: T?; init(_ v: T? = nil) { value = v } }

    @Test func effectCancelsItselfFromInside() throws {
        let rt = try Runtime()
        let n = rt.state(0)
        let runs = Recorder<Int>()
        let me = Slot<Effect>()
        me.value = rt.effect(sync: true) {
            runs.append(n.value)
            if n.value == 1 { me.value?.cancel() }
        }
        n.value = 1
        n.value = 2
        #expect(runs.all == [0, 1])
    }

    @Test func observerFreesTheStateItObserves() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let alias = State<Int>(unowned: s.handle)
        let calls = Recorder<Int>()
        let token = s.observe(.sync) { change in
            calls.append(change.new ?? -1)
            try? alias.free()
        }
        s.value = 1
        #expect(calls.all == [1])
        #expect(throws: TetherError.self) { try s.set(2) }
        _ = token
    }

    @Test func observersWritingEachOtherAreCutOff() throws {
        let rt = try Runtime(Runtime.Options(maxRounds: 10))
        let a = rt.state(0)
        let b = rt.state(0)
        let ab = a.observe { change in b.value = (change.new ?? 0) + 1 }
        let ba = b.observe { change in a.value = (change.new ?? 0) + 1 }
        a.value = 1
        do {
            try rt.flush()
            Issue.record("the ping-pong was not cut")
        } catch {
            #expect(error.code == .feedbackLoop)
        }
        _ = (ab, ba)
    }

    @Test func flushFromInsideACallbackWithOwedWorkIsRefused() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let other = rt.state(0)
        let results = Recorder<ErrorCode?>()
        let loopToken = other.observe { _ in }
        let token = s.observe(.sync) { _ in
            other.value += 1  // owes a loop delivery
            do throws(TetherError) { try rt.flush(); results.append(nil) } catch { results.append(error.code) }
        }
        s.value = 1
        #expect(results.all == [.busy])
        _ = (token, loopToken)
    }

    @Test func runtimeFreedFromInsideACallback() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let after = Recorder<ErrorCode>()
        let token = s.observe(.sync) { _ in
            rt.free()  // finishes when this callback returns
        }
        s.value = 1
        do { _ = try s.get() } catch { after.append(error.code) }
        #expect(after.all == [.stale])
        _ = token
    }

    @Test func singleThreadedRuntimeRefusesOtherThreads() throws {
        let rt = try Runtime(Runtime.Options(loop: .host, singleThreaded: true))
        let s = rt.state(1)
        #expect(s.value == 1)
        let seen = Recorder<ErrorCode>()
        let handle = s.handle
        // async + wait: DispatchQueue.sync may run the block on this very thread.
        let done = DispatchGroup()
        done.enter()
        DispatchQueue.global().async {
            do throws(TetherError) { _ = try State<Int>(unowned: handle).get() } catch { seen.append(error.code) }
            done.leave()
        }
        done.wait()
        #expect(seen.all == [.wrongThread])
    }

    @Test func observersRegisteredAndCancelledWhileOthersWrite() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let total = Recorder<Int>()
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 1...200 {
                if t == 0 {
                    s.value = i
                } else {
                    let token = s.observe(.sync) { _ in total.append(1) }
                    token.cancel()
                }
            }
        }
        try rt.flush()
        #expect(s.value == 200)
    }

    @Test func staleHandlesFromForgedIDs() throws {
        #expect(throws: TetherError.self) { try State<Int>(unowned: 0).get() }
        #expect(throws: TetherError.self) { try State<Int>(unowned: 0xdead_beef).set(1) }
        let fake = Runtime(unowned: 12345)
        #expect(throws: TetherError.self) { try fake.flush() }
        #expect(throws: TetherError.self) { try fake.makeState(1) }
    }
}
