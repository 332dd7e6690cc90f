// Messages.swift — Varlink calls and replies: parsed from one message's bytes, written back as JSON.

import TetherCore

/// A Varlink call (varlink.org "Method Call"):
/// `{"method": "io.tether.Get", "parameters": {...}, "oneway": …, "more": …, "upgrade": …}`.
public struct Call: Sendable, Equatable {
    /// The fully-qualified method name, "interface.Method".
    public var method: String
    public var parameters: ValueObject
    /// The caller wants no reply at all, not even an error.
    public var oneway: Bool
    /// The caller accepts several replies (`continues`), as Watch needs.
    public var more: Bool
    /// The caller asks to take the connection over with another protocol
    /// (tetherd supports none).
    public var upgrade: Bool

    public init(method: String, parameters: ValueObject = ValueObject(), oneway: Bool = false, more: Bool = false,
                upgrade: Bool = false) {
        self.method = method
        self.parameters = parameters
        self.oneway = oneway
        self.more = more
        self.upgrade = upgrade
    }

    /// The interface part of `method`: "io.tether" for "io.tether.Get".
    public var interface: String {
        guard let dot = method.utf8.lastIndex(of: UInt8(ascii: ".")) else { return "" }
        return String(method[..<dot])
    }

    /// The method's own name: "Get" for "io.tether.Get".
    public var member: String {
        guard let dot = method.utf8.lastIndex(of: UInt8(ascii: ".")) else { return method }
        return String(method[method.utf8.index(after: dot)...])
    }

    /// Parses one message (its bytes without the NUL).
    /// Errors: io.tether.BadJSON (not JSON, not UTF-8, nested deeper than
    /// `limits.maxDepth`), io.tether.InvalidCall (JSON but not a call).
    public init(parsing bytes: UnsafeRawBufferPointer, limits: Limits = .defaults) throws(VarlinkError) {
        try self.init(from: Message.parseObject(bytes, maxDepth: limits.maxDepth, what: "call"))
    }

    public init(parsing bytes: [UInt8], limits: Limits = .defaults) throws(VarlinkError) {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(VarlinkError) in try Call(parsing: raw, limits: limits) }
        }
        self = try result.get()
    }

    /// A call from a parsed JSON object. Unknown envelope fields are
    /// ignored (Varlink puts extensions in fields of their own).
    public init(from object: ValueObject) throws(VarlinkError) {
        guard let methodValue = object["method"], methodValue != .null else {
            throw .invalidCall(field: "method", "the call has no \"method\" (expected \"interface.Method\")")
        }
        guard case .string(let method) = methodValue else {
            throw .invalidCall(field: "method", "\"method\" must be a string \"interface.Method\", not \(Message.describe(methodValue))")
        }
        if let problem = Names.qualifiedMemberProblem(method) {
            throw .invalidCall(field: "method", "\"method\" is \(VarlinkError.quoted(method)): \(problem)")
        }
        self.method = method
        parameters = try Message.parameters(in: object)
        oneway = try Message.flag("oneway", in: object)
        more = try Message.flag("more", in: object)
        upgrade = try Message.flag("upgrade", in: object)
        if oneway && more {
            throw .invalidCall(field: "oneway", "\"oneway\" and \"more\" exclude each other: a oneway call gets no reply")
        }
    }

    /// The call as a JSON object; false flags and empty parameters are left out.
    public var object: ValueObject {
        var object = ValueObject()
        object["method"] = .string(method)
        if parameters.count > 0 { object["parameters"] = .object(parameters) }
        if oneway { object["oneway"] = .bool(true) }
        if more { object["more"] = .bool(true) }
        if upgrade { object["upgrade"] = .bool(true) }
        return object
    }

    /// Appends the call's JSON (without a NUL) to `out`.
    public func writeJSON(into out: inout [UInt8]) throws(VarlinkError) {
        try Message.write(object, into: &out)
    }
}

/// A Varlink reply: `{"parameters": {...}, "continues": true, "error": "…"}`.
public struct Reply: Sendable, Equatable {
    /// The output parameters, or the error's parameters.
    public var parameters: ValueObject
    /// More replies to the same call follow (only for a call with `more`).
    public var continues: Bool
    /// The fully-qualified error name when the call failed.
    public var error: String?

    public init(parameters: ValueObject = ValueObject(), continues: Bool = false, error: String? = nil) {
        self.parameters = parameters
        self.continues = continues
        self.error = error
    }

    /// Parses one message (its bytes without the NUL); a client reads
    /// replies with `limits.maxReply`, checked by its decoder.
    public init(parsing bytes: UnsafeRawBufferPointer, limits: Limits = .defaults) throws(VarlinkError) {
        try self.init(from: Message.parseObject(bytes, maxDepth: limits.maxDepth, what: "reply"))
    }

    public init(parsing bytes: [UInt8], limits: Limits = .defaults) throws(VarlinkError) {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(VarlinkError) in try Reply(parsing: raw, limits: limits) }
        }
        self = try result.get()
    }

    public init(from object: ValueObject) throws(VarlinkError) {
        parameters = try Message.parameters(in: object)
        continues = try Message.flag("continues", in: object)
        switch object["error"] {
        case nil, .null?:
            error = nil
        case .string(let name)?:
            if let problem = Names.qualifiedMemberProblem(name) {
                throw .invalidCall(field: "error", "\"error\" is \(VarlinkError.quoted(name)): \(problem)")
            }
            error = name
        case let other?:
            throw .invalidCall(field: "error", "\"error\" must be a string \"interface.Error\", not \(Message.describe(other))")
        }
        if error != nil && continues {
            throw .invalidCall(field: "continues", "an error reply ends its call: it cannot have \"continues\"")
        }
    }

    /// The reply as a JSON object. `parameters` is always written (some
    /// clients expect it); `continues` only when true.
    public var object: ValueObject {
        var object = ValueObject()
        object["parameters"] = .object(parameters)
        if continues { object["continues"] = .bool(true) }
        if let error { object["error"] = .string(error) }
        return object
    }

    /// Writes `object`'s bytes without building it (its members in that
    /// order, compact): every call's reply and every watch event is
    /// written here, and the object's member table (hashed keys, an
    /// allocation) was a fifth of writing a short reply (perf, the
    /// fuzzer's fast target). A value JSON cannot hold (a NaN) is left to
    /// the object's writer, whose error names its path from the root.
    public func writeJSON(into out: inout [UInt8]) throws(VarlinkError) {
        let start = out.count
        out.append(contentsOf: #"{"parameters":"#.utf8)
        do {
            try Value.object(parameters).writeJSON(into: &out)
        } catch {
            out.removeSubrange(start...)
            try Message.write(object, into: &out)
            return
        }
        if continues { out.append(contentsOf: #","continues":true"#.utf8) }
        if let error {
            out.append(contentsOf: #","error":"#.utf8)
            try? Value.string(error).writeJSON(into: &out)  // a string always writes
        }
        out.append(UInt8(ascii: "}"))
    }
}

/// What calls and replies share.
enum Message {
    /// One message's bytes as a JSON object, with errors that say what is wrong.
    static func parseObject(_ bytes: UnsafeRawBufferPointer, maxDepth: Int, what: String) throws(VarlinkError) -> ValueObject {
        guard bytes.count > 0 else {
            throw .invalidCall(field: nil, "empty message (a NUL right after the previous one): a \(what) is a JSON object")
        }
        let value: Value
        do {
            value = try Value(json: bytes, maxDepth: maxDepth)
        } catch {
            // Only on failure: name invalid UTF-8 as such, wherever it is
            // (outside strings the parser would only see an unexpected byte).
            do {
                try String.checkUTF8(bytes)
            } catch let utf8 {
                throw .badJSON("the \(what) is not valid UTF-8: \(utf8.message.replacingPrefix("string is not valid UTF-8: ", with: ""))")
            }
            throw .badJSON("the \(what) is not valid JSON: \(error.message.replacingPrefix("invalid JSON at ", with: ""))")
        }
        guard case .object(let object) = value else {
            throw .invalidCall(field: nil, "a \(what) must be a JSON object, not \(describe(value))")
        }
        return object
    }

    static func parameters(in object: ValueObject) throws(VarlinkError) -> ValueObject {
        switch object["parameters"] {
        case nil, .null?: return ValueObject()
        case .object(let parameters)?: return parameters
        case let other?:
            throw .invalidCall(field: "parameters", "\"parameters\" must be an object, not \(describe(other))")
        }
    }

    static func flag(_ key: String, in object: ValueObject) throws(VarlinkError) -> Bool {
        switch object[key] {
        case nil, .null?: return false
        case .bool(let b)?: return b
        case let other?:
            throw .invalidCall(field: key, "\"\(key)\" must be true or false, not \(describe(other))")
        }
    }

    static func write(_ object: ValueObject, into out: inout [UInt8]) throws(VarlinkError) {
        do {
            try Value.object(object).writeJSON(into: &out)
        } catch {
            throw VarlinkError(error)
        }
    }

    /// "an int (7)", "a string", "null": how messages show a value they refuse.
    static func describe(_ value: Value) -> String {
        switch value {
        case .null: "null"
        case .bool(let b): "a bool (\(b))"
        case .int(let n): "an int (\(n))"
        case .double(let d): "a number (\(d))"
        case .string: "a string"
        case .bytes: "bytes"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension String {
    func replacingPrefix(_ prefix: String, with replacement: String) -> String {
        hasPrefix(prefix) ? replacement + dropFirst(prefix.count) : self
    }
}
