import Foundation
import Testing
@testable import TetherCore

/// ValueEncoder / ValueDecoder: Codable values in and out of Tether values.
@Suite struct ValueCodingTests {
    struct Point: Codable, Equatable { var x: Int; var y: Int }
    struct Shape: Codable, Equatable {
        var name: String
        var points: [Point]
        var tags: [String: Int]
        var note: String?
        var scale: Double
        var flags: [Bool]
    }
    enum Event: Codable, Equatable {
        case tap(x: Int, y: Int)
        case key(String)
        case idle
    }
    struct Widths: Codable, Equatable {
        var i8: Int8, i16: Int16, i32: Int32, i64: Int64, u8: UInt8, u16: UInt16, u32: UInt32, u64: UInt64
        var f: Float, u: UInt
    }

    let encoder = ValueEncoder()
    let decoder = ValueDecoder()

    func roundTrip<T: Codable & Equatable>(_ value: T) throws -> Value {
        let encoded = try encoder.encode(value)
        #expect(try decoder.decode(T.self, from: encoded) == value)
        return encoded
    }

    /// `body` must fail with a TetherError of `code` whose message has every one of `words`.
    func expectFailure(_ code: ErrorCode, _ words: [String], _ body: () throws -> Void,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("no error", sourceLocation: sourceLocation)
        } catch {
            guard let error = error as? TetherError else {
                Issue.record("not a TetherError: \(error)", sourceLocation: sourceLocation)
                return
            }
            #expect(error.code == code, sourceLocation: sourceLocation)
            for word in words {
                #expect(error.message.contains(word), "\(error.message)", sourceLocation: sourceLocation)
            }
        }
    }

    func json(_ text: String) throws -> Value {
        var t = text
        return try t.withUTF8 { try Value(json: UnsafeRawBufferPointer($0)) }
    }

    @Test func structsBecomeObjectsInEncodingOrder() throws {
        let shape = Shape(name: "tri", points: [Point(x: 0, y: 0), Point(x: 1, y: 2)], tags: ["a": 1],
                          note: nil, scale: 1.5, flags: [true, false])
        let v = try roundTrip(shape)
        guard case let .object(o) = v else { Issue.record("not an object: \(v)"); return }
        #expect(o.members.map(\.key.string) == ["name", "points", "tags", "scale", "flags"])  // nil note omitted
        #expect(v == (try json(#"{"name":"tri","points":[{"x":0,"y":0},{"x":1,"y":2}],"tags":{"a":1},"scale":1.5,"flags":[true,false]}"#)))
    }

    @Test func scalarsAndOptionals() throws {
        #expect(try roundTrip(42) == .int(42))
        #expect(try roundTrip(2.5) == .double(2.5))
        #expect(try roundTrip(true) == .bool(true))
        #expect(try roundTrip("ünï\u{1F600}") == .string("ünï\u{1F600}"))
        #expect(try roundTrip(Optional<Int>.none) == .null)
        #expect(try roundTrip([Int?.none, 3]) == .array([.null, .int(3)]))
        #expect(try decoder.decode(Double.self, from: .int(3)) == 3.0)  // an int reads as a double
        #expect(try decoder.decode(Int.self, from: .double(4.0)) == 4)  // a whole double reads as an int
    }

    @Test func enumsWithAssociatedValues() throws {
        for event in [Event.tap(x: 1, y: 2), .key("q"), .idle] { _ = try roundTrip(event) }
    }

    @Test func allIntegerWidthsAndTheirLimits() throws {
        let w = Widths(i8: -128, i16: .min, i32: .max, i64: .min, u8: 255, u16: .max, u32: .max,
                       u64: UInt64(Int64.max), f: 0.5, u: 7)
        _ = try roundTrip(w)
        expectFailure(.outOfRange, ["does not fit"]) { _ = try encoder.encode(UInt64.max) }
        let big = try json(#"{"x":300}"#)
        expectFailure(.outOfRange, ["300 does not fit UInt8", "/x"]) { _ = try decoder.decode([String: UInt8].self, from: big) }
        #expect(throws: TetherError.self) { try decoder.decode(Int.self, from: .double(1.5)) }
        #expect(throws: TetherError.self) { try decoder.decode(Int8.self, from: .int(-129)) }
    }

    @Test func nonFiniteDoublesAreKept() throws {
        let v = try encoder.encode([Double.infinity, -Double.infinity])
        #expect(v == .array([.double(.infinity), .double(-.infinity)]))
        let nan = try decoder.decode(Double.self, from: encoder.encode(Double.nan))
        #expect(nan.isNaN)
    }

    @Test func errorsNameThePlace() throws {
        let bad = try json(#"{"name":"tri","points":[{"x":0,"y":0},{"x":"one","y":2}],"tags":{},"scale":1,"flags":[]}"#)
        expectFailure(.wrongType, ["/points/1/x", "found a string"]) { _ = try decoder.decode(Shape.self, from: bad) }
        let partial = try json(#"{"x":1}"#)
        expectFailure(.notFound, ["\"y\""]) { _ = try decoder.decode(Point.self, from: partial) }
        #expect(throws: TetherError.self) { try decoder.decode(Point.self, from: .array([])) }
        #expect(throws: TetherError.self) { try decoder.decode([Int].self, from: .int(1)) }
    }

    /// Hand-written Codable with nested and unkeyed containers and a superEncoder.
    class Base: Codable {
        var id: Int
        init(id: Int) { self.id = id }
    }
    final class Derived: Base, Equatable {
        var parts: [[Int]]
        var meta: (String, Int)
        init(id: Int, parts: [[Int]], meta: (String, Int)) {
            self.parts = parts
            self.meta = meta
            super.init(id: id)
        }
        enum Keys: String, CodingKey { case parts, meta }
        enum MetaKeys: String, CodingKey { case label, weight }
        required init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            var outer = try c.nestedUnkeyedContainer(forKey: .parts)
            var parts: [[Int]] = []
            while !outer.isAtEnd {
                var inner = try outer.nestedUnkeyedContainer()
                var row: [Int] = []
                while !inner.isAtEnd { row.append(try inner.decode(Int.self)) }
                parts.append(row)
            }
            self.parts = parts
            let m = try c.nestedContainer(keyedBy: MetaKeys.self, forKey: .meta)
            meta = (try m.decode(String.self, forKey: .label), try m.decode(Int.self, forKey: .weight))
            try super.init(from: c.superDecoder())
        }
        override func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            var outer = c.nestedUnkeyedContainer(forKey: .parts)
            for row in parts {
                var inner = outer.nestedUnkeyedContainer()
                for x in row { try inner.encode(x) }
            }
            var m = c.nestedContainer(keyedBy: MetaKeys.self, forKey: .meta)
            try m.encode(meta.0, forKey: .label)
            try m.encode(meta.1, forKey: .weight)
            try super.encode(to: c.superEncoder())
        }
        static func == (a: Derived, b: Derived) -> Bool {
            a.id == b.id && a.parts == b.parts && a.meta == b.meta
        }
    }

    @Test func nestedContainersAndSuperEncoder() throws {
        let d = Derived(id: 9, parts: [[1, 2], [], [3]], meta: ("w", 4))
        let v = try roundTrip(d)
        #expect(v == (try json(#"{"parts":[[1,2],[],[3]],"meta":{"label":"w","weight":4},"super":{"id":9}}"#)))
    }

    @Test func valueAndBytesInsideCodableTypes() throws {
        struct Envelope: Codable, Equatable { var payload: Value; var blob: Bytes }
        let e = Envelope(payload: .array([.int(1), .string("x"), .null]), blob: Bytes([0, 255, 7]))
        let v = try roundTrip(e)
        #expect(v == .object(ValueObject(["payload": .array([.int(1), .string("x"), .null]), "blob": .bytes([0, 255, 7])])))
        // Bytes also read from base64 text, as other coders write them.
        #expect(try decoder.decode(Bytes.self, from: .string("AP8H")) == Bytes([0, 255, 7]))
        #expect(throws: TetherError.self) { try decoder.decode(Bytes.self, from: .string("%%%")) }
    }

    /// The same types through Foundation's JSON coders agree with ours.
    @Test func agreesWithFoundationJSON() throws {
        // scale 2.5, not 2: JSON text writes a whole double as "2", which
        // parses back as an int; ValueEncoder keeps it a double (the type
        // lock of a state must not flip between int and double).
        let shape = Shape(name: "sq", points: [Point(x: 3, y: 4)], tags: [:], note: "n", scale: 2.5, flags: [])
        let viaFoundation = try JSONEncoder().encode(shape)
        let parsed = try viaFoundation.withUnsafeBytes { try Value(json: $0) }
        #expect(parsed == (try encoder.encode(shape)))
        let value = Value.array([.int(1), .double(2.5), .bool(false), .null, .string("s")])
        let text = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(Value.self, from: text) == value)
    }

    @Test func emptyStructIsEmptyObject() throws {
        struct Empty: Codable, Equatable {}
        #expect(try roundTrip(Empty()) == .object(ValueObject()))
    }
}
