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
        var tokens: [String] = []
        var failure: (offset: Int, reason: String)?
        var text = text
        text.withUTF8 { bytes in
            guard let first = bytes.first else { return }
            guard first == UInt8(ascii: "/") else {
                failure = (0, "must be empty or start with \"/\"")
                return
            }
            var token: [UInt8] = []
            var i = 1
            while i <= bytes.count {
                if i == bytes.count || bytes[i] == UInt8(ascii: "/") {
                    tokens.append(String(decoding: token, as: UTF8.self))
                    token.removeAll(keepingCapacity: true)
                    i += 1
                    continue
                }
                let b = bytes[i]
                if b == UInt8(ascii: "~") {
                    let next: UInt8? = i + 1 < bytes.count ? bytes[i + 1] : nil
                    switch next {
                    case UInt8(ascii: "0"): token.append(UInt8(ascii: "~"))
                    case UInt8(ascii: "1"): token.append(UInt8(ascii: "/"))
                    default:
                        failure = (i, "\"~\" at byte \(i) must be followed by 0 or 1 (write \"~0\" for \"~\" and \"~1\" for \"/\")")
                        return
                    }
                    i += 2
                } else {
                    token.append(b)
                    i += 1
                }
            }
        }
        if let failure {
            throw TetherError(.badPath, "invalid JSON pointer \(jsonQuoted(text)): \(failure.reason)")
        }
        self.tokens = tokens
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
