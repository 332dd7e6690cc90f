import Synchronization
@testable import TetherRuntime

/// Collects what callbacks saw, from whichever thread they ran on.
final class Recorder<T: Sendable>: Sendable {
    private let items = Mutex<[T]>([])
    func append(_ item: T) { items.withLock { $0.append(item) } }
    var all: [T] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
}

struct Address: Codable, Equatable, Sendable {
    var city: String
    var zip: String
}

struct User: Codable, Equatable, Sendable {
    var name: String
    var age: Int
    var address: Address
    var tags: [String]
}

let ada = User(name: "Ada", age: 36, address: Address(city: "London", zip: "W1"), tags: ["math"])

/// Captures what reaches TetherErrors.handler while `body` runs.
func capturingErrors(_ body: () throws -> Void) rethrows -> [TetherError] {
    let seen = Recorder<TetherError>()
    let previous = TetherErrors.handler
    TetherErrors.handler = { seen.append($0) }
    defer { TetherErrors.handler = previous }
    try body()
    return seen.all
}
