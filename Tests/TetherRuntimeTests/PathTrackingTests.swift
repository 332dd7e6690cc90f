import Testing
@testable import TetherRuntime

/// Tracking by path from Swift: a computed or effect that reads a member
/// through a key-path binding (or `State.get(_:at:)`) depends on that member
/// only, as with Swift Observation's per-property tracking.
@Suite struct PathTrackingTests {
    @Test func aComputedOfTheNameIsNotRerunByTheAge() throws {
        let rt = try Runtime()
        let user = rt.state(ada)
        let name = user.binding(\.name)
        let runs = Recorder<Int>()
        let greeting = rt.computed { () -> String in
            runs.append(1)
            return "Hello, \(name.wrappedValue)"
        }
        #expect(greeting.value == "Hello, Ada")
        user.binding(\.age).wrappedValue = 37          // a sibling, through its binding
        try user.set(38, at: JSONPointer(parsing: "/age"))  // and by path
        user.binding(\.address.city).wrappedValue = "Paris"
        #expect(greeting.value == "Hello, Ada")
        #expect(runs.count == 1)
        name.wrappedValue = "Grace"                    // the member itself
        #expect(greeting.value == "Hello, Grace")
        #expect(runs.count == 2)
        var changed = user.value                       // the whole value
        changed.name = "Ida"
        user.value = changed
        #expect(greeting.value == "Hello, Ida")
        #expect(runs.count == 3)
        changed.age = 99                               // whole, name unchanged:
        user.value = changed                           // re-run, cut off after
        let downstream = Recorder<Int>()
        let shout = rt.computed { () -> String in
            downstream.append(1)
            return greeting.value.uppercased()
        }
        #expect(shout.value == "HELLO, IDA")
        changed.age = 100
        user.value = changed
        #expect(shout.value == "HELLO, IDA")
        #expect(runs.count == 5)
        #expect(downstream.count == 1)
    }

    @Test func nestedMembersAndElements() throws {
        let rt = try Runtime()
        let user = rt.state(ada)
        let city = user.binding(\.address.city)
        let firstTag = user.binding(\.tags)[0]
        let cityRuns = Recorder<Int>(), tagRuns = Recorder<Int>()
        let c = rt.computed { () -> String in cityRuns.append(1); return city.wrappedValue }
        let t = rt.computed { () -> String in tagRuns.append(1); return firstTag.wrappedValue }
        #expect(c.value == "London" && t.value == "math")
        user.binding(\.address.zip).wrappedValue = "NW1"  // beside city
        user.binding(\.name).wrappedValue = "Grace"
        #expect(c.value == "London" && t.value == "math")
        #expect(cityRuns.count == 1 && tagRuns.count == 1)
        user.binding(\.address).wrappedValue = Address(city: "Paris", zip: "75")  // an ancestor
        #expect(c.value == "Paris")
        #expect(cityRuns.count == 2 && tagRuns.count == 1)
        // An element of the array: every index of it (an insert or removal
        // would shift them).
        user.binding(\.tags).wrappedValue = ["logic", "math"]
        #expect(t.value == "logic")
        #expect(tagRuns.count == 2)
        try user.remove(at: JSONPointer(parsing: "/tags/0"))
        #expect(t.value == "math")
        #expect(tagRuns.count == 3)
        #expect(cityRuns.count == 2)
    }

    @Test func stateGetAtAPathIsAPathRead() throws {
        let rt = try Runtime()
        let user = rt.state(ada)
        let runs = Recorder<Int>()
        let zip = rt.computed { () -> String in
            runs.append(1)
            return (try? user.get(String.self, at: JSONPointer(parsing: "/address/zip"))) ?? "?"
        }
        #expect(zip.value == "W1")
        user.binding(\.address.city).wrappedValue = "Leeds"
        #expect(zip.value == "W1")
        #expect(runs.count == 1)
        user.binding(\.address.zip).wrappedValue = "LS1"
        #expect(zip.value == "LS1")
        #expect(runs.count == 2)
    }

    @Test func effectsAndTransactionsFollowTheSameRule() throws {
        let rt = try Runtime()
        let user = rt.state(ada)
        let name = user.binding(\.name)
        let seen = Recorder<String>()
        let effect = rt.effect { seen.append(name.wrappedValue) }
        try rt.flush()
        try rt.transaction(tag: "birthday") {
            user.binding(\.age).wrappedValue = 37
            user.binding(\.tags).wrappedValue = ["math", "poetry"]
        }
        try rt.flush()
        #expect(seen.all == ["Ada"])
        try rt.transaction(tag: "rename") {
            user.binding(\.age).wrappedValue = 38
            name.wrappedValue = "Augusta"
        }
        try rt.flush()
        #expect(seen.all == ["Ada", "Augusta"])
        _ = effect
    }
}
