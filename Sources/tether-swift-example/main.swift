// The SwiftUI state model, in a Swift program on Linux: `swift run tether-swift-example`.
//
// A profile editor: a state holding a Codable struct, a binding of one of
// its members handed to a "child", a computed greeting, an observer of one
// field, an effect that renders, and a transaction. Every callback here
// runs on the runtime's loop thread; `flush()` waits for them (never sleep).
// Then Swift's own ways in: changes as an AsyncSequence, Observation's
// withObservationTracking, and @Shared(.tether("key")) kept by tetherd
// (with a daemon from `make run`, or the default when none answers).
import Observation
import TetherRuntime
import TetherSharing

struct Profile: Codable {
    var name: String
    var age: Int
}

/// A child "view" that edits only what it is handed: SwiftUI's `@Binding`.
struct NameField {
    @Binding var name: String
    func type(_ text: String) { name = text }
}

let rt = try Runtime()                                   // its own loop thread
let profile = rt.state(Profile(name: "Ada", age: 36))    // @State var profile
let field = NameField(name: profile.binding(\.name))     // $profile.name
let greeting = rt.computed { "Hello, \(profile.value.name) (\(profile.value.age))" }

// onChange(of: profile.name): old and new value, and what caused it.
let nameWatch = profile.observe(\.name) { change in
    print("name: \(change.old ?? "-") -> \(change.new ?? "-")  [revision \(change.revision), \(change.transaction?.tag ?? "no transaction")]")
}
// A view's body: re-run when what it read changes.
let render = rt.effect { print("render: \(greeting.value)") }
try rt.flush()

field.type("Grace")                                      // through the binding
try rt.flush()

try rt.transaction(tag: "birthday") {                    // one revision, observed once
    profile.value.age += 1
    profile.value.name = "Grace Hopper"
}
try rt.flush()

// withObservationTracking: fires once, on the first change of what was read.
let age = try rt.withObservationTracking({ profile.value.age }, onChange: { print("age changed (tracked once)") })
print("tracked read: age \(age)")
profile.value.age = 80
try rt.flush()

_ = (nameWatch, render)                                  // keep them until here

// for await: the current name first, then the latest after each change
// (a slow loop skips to the newest value: when the write below comes before
// the loop took the first one, it sees only "Ada Lovelace"; the loop ends
// when the task is cancelled or the state freed).
let names = Task {
    for await name in profile.changes(\.name) {
        print("changes: name is \(name)")
        if name == "Ada Lovelace" { break }
    }
}
try rt.flush()
profile.value.name = "Ada Lovelace"
await names.value

// Swift's Observation: an ObservableState is tracked like any @Observable.
let observed = profile.observable
withObservationTracking { _ = observed.value.age } onChange: { print("Observation: profile changed") }
profile.value.age = 81
try rt.flush()

// A value every process shares through tetherd (tetherctl get example.theme).
struct Theme: Codable { var name = "light" }
struct ThemeSwitch {
    @Shared(.tether("example.theme")) var theme = Theme()

    func toggle() {
        print(_theme.isUsingDefault ? "shared: no daemon answers; \(theme.name) is the default, kept here"
                                    : "shared: the daemon's theme is \(theme.name)")
        $theme.name.wrappedValue = theme.name == "dark" ? "light" : "dark"  // through the Binding
        print("shared: theme now \(theme.name)")
    }
}
ThemeSwitch().toggle()
