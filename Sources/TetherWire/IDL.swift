// IDL.swift — the Varlink interface definition language: a parser that reports line and column.

/// A type in an interface definition.
public indirect enum IDLType: Sendable, Equatable, CustomStringConvertible {
    case bool, int, float, string
    /// Any JSON value (varlink.org: "foreign untyped/raw object"; tetherd
    /// and the reference implementations accept any JSON here, systemd's
    /// sd-varlink only objects).
    case object
    /// A type defined with `type Name ...` in the same interface.
    case named(String)
    case structure([IDLField])
    case enumeration([String])
    case array(IDLType)
    /// `[string]T`: an object whose members all have type T.
    case dictionary(IDLType)
    /// `?T`: T, or null (the same as absent).
    case optional(IDLType)

    /// The type as the IDL writes it, on one line.
    public var description: String {
        switch self {
        case .bool: "bool"
        case .int: "int"
        case .float: "float"
        case .string: "string"
        case .object: "object"
        case .named(let name): name
        case .structure(let fields): "(" + fields.map { "\($0.name): \($0.type)" }.joined(separator: ", ") + ")"
        case .enumeration(let values): "(" + values.joined(separator: ", ") + ")"
        case .array(let element): "[]\(element)"
        case .dictionary(let element): "[string]\(element)"
        case .optional(let inner): "?\(inner)"
        }
    }
}

/// A field of a struct (or of a method's input or output, or an error's).
public struct IDLField: Sendable, Equatable {
    public var name: String
    public var type: IDLType
    /// The comment lines right above the field, without their "# ".
    public var doc: String

    public init(name: String, type: IDLType, doc: String = "") {
        self.name = name
        self.type = type
        self.doc = doc
    }
}

public struct IDLMethod: Sendable, Equatable {
    public var name: String
    public var input: [IDLField]
    public var output: [IDLField]
    public var doc: String
}

public struct IDLTypeAlias: Sendable, Equatable {
    public var name: String
    /// A `.structure` or an `.enumeration`.
    public var type: IDLType
    public var doc: String
}

public struct IDLErrorType: Sendable, Equatable {
    public var name: String
    public var fields: [IDLField]
    public var doc: String
}

/// A member of an interface; types, methods and errors share one namespace.
public enum IDLMember: Sendable, Equatable {
    case type(IDLTypeAlias)
    case method(IDLMethod)
    case error(IDLErrorType)

    public var name: String {
        switch self {
        case .type(let t): t.name
        case .method(let m): m.name
        case .error(let e): e.name
        }
    }

    public var doc: String {
        switch self {
        case .type(let t): t.doc
        case .method(let m): m.doc
        case .error(let e): e.doc
        }
    }
}

/// A syntax or consistency error in an interface definition, at a line and
/// column (both from 1; columns count characters).
public struct IDLError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var message: String

    public var description: String { "line \(line), column \(column): \(message)" }
}

/// A parsed Varlink interface definition (varlink.org, "Interface
/// Definition"), checked for consistency: unique member and field names,
/// named types that exist and are types.
///
/// The grammar is varlink.org's, strictly where implementations agree:
/// members start on a new line; `?`, `[]` and `[string]` come straight
/// before the type they modify, never twice `?`; names follow the name
/// rules of `Names`; `#` comments run to the end of the line, and the
/// comment lines right above a member or field are its documentation.
/// Whitespace is space, tab, CR and LF.
public struct VarlinkInterface: Sendable {
    public let name: String
    /// The comment lines right above `interface`.
    public let doc: String
    public let members: [IDLMember]
    /// The text it was parsed from, as GetInterfaceDescription returns it.
    public let text: String
    /// Members by name, so that resolving a call is not a search.
    private let methodsByName: [String: IDLMethod]
    private let typesByName: [String: IDLTypeAlias]
    private let errorsByName: [String: IDLErrorType]

    public init(parsing text: String) throws(IDLError) {
        var parser = IDLParser(Array(text.utf8))
        let parsed = try parser.parseInterface()
        name = parsed.name
        doc = parsed.doc
        members = parsed.members
        self.text = text
        var methods: [String: IDLMethod] = [:]
        var types: [String: IDLTypeAlias] = [:]
        var errors: [String: IDLErrorType] = [:]
        for member in members {
            switch member {
            case .method(let m): methods[m.name] = m
            case .type(let t): types[t.name] = t
            case .error(let e): errors[e.name] = e
            }
        }
        methodsByName = methods
        typesByName = types
        errorsByName = errors
    }

    public func member(named name: String) -> IDLMember? {
        if let m = methodsByName[name] { return .method(m) }
        if let t = typesByName[name] { return .type(t) }
        if let e = errorsByName[name] { return .error(e) }
        return nil
    }

    public func method(named name: String) -> IDLMethod? { methodsByName[name] }

    public func typeAlias(named name: String) -> IDLTypeAlias? { typesByName[name] }

    public func errorType(named name: String) -> IDLErrorType? { errorsByName[name] }

    public var methods: [IDLMethod] {
        members.compactMap { if case .method(let m) = $0 { m } else { nil } }
    }

    public var errorTypes: [IDLErrorType] {
        members.compactMap { if case .error(let e) = $0 { e } else { nil } }
    }
}

/// A single pass over the bytes; structures nest by recursion, bounded by
/// `maxNesting` so that hostile text cannot exhaust the stack.
struct IDLParser {
    private let bytes: [UInt8]
    private var pos = 0
    /// The comment lines of the block right before the next token; a blank
    /// line ends a block, so a free-standing comment documents nothing.
    private var docLines: [String] = []
    private var namedReferences: [(name: String, offset: Int)] = []
    private var depth = 0
    static let maxNesting = 64

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    struct Parsed {
        var name: String
        var doc: String
        var members: [IDLMember]
    }

    mutating func parseInterface() throws(IDLError) -> Parsed {
        skipSpace()
        let keywordAt = pos
        let keyword = readWord()
        guard keyword == "interface" else {
            throw failure(at: keywordAt, keyword.isEmpty
                ? "expected 'interface' to start the definition, found \(found(at: keywordAt))"
                : "expected 'interface' to start the definition, found '\(keyword)'")
        }
        let doc = takeDoc()
        try requireSpace(after: "interface")
        let nameAt = pos
        let name = readRun { IDLParser.isLetter($0) || IDLParser.isDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
        if name.isEmpty { throw failure(at: nameAt, "expected the interface name after 'interface', found \(found(at: nameAt))") }
        if let problem = Names.interfaceNameProblem(name) { throw failure(at: nameAt, "invalid interface name '\(name)': \(problem)") }
        try requireLineEnd(after: "the interface name")

        var members: [IDLMember] = []
        var memberOffsets: [String: Int] = [:]
        while true {
            skipSpace()
            guard pos < bytes.count else { break }
            let member = try parseMember()
            if let previous = memberOffsets[member.member.name] {
                let (line, _) = position(of: previous)
                throw failure(at: member.nameAt, "'\(member.member.name)' is defined twice (first at line \(line)); types, methods and errors share one namespace")
            }
            memberOffsets[member.member.name] = member.nameAt
            members.append(member.member)
            try requireLineEnd(after: "'\(member.member.name)'")
        }
        if members.isEmpty {
            throw failure(at: pos, "an interface needs at least one type, method or error")
        }
        for reference in namedReferences {
            guard let offset = memberOffsets[reference.name] else {
                throw failure(at: reference.offset, "unknown type '\(reference.name)': no 'type \(reference.name)' in this interface")
            }
            guard case .type = members.first(where: { $0.name == reference.name }) else {
                throw failure(at: reference.offset, "'\(reference.name)' (line \(position(of: offset).line)) is not a type: only 'type' members can be used as types")
            }
        }
        return Parsed(name: name, doc: doc, members: members)
    }

    private mutating func parseMember() throws(IDLError) -> (member: IDLMember, nameAt: Int) {
        let keywordAt = pos
        let keyword = readWord()
        let doc = takeDoc()
        switch keyword {
        case "type", "method", "error":
            break
        case "interface":
            throw failure(at: keywordAt, "a definition has one 'interface' line, at its start")
        case "":
            throw failure(at: keywordAt, "expected 'type', 'method' or 'error', found \(found(at: keywordAt))")
        default:
            throw failure(at: keywordAt, "expected 'type', 'method' or 'error', found '\(keyword)'")
        }
        try requireSpace(after: keyword)
        let nameAt = pos
        let name = readWord()
        if name.isEmpty { throw failure(at: nameAt, "expected the name of the \(keyword), found \(found(at: nameAt))") }
        if let problem = Names.memberNameProblem(name) { throw failure(at: nameAt, "invalid \(keyword) name '\(name)': \(problem)") }
        skipSpace()
        _ = takeDoc()
        switch keyword {
        case "type":
            let type = try parseFields(of: "type \(name)")
            return (.type(IDLTypeAlias(name: name, type: type, doc: doc)), nameAt)
        case "method":
            let input = try parseStruct(of: "the input of \(name)")
            skipSpace()
            guard startsWith("->") else {
                throw failure(at: pos, "expected '->' between the input and output of method \(name), found \(found(at: pos))")
            }
            pos += 2
            skipSpace()
            _ = takeDoc()
            let output = try parseStruct(of: "the output of \(name)")
            return (.method(IDLMethod(name: name, input: input, output: output, doc: doc)), nameAt)
        default:
            let fields = try parseStruct(of: "error \(name)")
            return (.error(IDLErrorType(name: name, fields: fields, doc: doc)), nameAt)
        }
    }

    /// A parenthesized list that must be a struct (a method's input or
    /// output, an error's fields).
    private mutating func parseStruct(of what: String) throws(IDLError) -> [IDLField] {
        let at = pos
        switch try parseFields(of: what) {
        case .structure(let fields): return fields
        default: throw failure(at: at, "\(what) must be a struct of 'name: type' fields, not an enum")
        }
    }

    /// `(` fields or enum values `)`: a struct when the first name is
    /// followed by ':', an enum otherwise. `()` is an empty struct.
    private mutating func parseFields(of what: String) throws(IDLError) -> IDLType {
        guard pos < bytes.count, bytes[pos] == UInt8(ascii: "(") else {
            throw failure(at: pos, "expected '(' to start \(what), found \(found(at: pos))")
        }
        depth += 1
        defer { depth -= 1 }
        guard depth <= IDLParser.maxNesting else {
            throw failure(at: pos, "structs and enums nest deeper than \(IDLParser.maxNesting) levels")
        }
        pos += 1
        skipSpace()
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ")") {
            pos += 1
            _ = takeDoc()
            return .structure([])
        }
        var fields: [IDLField] = []
        var values: [String] = []
        var isEnum: Bool?
        var seen: [String: Int] = [:]
        while true {
            let doc = takeDoc()
            let nameAt = pos
            let name = readWord()
            if name.isEmpty {
                let trailing = pos < bytes.count && bytes[pos] == UInt8(ascii: ")") && !(fields.isEmpty && values.isEmpty)
                throw failure(at: nameAt, "expected a field name in \(what), found \(found(at: nameAt))"
                    + (trailing ? " (no ',' may follow the last field)" : ""))
            }
            if let problem = Names.fieldNameProblem(name) {
                throw failure(at: nameAt, "invalid field name '\(name)' in \(what): \(problem)")
            }
            if let previous = seen[name] {
                throw failure(at: nameAt, "'\(name)' appears twice in \(what) (first at line \(position(of: previous).line))")
            }
            seen[name] = nameAt
            skipSpace()
            let hasType = pos < bytes.count && bytes[pos] == UInt8(ascii: ":")
            if isEnum == nil { isEnum = !hasType }
            if isEnum == true {
                if hasType {
                    throw failure(at: pos, "\(what) is an enum (its first value has no type), so '\(name)' cannot have one")
                }
                values.append(name)
            } else {
                guard hasType else {
                    throw failure(at: pos, "expected ':' and a type after field '\(name)' in \(what), found \(found(at: pos))")
                }
                pos += 1
                skipSpace()
                _ = takeDoc()
                let type = try parseType(in: what)
                fields.append(IDLField(name: name, type: type, doc: doc))
            }
            skipSpace()
            guard pos < bytes.count else {
                throw failure(at: pos, "expected ',' or ')' in \(what), found end of input")
            }
            if bytes[pos] == UInt8(ascii: ",") {
                pos += 1
                skipSpace()
                continue
            }
            if bytes[pos] == UInt8(ascii: ")") {
                pos += 1
                _ = takeDoc()
                return isEnum == true ? .enumeration(values) : .structure(fields)
            }
            throw failure(at: pos, "expected ',' or ')' after '\(name)' in \(what), found \(found(at: pos))")
        }
    }

    /// type: `?`-prefixed or not; `?` may not follow `?`.
    private mutating func parseType(in what: String) throws(IDLError) -> IDLType {
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "?") {
            pos += 1
            try refuseSpace(after: "'?'")
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "?") {
                throw failure(at: pos, "a type is made nullable once: '??' in \(what)")
            }
            return .optional(try parseNonOptionalType(in: what))
        }
        return try parseNonOptionalType(in: what)
    }

    private mutating func parseNonOptionalType(in what: String) throws(IDLError) -> IDLType {
        if startsWith("[]") {
            pos += 2
            try refuseSpace(after: "'[]'")
            return .array(try parseType(in: what))
        }
        if startsWith("[string]") {
            pos += 8
            try refuseSpace(after: "'[string]'")
            return .dictionary(try parseType(in: what))
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "[") {
            throw failure(at: pos, "expected '[]' (array) or '[string]' (map) in \(what), found \(found(at: pos, length: 8))")
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "(") {
            return try parseFields(of: "a struct or enum in \(what)")
        }
        let at = pos
        let word = readWord()
        switch word {
        case "bool": return .bool
        case "int": return .int
        case "float": return .float
        case "string": return .string
        case "object": return .object
        case "":
            throw failure(at: at, "expected a type in \(what), found \(found(at: at))")
        default:
            if let problem = Names.memberNameProblem(word) {
                throw failure(at: at, "expected a type in \(what) (bool, int, float, string, object, a type's name, '(', '[]', '[string]' or '?'), found '\(word)': \(problem)")
            }
            namedReferences.append((word, at))
            return .named(word)
        }
    }

    // MARK: Lexing

    private static func isLetter(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    private mutating func readRun(_ accept: (UInt8) -> Bool) -> String {
        let start = pos
        while pos < bytes.count, accept(bytes[pos]) { pos += 1 }
        return String(decoding: bytes[start..<pos], as: UTF8.self)
    }

    /// Letters, digits and '_': keywords, names, field names.
    private mutating func readWord() -> String {
        readRun { IDLParser.isLetter($0) || IDLParser.isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    private func startsWith(_ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard pos + n <= bytes.count else { return false }
        for i in 0..<n where bytes[pos + i] != s.utf8Start[i] { return false }
        return true
    }

    /// Skips whitespace and comments, keeping the last block of comment
    /// lines. A comment after a token on the same line documents nothing.
    private mutating func skipSpace() {
        var newlinesSinceComment = 0
        var onNewLine = pos == 0
        while pos < bytes.count {
            switch bytes[pos] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                pos += 1
            case UInt8(ascii: "\n"):
                pos += 1
                newlinesSinceComment += 1
                onNewLine = true
            case UInt8(ascii: "\r"):
                pos += 1
                if pos < bytes.count, bytes[pos] == UInt8(ascii: "\n") { pos += 1 }
                newlinesSinceComment += 1
                onNewLine = true
            case UInt8(ascii: "#"):
                // A blank line between two comment lines starts a new block.
                if newlinesSinceComment > 1 { docLines.removeAll() }
                pos += 1
                if pos < bytes.count, bytes[pos] == UInt8(ascii: " ") { pos += 1 }
                let start = pos
                while pos < bytes.count, bytes[pos] != UInt8(ascii: "\n"), bytes[pos] != UInt8(ascii: "\r") { pos += 1 }
                if onNewLine { docLines.append(String(decoding: bytes[start..<pos], as: UTF8.self)) }
                newlinesSinceComment = 0
            default:
                if newlinesSinceComment > 1 { docLines.removeAll() }
                return
            }
        }
        if newlinesSinceComment > 1 { docLines.removeAll() }
    }

    private mutating func takeDoc() -> String {
        defer { docLines.removeAll() }
        return docLines.joined(separator: "\n")
    }

    private mutating func requireSpace(after what: String) throws(IDLError) {
        guard pos < bytes.count, bytes[pos] == UInt8(ascii: " ") || bytes[pos] == UInt8(ascii: "\t")
                || bytes[pos] == UInt8(ascii: "\n") || bytes[pos] == UInt8(ascii: "\r") else {
            throw failure(at: pos, "expected a space after '\(what)', found \(found(at: pos))")
        }
        skipSpace()
        docLines.removeAll()
    }

    private func refuseSpace(after what: String) throws(IDLError) {
        if pos < bytes.count, bytes[pos] == UInt8(ascii: " ") || bytes[pos] == UInt8(ascii: "\t")
            || bytes[pos] == UInt8(ascii: "\n") || bytes[pos] == UInt8(ascii: "\r") {
            throw failure(at: pos, "no space may follow \(what): it belongs to the type after it")
        }
    }

    /// `eol`: only spaces or tabs, then a line end, a comment or the end.
    private mutating func requireLineEnd(after what: String) throws(IDLError) {
        while pos < bytes.count, bytes[pos] == UInt8(ascii: " ") || bytes[pos] == UInt8(ascii: "\t") { pos += 1 }
        guard pos < bytes.count else { return }
        switch bytes[pos] {
        case UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "#"): return
        default: throw failure(at: pos, "expected the end of the line after \(what), found \(found(at: pos)) (each member starts on a line of its own)")
        }
    }

    // MARK: Errors

    private func position(of offset: Int) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        var i = 0
        while i < offset, i < bytes.count {
            if bytes[i] == UInt8(ascii: "\n") || (bytes[i] == UInt8(ascii: "\r") && (i + 1 >= bytes.count || bytes[i + 1] != UInt8(ascii: "\n"))) {
                line += 1
                lineStart = i + 1
            }
            i += 1
        }
        var column = 1
        for j in lineStart..<min(offset, bytes.count) where bytes[j] & 0xC0 != 0x80 { column += 1 }
        return (line, column)
    }

    private func failure(at offset: Int, _ message: String) -> IDLError {
        let (line, column) = position(of: offset)
        return IDLError(line: line, column: column, message: message)
    }

    /// "'x'", "'->'", "end of input", "a line end": what is at `offset`.
    private func found(at offset: Int, length: Int = 1) -> String {
        guard offset < bytes.count else { return "end of input" }
        let b = bytes[offset]
        if b == UInt8(ascii: "\n") || b == UInt8(ascii: "\r") { return "the end of the line" }
        if b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") { return "a space" }
        if b < 0x20 || b == 0x7F { return "a control character" }
        var end = min(offset + max(length, 1), bytes.count)
        if b >= 0x80 {
            end = offset + 1
            while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        }
        return "'" + String(decoding: bytes[offset..<end], as: UTF8.self) + "'"
    }
}
