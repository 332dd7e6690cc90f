import Testing
@testable import TetherRuntime

@Suite struct BindingTests {
    @Test func keyPathBindingsAreJSONPaths() throws {
        let rt = try Runtime()
        let user = rt.state(ada)
        let city = user.binding(\.address.city)
        #expect(city.path == (try JSONPointer(parsing: "/address/city")))
        #expect(city.wrappedValue == "London")
        city.wrappedValue = "Paris"
        #expect(user.value.address.city == "Paris")
        // Dynamic member lookup on the whole binding, as `$user.address.zip`.
        let zip = user.binding.address.zip
        zip.wrappedValue = "75001"
        #expect(user.value.address == Address(city: "Paris", zip: "75001"))
    }

    @Test func writeThroughPathWakesOnlyThatPath() throws {
        let rt = try Runtime()
        let user = rt.state(ada)
        let names = Recorder<String>()
        let ages = Recorder<Int>()
        let a = user.observe(\.name, .sync) { names.append($0.new ?? "?") }
        let b = user.observe(\.age, .sync) { ages.append($0.new ?? -1) }
        user.binding(\.age).wrappedValue = 37
        #expect(ages.all == [37])
        #expect(names.all.isEmpty)
        user.binding(\.name).wrappedValue = "Grace"
        #expect(names.all == ["Grace"])
        a.cancel()
        b.cancel()
    }

    @Test func indexBindings() throws {
        let rt = try Runtime()
        let list = rt.state([1, 2, 3])
        let second = list.binding[1]
        #expect(second.wrappedValue == 2)
        second.wrappedValue = 20
        #expect(list.value == [1, 20, 3])
        let tenth = list.binding[10]
        #expect(throws: TetherError.self) { try tenth.get() }
    }

    @Test func customAndConstantBindings() throws {
        let backing = Recorder<Int>()
        backing.append(1)
        let custom = Binding<Int>(get: { backing.all.last! }, set: { backing.append($0 * 10) })
        custom.wrappedValue = 2
        #expect(backing.all.last == 20)
        #expect(custom.wrappedValue == 20)
        let fixed = Binding<String>.constant("x")
        #expect(fixed.wrappedValue == "x")
        do {
            try fixed.set("y")
            Issue.record("a constant binding accepted a write")
        } catch {
            #expect(error.code == .readOnly)
        }
        let reported = capturingErrors { fixed.wrappedValue = "z" }
        #expect(reported.map(\.code) == [.readOnly])
        #expect(fixed.path == nil && fixed.stateHandle == nil)
    }

    @Test func bindingPropertyWrapperAndTetherState() throws {
        let rt = try Runtime()
        struct Child {
            @Binding var name: String
            func rename() { name = "Child-set" }
        }
        struct Parent {
            @TetherState var title: String
            init(rt: Runtime) { _title = TetherState(wrappedValue: "start", in: rt) }
        }
        let parent = Parent(rt: rt)
        let child = Child(name: parent.$title)
        child.rename()
        #expect(parent.title == "Child-set")
        parent.title = "again"
        #expect(child.name == "again")
    }

    @Test func bindingToComputedPropertyGoesThroughWholeValue() throws {
        struct Temperature: Codable {
            var celsius: Double
            var fahrenheit: Double {
                get { celsius * 9 / 5 + 32 }
                set { celsius = (newValue - 32) * 5 / 9 }
            }
        }
        let rt = try Runtime()
        let t = rt.state(Temperature(celsius: 100))
        let f = t.binding(\.fahrenheit)
        #expect(f.path == nil)
        #expect(f.wrappedValue == 212)
        f.wrappedValue = 32
        #expect(t.value.celsius == 0)
    }

    @Test func observingCustomBindingIsRefused() throws {
        let b = Binding<Int>(get: { 1 }, set: { _ in })
        #expect(throws: TetherError.self) { try b.makeObserver { _ in } }
    }

    @Test func optionalMembersReadAbsentAsNil() throws {
        struct Profile: Codable, Equatable { var name: String; var nick: String? }
        let rt = try Runtime()
        let p = rt.state(Profile(name: "Ada", nick: nil))   // encodes without "nick"
        let nick = p.binding(\.nick)
        #expect(nick.path?.description == "/nick")
        #expect(nick.wrappedValue == nil)
        nick.wrappedValue = "A."
        #expect(p.value.nick == "A.")
        nick.wrappedValue = nil
        #expect(p.value == Profile(name: "Ada", nick: nil))
        let missing = Binding<Int>(state: p.handle, path: JSONPointer(tokens: ["age"]))
        #expect(throws: TetherError.self) { try missing.get() }  // not optional: still an error
    }
}
