import Testing
@testable import TetherRuntime

@Suite struct ObservationTests {
    @Test func loopObserversCoalescePerTurnAndCarryOldAndNew() throws {
        let rt = try Runtime(Runtime.Options(loop: .host))
        let count = rt.state(0)
        let seen = Recorder<String>()
        let token = count.observe { seen.append("\($0.old ?? -1)->\($0.new ?? -1)@\($0.revision)") }
        count.value = 1
        count.value = 2
        count.value = 3
        try rt.runOnce()
        #expect(seen.all == ["0->3@\(try count.revision)"])
        token.cancel()
    }

    @Test func syncObserversRunInsideTheWrite() throws {
        let rt = try Runtime()
        let count = rt.state(0)
        let seen = Recorder<Int>()
        let token = count.observe(.sync) { seen.append($0.new!) }
        for i in 1...5 { count.value = i }
        #expect(seen.all == [1, 2, 3, 4, 5])
        _ = token
    }

    @Test func initialAndEqualOptions() throws {
        let rt = try Runtime()
        let s = rt.state("a")
        let seen = Recorder<String>()
        let token = s.observe([.sync, .initial, .equal]) { change in
            seen.append("\(change.isInitial ? "init" : "chg"):\(change.old ?? "nil")->\(change.new ?? "nil")")
        }
        s.value = "a"
        #expect(seen.all == ["init:a->a", "chg:a->a"])  // an initial call has old == new
        _ = token
    }

    @Test func droppingTheTokenRemovesTheObserver() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let seen = Recorder<Int>()
        do {
            let token = s.observe(.sync) { seen.append($0.new!) }
            s.value = 1
            _ = token
        }
        s.value = 2
        #expect(seen.all == [1])
    }

    @Test func observerThatWritesAndCancelsItself() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let echo = rt.state(0)
        let box = Recorder<Observer>()
        let token = s.observe(.sync) { change in
            echo.value = (change.new ?? 0) * 10  // a write from a callback: its own round
            box.all.first?.cancel()              // removal from inside its own call
        }
        box.append(token)
        s.value = 4
        try rt.flush()
        #expect(echo.value == 40)
        s.value = 5
        try rt.flush()
        #expect(echo.value == 40)
    }

    @Test func undecodableValueIsReportedNotCrashed() throws {
        let rt = try Runtime()
        let raw = rt.state(Value.int(1))
        let typed = State<String>(unowned: raw.handle)
        let seen = Recorder<String?>()
        let token = typed.observe(.sync) { seen.append($0.new) }
        let errors = capturingErrors { raw.value = .int(2) }
        #expect(seen.all == [nil])
        #expect(errors.count == 2)  // the old and the new value, each reported
        #expect(errors.allSatisfy { $0.message.contains("does not decode as String") })
        _ = token
    }

    @Test func transactionMetadataReachesObservers() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        let tags = Recorder<String>()
        let token = s.observe(.sync) { tags.append("\($0.transaction?.tag ?? "none")/\($0.transaction?.origin ?? 0)") }
        try rt.transaction(tag: "rename", origin: 7) { s.value = 1 }
        s.value = 2
        #expect(tags.all == ["rename/7", "none/0"])
        _ = token
    }
}
