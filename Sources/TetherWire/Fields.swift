// Fields.swift — reading typed fields out of a parameters object, with errors that name the parameter.

import TetherCore

/// A struct's fields as the typed model reads them. Each accessor checks
/// the type and throws org.varlink.service.InvalidParameter naming the
/// field by its path from the parameters ("ops[2].name"). As Varlink
/// says, a null field is an absent one.
struct Fields {
    let object: ValueObject
    /// "" at the top, "ops[2]." inside.
    let prefix: String

    /// The fields of a value that must be an object; `parameter` names it
    /// ("" for the parameters themselves).
    init(_ value: Value, parameter: String = "") throws(VarlinkError) {
        guard case .object(let object) = value else {
            throw .invalidParameter(parameter.isEmpty ? "parameters" : parameter,
                                    "must be an object, not \(Message.describe(value))")
        }
        self.object = object
        prefix = parameter.isEmpty ? "" : parameter + "."
    }

    func name(_ key: String) -> String { prefix + key }

    /// Refuses fields the method does not define, so a misspelled optional
    /// field ("from_revison") is an error rather than silently ignored.
    /// Replies are read without this check: a newer daemon may add fields.
    func rejectUnknown(_ known: [String]) throws(VarlinkError) {
        for key in object.members.keys where !known.contains(key.string) {
            throw .invalidParameter(name(key.string), "no such parameter (expected one of: \(known.joined(separator: ", ")))")
        }
    }

    private func present(_ key: String) -> Value? {
        switch object[key] {
        case nil, .null?: nil
        case let value?: value
        }
    }

    private func wrong(_ key: String, _ expected: String, _ value: Value) -> VarlinkError {
        .invalidParameter(name(key), "must be \(expected), not \(Message.describe(value))")
    }

    private func missing(_ key: String, _ expected: String) -> VarlinkError {
        .invalidParameter(name(key), "is required (\(expected))")
    }

    func value(_ key: String) -> Value? { present(key) }

    func optionalString(_ key: String) throws(VarlinkError) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let s) = value else { throw wrong(key, "a string", value) }
        return s
    }

    func string(_ key: String) throws(VarlinkError) -> String {
        guard let s = try optionalString(key) else { throw missing(key, "a string") }
        return s
    }

    func optionalBool(_ key: String) throws(VarlinkError) -> Bool? {
        guard let value = present(key) else { return nil }
        guard case .bool(let b) = value else { throw wrong(key, "true or false", value) }
        return b
    }

    func bool(_ key: String) throws(VarlinkError) -> Bool {
        guard let b = try optionalBool(key) else { throw missing(key, "true or false") }
        return b
    }

    func optionalInt(_ key: String) throws(VarlinkError) -> Int64? {
        guard let value = present(key) else { return nil }
        guard case .int(let n) = value else { throw wrong(key, "an integer", value) }
        return n
    }

    func int(_ key: String) throws(VarlinkError) -> Int64 {
        guard let n = try optionalInt(key) else { throw missing(key, "an integer") }
        return n
    }

    /// A revision or a count: an integer, not negative.
    func optionalRevision(_ key: String) throws(VarlinkError) -> UInt64? {
        guard let n = try optionalInt(key) else { return nil }
        guard n >= 0 else { throw .invalidParameter(name(key), "must not be negative (got \(n))") }
        return UInt64(n)
    }

    func revision(_ key: String) throws(VarlinkError) -> UInt64 {
        guard let n = try optionalRevision(key) else { throw missing(key, "an integer, not negative") }
        return n
    }

    func optionalFloat(_ key: String) throws(VarlinkError) -> Double? {
        guard let value = present(key) else { return nil }
        switch value {
        case .int(let n): return Double(n)
        case .double(let d): return d
        default: throw wrong(key, "a number", value)
        }
    }

    func optionalArray(_ key: String) throws(VarlinkError) -> [Value]? {
        guard let value = present(key) else { return nil }
        guard case .array(let items) = value else { throw wrong(key, "an array", value) }
        return items
    }

    func array(_ key: String) throws(VarlinkError) -> [Value] {
        guard let items = try optionalArray(key) else { throw missing(key, "an array") }
        return items
    }

    func optionalStrings(_ key: String) throws(VarlinkError) -> [String]? {
        guard let items = try optionalArray(key) else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item else {
                throw .invalidParameter("\(name(key))[\(i)]", "must be a string, not \(Message.describe(item))")
            }
            strings.append(s)
        }
        return strings
    }

    func optionalFields(_ key: String) throws(VarlinkError) -> Fields? {
        guard let value = present(key) else { return nil }
        return try Fields(value, parameter: name(key))
    }

    func fields(_ key: String) throws(VarlinkError) -> Fields {
        guard let fields = try optionalFields(key) else { throw missing(key, "an object") }
        return fields
    }

    /// One value of an enum type: a string among `cases`.
    func enumeration<E: RawRepresentable>(_ key: String, _ type: E.Type) throws(VarlinkError) -> E
        where E: CaseIterable, E.RawValue == String {
        guard let e = try optionalEnumeration(key, type) else {
            throw missing(key, "one of \(E.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return e
    }

    func optionalEnumeration<E: RawRepresentable>(_ key: String, _ type: E.Type) throws(VarlinkError) -> E?
        where E: CaseIterable, E.RawValue == String {
        guard let value = present(key) else { return nil }
        let names = E.allCases.map(\.rawValue).joined(separator: ", ")
        guard case .string(let s) = value else { throw wrong(key, "one of \(names)", value) }
        guard let e = E(rawValue: s) else {
            throw .invalidParameter(name(key), "\(VarlinkError.quoted(s)) is not one of \(names)")
        }
        return e
    }

    /// A JSON Pointer; absent means the root. Malformed text is
    /// io.tether.BadPath, as for a local state.
    func path(_ key: String) throws(VarlinkError) -> JSONPointer {
        guard let text = try optionalString(key) else { return .root }
        do {
            return try JSONPointer(parsing: text)
        } catch {
            throw VarlinkError(error)
        }
    }

    /// A state name, checked by `StateName.check`.
    func stateName(_ key: String, _ limits: Limits) throws(VarlinkError) -> String {
        let s = try string(key)
        try StateName.check(s, parameter: name(key), limits: limits)
        return s
    }

    /// A value and the `bytes_at` list beside it; absent means null.
    func value(_ key: String, bytesAt bytesKey: String) throws(VarlinkError) -> Value {
        let value = present(key) ?? .null
        guard let pointers = try optionalStrings(bytesKey) else { return value }
        return try BytesAt.decode(value, at: pointers, parameter: name(bytesKey))
    }
}

/// Building a struct's object: nil fields are left out (Varlink: absent is null).
struct ObjectBuilder {
    var object = ValueObject()

    subscript(key: String) -> Value? {
        get { object[key] }
        set { if let newValue, newValue != .null { object[key] = newValue } }
    }

    mutating func set(_ key: String, _ string: String?) { self[key] = string.map(Value.string) }
    mutating func set(_ key: String, _ bool: Bool) { self[key] = .bool(bool) }
    mutating func set(_ key: String, _ n: UInt64?) { self[key] = n.map(wireInt) }
    mutating func set(_ key: String, int n: Int64?) { self[key] = n.map(Value.int) }
    mutating func set(_ key: String, _ path: JSONPointer) {
        if !path.isRoot { self[key] = .string(path.description) }
    }
    /// A value and its `bytes_at` list (left out when it has no bytes).
    mutating func set(_ key: String, value: Value, bytesAt bytesKey: String) {
        self[key] = value
        let pointers = BytesAt.pointers(in: value)
        if !pointers.isEmpty { self[bytesKey] = .array(pointers.map(Value.string)) }
    }

    var value: Value { .object(object) }
}
