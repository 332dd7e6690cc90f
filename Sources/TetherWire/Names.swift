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
/// control characters (U+0000–U+001F, U+007F), so that a name is safe to
/// print in a log line or a terminal.
public enum StateName {
    /// Throws org.varlink.service.InvalidParameter (empty, control
    /// characters) or io.tether.LimitExceeded (too long).
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
        let control = name.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            for i in 0..<bytes.count where bytes[i] < 0x20 || bytes[i] == 0x7F { return i }
            return nil
        } ?? name.utf8.firstIndex(where: { $0 < 0x20 || $0 == 0x7F }).map { name.utf8.distance(from: name.utf8.startIndex, to: $0) }
        if let at = control {
            throw .invalidParameter(parameter, "a state name cannot hold control characters (one at byte \(at))")
        }
    }

    /// Whether `name` starts with `prefix`, byte for byte.
    public static func has(_ name: String, prefix: String) -> Bool {
        name.utf8.starts(with: prefix.utf8)
    }
}
