import Foundation
import Testing
@testable import TetherRuntime

/// Runtime.graph(): the DOT text from Swift, from inside callbacks, and
/// names that would break DOT if written as they are.
@Suite struct GraphPictureTests {
    @Test func namesKindsAndPointers() throws {
        let rt = try Runtime()
        let user = rt.state(["name": "Ada", "city": "London"])
        try user.describe(name: "user")
        let count = rt.state(1)
        let namePath = try JSONPointer(parsing: "/name")
        let name = rt.computed { () -> String in (try? user.get(String.self, at: namePath)) ?? "" }
        let seen = Recorder<Int>()
        let effect = rt.effect(sync: true) {
            _ = name.value
            seen.append(count.value)
        }
        defer { effect.cancel() }
        let dot = try rt.graph()
        #expect(dot.hasPrefix("digraph tether {\n"))
        #expect(dot.hasSuffix("}\n"))
        #expect(dot.contains("[label=\"user\", shape=box"))
        #expect(dot.contains("tether_kind=\"computed\""))
        #expect(dot.contains("tether_kind=\"effect\""))
        #expect(dot.contains("label=\"/name\", tether_pointer=\"/name\", tether_edge=\"reads\""))
        // The unnamed state is named by kind and handle.
        #expect(dot.contains("[label=\"state 0x"))
        // Inside a batch the write has marked its readers, and nothing has
        // re-run them yet: the picture shows them stale.
        let during = try rt.batch { () throws -> String in
            user.value = ["name": "Grace", "city": "NYC"]
            return try rt.graph()
        }
        #expect(during.contains("tether_marks=\"stale"))
        #expect(during.contains("color=\"red\""))
        // After it, the effect ran and everything is up to date again.
        #expect(try rt.graph().contains("tether_marks") == false)
        #expect(seen.count == 2)
    }

    @Test func fromInsideCallbacks() throws {
        let rt = try Runtime()
        let n = rt.state(0)
        let drawn = Recorder<Bool>()
        let doubled = rt.computed { () -> Int in
            drawn.append((try? rt.graph())?.hasSuffix("}\n") ?? false)
            return n.value * 2
        }
        let effect = rt.effect(sync: true) {
            _ = doubled.value
            drawn.append((try? rt.graph())?.contains("tether_kind=\"effect\"") ?? false)
        }
        defer { effect.cancel() }
        n.value = 1
        n.value = 2
        try rt.flush()
        #expect(drawn.count == 6)
        #expect(drawn.all.allSatisfy { $0 })
    }

    @Test func hostileNamesAreEscaped() throws {
        let rt = try Runtime()
        let s = rt.state(0)
        try s.describe(name: "a \"quoted\" \\ name\nwith a line\u{1}")
        let dot = try rt.graph()
        #expect(dot.contains(#"label="a \"quoted\" \\ name\nwith a line\\u{1}""#))
        // Every line of the text is one statement: the newline did not leak.
        for line in dot.split(separator: "\n") where line.contains("tether_kind=\"state\"") {
            #expect(line.hasSuffix("];"))
        }
    }

    @Test func staleRuntime() throws {
        let rt = try Runtime()
        rt.free()
        #expect(throws: TetherError.self) { try rt.graph() }
    }
}
