// JSONPointer.swift — RFC 6901 JSON Pointers, held as unescaped tokens.

/// An RFC 6901 JSON Pointer, held as its unescaped reference tokens so that
/// lookups and prefix tests never re-parse text.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    public let tokens: [String]

    /// "": the whole document.
    public static let root = JSONPointer(tokens: [])

    public init(tokens: [String]) {
        self.tokens = tokens
    }

    /// "" is the root; anything else must start with "/". "~0" is "~" and
    /// "~1" is "/"; any other "~" is an error (RFC 6901 section 3).
    public init(parsing text: String) throws(TetherError) {
        var text = text
        let parsed = text.withUTF8 { JSONPointer.parse(UnsafeRawBufferPointer($0)) }
        self = try parsed.get()
    }

    /// `init(parsing:)` from UTF-8 bytes (a C string's), without making a
    /// `String` of the whole text first.
    public init(parsingUTF8 bytes: UnsafeRawBufferPointer) throws(TetherError) {
        self = try JSONPointer.parse(bytes).get()
    }

    /// Tokens are sliced straight out of the text; only a token with an
    /// escape is copied to be unescaped (profiled: a byte array per token
    /// and a String per text cost three allocations per path read).
    private static func parse(_ bytes: UnsafeRawBufferPointer) -> Result<JSONPointer, TetherError> {
        guard let first = bytes.first else { return .success(.root) }
        func failure(_ reason: String) -> Result<JSONPointer, TetherError> {
            let text = String(decoding: bytes, as: UTF8.self)
            return .failure(TetherError(.badPath, "invalid JSON pointer \(jsonQuoted(text)): \(reason)"))
        }
        guard first == UInt8(ascii: "/") else { return failure("must be empty or start with \"/\"") }
        var tokens: [String] = []
        var start = 1
        var escaped = false
        var i = 1
        while i <= bytes.count {
            if i == bytes.count || bytes[i] == UInt8(ascii: "/") {
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
                tokens.append(escaped ? unescape(raw) : String(decoding: raw, as: UTF8.self))
                start = i + 1
                escaped = false
            } else if bytes[i] == UInt8(ascii: "~") {
                let next: UInt8? = i + 1 < bytes.count ? bytes[i + 1] : nil
                guard next == UInt8(ascii: "0") || next == UInt8(ascii: "1") else {
                    return failure("\"~\" at byte \(i) must be followed by 0 or 1 (write \"~0\" for \"~\" and \"~1\" for \"/\")")
                }
                escaped = true
                i += 1
            }
            i += 1
        }
        return .success(JSONPointer(tokens: tokens))
    }

    /// A token's text with "~1" read as "/" and "~0" as "~" (validated by `parse`).
    private static func unescape(_ raw: UnsafeRawBufferPointer) -> String {
        var token: [UInt8] = []
        token.reserveCapacity(raw.count)
        var i = 0
        while i < raw.count {
            if raw[i] == UInt8(ascii: "~") {
                token.append(raw[i + 1] == UInt8(ascii: "1") ? UInt8(ascii: "/") : UInt8(ascii: "~"))
                i += 2
            } else {
                token.append(raw[i])
                i += 1
            }
        }
        return String(decoding: token, as: UTF8.self)
    }

    /// The pointer text, escaped so that `init(parsing:)` gives this pointer back.
    public var description: String { Self.text(of: tokens[...]) }

    public var isRoot: Bool { tokens.isEmpty }

    /// True when `other` is this pointer or lies below it.
    public func isPrefix(of other: JSONPointer) -> Bool {
        guard tokens.count <= other.tokens.count else { return false }
        for i in tokens.indices where tokens[i] != other.tokens[i] { return false }
        return true
    }

    /// True when a write at one can change what the other names: ancestors and
    /// descendants overlap, siblings do not.
    public func overlaps(_ other: JSONPointer) -> Bool {
        isPrefix(of: other) || other.isPrefix(of: self)
    }

    /// This pointer with one more token at the end.
    public func appending(_ token: String) -> JSONPointer {
        JSONPointer(tokens: tokens + [token])
    }

    /// The pointer to the containing value; nil for the root.
    public var parent: JSONPointer? {
        isRoot ? nil : JSONPointer(tokens: Array(tokens.dropLast()))
    }

    static func text(of tokens: ArraySlice<String>) -> String {
        var out: [UInt8] = []
        for token in tokens {
            out.append(UInt8(ascii: "/"))
            for b in token.utf8 {
                switch b {
                case UInt8(ascii: "~"): out.append(UInt8(ascii: "~")); out.append(UInt8(ascii: "0"))
                case UInt8(ascii: "/"): out.append(UInt8(ascii: "~")); out.append(UInt8(ascii: "1"))
                default: out.append(b)
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
