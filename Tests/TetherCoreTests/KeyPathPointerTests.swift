import Testing
@testable import TetherCore

@Suite struct KeyPathPointerTests {
    struct Address: Codable { var city: String; var zip: Int16 }
    struct User: Codable {
        var flag: Bool          // padding after it
        var name: String
        var address: Address
        var nick: String?
        var tags: [String]
        var fullName: String { name + "!" }
    }
    struct Pair<T: Codable>: Codable { var first: T; var second: T }
    struct Wrapper: Codable { var inner: Inner }
    struct Inner: Codable { var value: Int }
    final class Box: Codable { var x = 1 }
    struct Renamed: Codable, TetherPathMapping {
        var userName: String
        enum CodingKeys: String, CodingKey { case userName = "user_name" }
        static func tetherPointer(for keyPath: PartialKeyPath<Renamed>) -> JSONPointer? {
            keyPath == \Renamed.userName ? JSONPointer(tokens: ["user_name"]) : nil
        }
    }

    @Test func storedPropertiesMapToMembers() {
        #expect(jsonPointer(for: \User.flag)?.description == "/flag")
        #expect(jsonPointer(for: \User.name)?.description == "/name")
        #expect(jsonPointer(for: \User.address)?.description == "/address")
        #expect(jsonPointer(for: \User.address.city)?.description == "/address/city")
        #expect(jsonPointer(for: \User.address.zip)?.description == "/address/zip")
        #expect(jsonPointer(for: \User.nick)?.description == "/nick")
        #expect(jsonPointer(for: \User.tags)?.description == "/tags")
        #expect(jsonPointer(for: \Pair<Int>.second)?.description == "/second")
        #expect(jsonPointer(for: \Pair<String>.second)?.description == "/second")
    }

    @Test func sameOffsetIsResolvedByType() {
        #expect(jsonPointer(for: \Wrapper.inner)?.description == "/inner")
        #expect(jsonPointer(for: \Wrapper.inner.value)?.description == "/inner/value")
    }

    @Test func nonMembersAreNil() {
        #expect(jsonPointer(for: \User.fullName) == nil)       // computed
        #expect(jsonPointer(for: \Box.x) == nil)               // class root
        #expect(jsonPointer(for: \User.tags[0]) == nil)        // subscript
        #expect(jsonPointer(for: \User.nick?.count) == nil)    // optional chaining
        #expect(jsonPointer(for: \User.self) == nil)           // identity: no member
    }

    @Test func mappingHookWins() {
        #expect(jsonPointer(for: \Renamed.userName)?.description == "/user_name")
    }

    @Test func pointerIsWhereTheEncoderPutsTheMember() throws {
        let user = User(flag: true, name: "Ada", address: Address(city: "London", zip: 1), nick: "a", tags: ["x"])
        let encoded = try ValueEncoder().encode(user)
        #expect(try encoded.value(at: jsonPointer(for: \User.address.city)!) == .string("London"))
        #expect(try encoded.value(at: jsonPointer(for: \User.address.zip)!) == .int(1))
        #expect(try encoded.value(at: jsonPointer(for: \User.tags)!) == .array([.string("x")]))
        let renamed = try ValueEncoder().encode(Renamed(userName: "u"))
        #expect(try renamed.value(at: jsonPointer(for: \Renamed.userName)!) == .string("u"))
    }

    @Test func cacheGivesTheSameAnswer() {
        for _ in 0..<3 { #expect(jsonPointer(for: \User.address.city)?.description == "/address/city") }
    }
}
