// Names.swift — the name rules of Varlink (interfaces, members, fields) and of Tether's states.

/// Varlink's name grammar (varlink.org, "Interface Definition"), shared by
/// the IDL parser and by the checks on calls and replies. Each check
/// returns nil for a valid name, or what is wrong with it.
enum Names {
    private static func isLower(_ b: UInt8) -> Bool { b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z") }
    private static func isUpper(_ b: UInt8) -> Bool { b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") }
    private static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    /// Runs `check` on the name's UTF-8 without copying it (every call
    /// checks its method name, so this is on the daemon's hot path).
    private static func utf8<R>(_ name: String, _ check: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        var name = name
        return name.withUTF8(check)
    }

    /// interface_name: `[a-z]+ ("." [a-z0-9]+ ("-" [a-z0-9]+)*)+`, or the
    /// same with a first label "xn--" [a-z0-9]+ (an IDNA label).
    static func interfaceNameProblem(_ name: String) -> String? {
        utf8(name, interfaceNameProblem)
    }

    static func interfaceNameProblem(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard !bytes.isEmpty else { return "an interface name cannot be empty" }
        var i = 0
        if bytes.starts(with: "xn--".utf8) {
            i = 4
            let start = i
            while i < bytes.count, isLower(bytes[i]) || isDigit(bytes[i]) { i += 1 }
            if i == start { return "\"xn--\" must be followed by letters or digits" }
        } else {
            while i < bytes.count, isLower(bytes[i]) { i += 1 }
            if i == 0 { return "an interface name starts with a lowercase letter (reverse domain: \"org.example.service\")" }
        }
        var labels = 1
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: ".") else {
                return labels == 1
                    ? "the first label of an interface name has lowercase letters only, then \".\""
                    : "an interface name has lowercase letters, digits, single \"-\" inside labels and \".\" between them"
            }
            i += 1
            var atLabelStart = true
            while i < bytes.count, bytes[i] != UInt8(ascii: ".") {
                let b = bytes[i]
                if b == UInt8(ascii: "-") {
                    if atLabelStart || i + 1 == bytes.count || bytes[i + 1] == UInt8(ascii: ".") || bytes[i + 1] == UInt8(ascii: "-") {
                        return "a \"-\" in an interface name must stand between letters or digits"
                    }
                    atLabelStart = true
                } else if isLower(b) || isDigit(b) {
                    atLabelStart = false
                } else {
                    return "an interface name has lowercase letters, digits, single \"-\" inside labels and \".\" between them"
                }
                i += 1
            }
            if atLabelStart { return "an interface name cannot have an empty label" }
            labels += 1
        }
        if labels < 2 { return "an interface name has at least two labels (reverse domain: \"org.example.service\")" }
        return nil
    }

    /// name (of a type, method or error): `[A-Z][A-Za-z0-9]*`.
    static func memberNameProblem(_ name: String) -> String? {
        utf8(name, memberNameProblem)
    }

    static func memberNameProblem(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let first = bytes.first else { return "a name cannot be empty" }
        guard isUpper(first) else { return "a type, method or error name starts with an uppercase letter" }
        guard bytes.dropFirst().allSatisfy({ isUpper($0) || isLower($0) || isDigit($0) }) else {
            return "a type, method or error name has letters and digits only"
        }
        return nil
    }

    /// field_name: `[A-Za-z](_?[A-Za-z0-9])*` (the grammar of varlink.org;
    /// its PEG is stricter, lowercase only, and our interface keeps to it).
    static func fieldNameProblem(_ name: String) -> String? {
        utf8(name) { bytes in
            guard let first = bytes.first else { return "a field name cannot be empty" }
            guard isUpper(first) || isLower(first) else { return "a field name starts with a letter" }
            var afterUnderscore = false
            for b in bytes.dropFirst() {
                if b == UInt8(ascii: "_") {
                    if afterUnderscore { return "a field name cannot have two \"_\" in a row" }
                    afterUnderscore = true
                } else if isUpper(b) || isLower(b) || isDigit(b) {
                    afterUnderscore = false
                } else {
                    return "a field name has letters, digits and single \"_\" only"
                }
            }
            if afterUnderscore { return "a field name cannot end with \"_\"" }
            return nil
        }
    }

    /// "interface.Member": a valid interface name, a dot, a valid member name.
    static func qualifiedMemberProblem(_ name: String) -> String? {
        utf8(name) { bytes in
            guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")) else {
                return "expected \"interface.Name\", such as \"io.tether.Get\""
            }
            if let problem = interfaceNameProblem(UnsafeBufferPointer(rebasing: bytes[..<dot])) { return problem }
            if let problem = memberNameProblem(UnsafeBufferPointer(rebasing: bytes[(dot + 1)...])) { return problem }
            return nil
        }
    }
}

/// Tether's state names: 1 to `Limits.maxNameLength` bytes of UTF-8 without
/// the characters that change how a listing of names reads, so that a name
/// is safe to print in a log line or a terminal (`tetherctl list`): control
/// characters (C0 U+0000–U+001F, U+007F, and C1 U+0080–U+009F, which some
/// terminals obey), the line and paragraph separators U+2028 and U+2029,
/// and the invisible bidirectional formatting characters (U+061C, U+200E,
/// U+200F, the embeddings and overrides U+202A–U+202E, the isolates
/// U+2066–U+2069), with which a name displays as another one reversed.
public enum StateName {
    /// Throws org.varlink.service.InvalidParameter (empty, a character
    /// above) or io.tether.LimitExceeded (too long).
    public static func check(_ name: String, parameter: String, limits: Limits = .defaults) throws(VarlinkError) {
        let count = name.utf8.count
        if count == 0 {
            throw .invalidParameter(parameter, "a state name cannot be empty")
        }
        if count > limits.maxNameLength {
            throw .limitExceeded(.nameLength, maximum: limits.maxNameLength, actual: count,
                                 "\(parameter): a state name has at most \(limits.maxNameLength) bytes; this one has \(count)")
        }
        // Over the bytes themselves (a native string's are contiguous):
        // `utf8.firstIndex(where:)` stepped a String index per byte, ~80
        // instructions for a short name, twice per Set in tetherd.
        let refused = name.utf8.withContiguousStorageIfAvailable(firstRefused)
            ?? Array(name.utf8).withUnsafeBufferPointer(firstRefused)
        if case let (at, what)? = refused {
            throw .invalidParameter(parameter, "a state name cannot hold \(what.rawValue) (one at byte \(at))")
        }
    }

    enum Refused: String {
        case control = "control characters"
        case separator = "line or paragraph separators"
        case bidirectional = "bidirectional formatting characters"
    }

    /// The byte offset and kind of the first character `check` refuses.
    /// The bytes are valid UTF-8 (a `String`'s), so a lead byte has its
    /// continuation bytes after it; ASCII costs two compares a byte.
    static func firstRefused(_ bytes: UnsafeBufferPointer<UInt8>) -> (Int, Refused)? {
        let n = bytes.count
        var i = 0
        while i < n {
            let b = bytes[i]
            if b < 0x80 {
                if b < 0x20 || b == 0x7F { return (i, .control) }
            } else if b == 0xC2 {
                if bytes[i + 1] < 0xA0 { return (i, .control) }                  // U+0080–U+009F
            } else if b == 0xD8 {
                if bytes[i + 1] == 0x9C { return (i, .bidirectional) }           // U+061C
            } else if b == 0xE2 {
                let b1 = bytes[i + 1], b2 = bytes[i + 2]
                if b1 == 0x80 {
                    switch b2 {
                    case 0xA8, 0xA9: return (i, .separator)                      // U+2028, U+2029
                    case 0x8E, 0x8F, 0xAA...0xAE: return (i, .bidirectional)     // U+200E/F, U+202A–E
                    default: break
                    }
                } else if b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9 {
                    return (i, .bidirectional)                                   // U+2066–U+2069
                }
            }
            i += 1
        }
        return nil
    }

    /// Whether `name` starts with `prefix`, byte for byte.
    public static func has(_ name: String, prefix: String) -> Bool {
        name.utf8.starts(with: prefix.utf8)
    }
}
