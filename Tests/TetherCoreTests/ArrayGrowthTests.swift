import Testing
@testable import TetherCore

/// Writers reserve room before each append without giving up geometric
/// growth (issue 30 §4: a Get of 80,000 string members was quadratic).
@Suite struct ArrayGrowthTests {
    /// How many times the buffer was reallocated while `append` ran `n` times.
    private func reallocations(_ n: Int, _ append: (inout [UInt8], Int) -> Void) -> Int {
        var out: [UInt8] = []
        var capacity = out.capacity
        var count = 0
        for i in 0..<n {
            append(&out, i)
            if out.capacity != capacity { count += 1; capacity = out.capacity }
        }
        return count
    }

    @Test func reservingBeforeEachSmallAppendGrowsGeometrically() {
        let n = 80_000
        let growing = reallocations(n) { out, _ in
            out.reserveGrowing(12)
            out.append(contentsOf: [UInt8](repeating: 0x61, count: 12))
        }
        // Twofold growth from 12 to 960,000 bytes: ~17 reallocations.
        #expect(growing <= 24)
        // What the writer did before: one reallocation per append.
        let exact = reallocations(n) { out, _ in
            out.reserveCapacity(out.count + 12)
            out.append(contentsOf: [UInt8](repeating: 0x61, count: 12))
        }
        #expect(exact > n / 2, "reserveCapacity(count + n) reallocates to the exact size (the defect this guards)")
    }

    @Test func stringsAndBytesWrittenOneAfterAnotherGrowGeometrically() {
        let strings = reallocations(80_000) { out, i in
            JSONWriter.writeString("member \(i)", into: &out)
        }
        #expect(strings <= 24)
        let chunk: [UInt8] = Array(0..<30)
        let bytes = reallocations(20_000) { out, _ in
            Base64.encode(chunk, into: &out)
        }
        #expect(bytes <= 24)
    }

    @Test func anObjectOf80kStringMembersIsWrittenWhole() throws {
        var object = ValueObject()
        for i in 0..<80_000 { object["k\(i)"] = .string("value \(i) \"quoted\"") }
        var out: [UInt8] = []
        try Value.object(object).writeJSON(into: &out)
        let back = try Value(json: String(decoding: out, as: UTF8.self))
        #expect(back == .object(object))
    }
}
