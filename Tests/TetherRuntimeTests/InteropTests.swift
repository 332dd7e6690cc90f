import CTether
import Testing
@testable import TetherRuntime

// The C face (the Tether target) is linked in but not imported: its
// functions are called through their C declarations (CTether), as a C
// library in the same process would call them.

/// Swift and C share one runtime in one process: handles cross freely.
@Suite struct InteropTests {
    @Test func aSwiftStateIsACState() throws {
        let rt = try Runtime()
        let count = rt.state(41)
        let c = tether_state_t(id: count.handle)
        var v: Int64 = 0
        #expect(tether_state_get_int(c, &v) == 0)
        #expect(v == 41)
        #expect(tether_state_set_int(c, 42) == 0)
        #expect(count.value == 42)
    }

    @Test func aCStateWrappedForSwift() throws {
        var crt = tether_runtime_t()
        #expect(tether_runtime_new(nil, &crt) == 0)
        let rt = Runtime(unowned: crt.id)
        #expect(rt.handle == crt.id)
        var cs = tether_state_t()
        #expect(tether_state_new_json(crt, "{\"name\":\"Ada\",\"age\":36}", -1, 0, &cs) == 0)
        struct Person: Codable, Equatable { var name: String; var age: Int }
        let person = State<Person>(unowned: cs.id)
        #expect(person.value == Person(name: "Ada", age: 36))
        person.binding(\.age).wrappedValue = 37
        var age: Int64 = 0
        var value: OpaquePointer?
        #expect(tether_state_get_path(cs, "/age", &value) == 0)
        #expect(tether_value_get_int(value, &age) == 0)
        tether_value_free(value)
        #expect(age == 37)
        let seen = Recorder<Int>()
        let token = person.observe(\.age, .sync) { seen.append($0.new ?? -1) }
        #expect(tether_state_set_path_json(cs, "/age", "38", -1) == 0)
        #expect(seen.all == [38])
        token.cancel()
        #expect(tether_runtime_free(crt) == 0)
        #expect(throws: TetherError.self) { try person.get() }
    }

    @Test func errorsKeepTheirCodes() throws {
        let rt = try Runtime()
        let s = rt.state("text")
        var v: Int64 = 0
        #expect(tether_state_get_int(tether_state_t(id: s.handle), &v) == TETHER_ETYPE.rawValue)
        #expect(String(cString: tether_last_error()).contains("not an int"))
        #expect(ErrorCode.wrongType.rawValue == TETHER_ETYPE.rawValue)
    }
}
