/// What `@Shared(.tether("name"))` shares: the daemon's state `name`, at
/// `address` (nil: `$TETHER_ADDRESS` or the default socket, as
/// `Runtime.connect` says).
public struct TetherKey<Value: Codable>: Sendable, Hashable {
    public let name: String
    public let address: String?

    public init(_ name: String, address: String? = nil) {
        self.name = name
        self.address = address
    }

    /// swift-sharing's spelling: `@Shared(.tether("settings")) var settings = Settings()`.
    public static func tether(_ name: String, address: String? = nil) -> TetherKey<Value> {
        TetherKey(name, address: address)
    }
}
