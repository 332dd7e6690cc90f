// IDLValidation.swift — checking JSON values against an interface's types, and resolving calls to methods.

import TetherCore

extension VarlinkInterface {
    /// Checks a call's parameters against the method's input: every
    /// required field present and not null, every field of its type, no
    /// field the method does not define. Throws
    /// org.varlink.service.InvalidParameter naming the first field at
    /// fault as a path ("ops[2].op"), or MethodNotFound.
    public func checkParameters(_ parameters: ValueObject, method: String) throws(VarlinkError) {
        guard let m = self.method(named: method) else { throw .methodNotFound(name + "." + method) }
        try checkFields(parameters, m.input, prefix: "", allowUnknown: false)
    }

    /// Checks a reply's parameters against the method's output. Unknown
    /// fields pass unless `allowUnknown` is false: a client reading a newer
    /// daemon should not fail on a field added since.
    public func checkReply(_ parameters: ValueObject, method: String, allowUnknown: Bool = true) throws(VarlinkError) {
        guard let m = self.method(named: method) else { throw .methodNotFound(name + "." + method) }
        try checkFields(parameters, m.output, prefix: "", allowUnknown: allowUnknown)
    }

    /// Checks an error's parameters against its definition.
    public func checkError(_ parameters: ValueObject, error: String, allowUnknown: Bool = true) throws(VarlinkError) {
        guard let e = errorType(named: error) else {
            throw .invalidParameter("error", "no error \(error) in \(name)")
        }
        try checkFields(parameters, e.fields, prefix: "", allowUnknown: allowUnknown)
    }

    /// Checks one value against a type; `parameter` names it in errors.
    /// A nil value is an absent field.
    public func check(_ value: Value?, against type: IDLType, parameter: String, allowUnknown: Bool = false) throws(VarlinkError) {
        var value = value
        if value == .null { value = nil }
        if case .optional(let inner) = type {
            guard value != nil else { return }
            try check(value, against: inner, parameter: parameter, allowUnknown: allowUnknown)
            return
        }
        guard let value else {
            throw .invalidParameter(parameter, "is required (\(type))")
        }
        func wrong() -> VarlinkError {
            .invalidParameter(parameter, "must be \(Self.expectation(type)), not \(Message.describe(value))")
        }
        switch type {
        case .optional:
            return  // handled above
        case .bool:
            guard case .bool = value else { throw wrong() }
        case .int:
            guard case .int = value else { throw wrong() }
        case .float:
            switch value {
            case .int, .double: break
            default: throw wrong()
            }
        case .string:
            switch value {
            case .string, .bytes: break  // bytes are written as base64 strings
            default: throw wrong()
            }
        case .object:
            return  // any JSON value
        case .named(let typeName):
            guard let alias = typeAlias(named: typeName) else {
                throw .invalidParameter(parameter, "the interface has no type \(typeName)")
            }
            try check(value, against: alias.type, parameter: parameter, allowUnknown: allowUnknown)
        case .structure(let fields):
            guard case .object(let object) = value else { throw wrong() }
            try checkFields(object, fields, prefix: parameter + ".", allowUnknown: allowUnknown)
        case .enumeration(let cases):
            guard case .string(let s) = value else { throw wrong() }
            guard cases.contains(s) else {
                throw .invalidParameter(parameter, "\(VarlinkError.quoted(s)) is not one of \(cases.joined(separator: ", "))")
            }
        case .array(let element):
            guard case .array(let items) = value else { throw wrong() }
            for (i, item) in items.enumerated() {
                try check(item, against: element, parameter: "\(parameter)[\(i)]", allowUnknown: allowUnknown)
            }
        case .dictionary(let element):
            guard case .object(let object) = value else { throw wrong() }
            for (key, item) in object.members {
                try check(item, against: element, parameter: "\(parameter)[\(key.string)]", allowUnknown: allowUnknown)
            }
        }
    }

    private func checkFields(_ object: ValueObject, _ fields: [IDLField], prefix: String,
                             allowUnknown: Bool) throws(VarlinkError) {
        for field in fields {
            try check(object[field.name], against: field.type, parameter: prefix + field.name, allowUnknown: allowUnknown)
        }
        if !allowUnknown {
            for key in object.members.keys where !fields.contains(where: { $0.name == key.string }) {
                let known = fields.map(\.name).joined(separator: ", ")
                throw .invalidParameter(prefix + key.string, fields.isEmpty ? "no such parameter (none are defined)"
                                            : "no such parameter (expected one of: \(known))")
            }
        }
    }

    private static func expectation(_ type: IDLType) -> String {
        switch type {
        case .bool: "true or false"
        case .int: "an integer"
        case .float: "a number"
        case .string: "a string"
        case .structure, .dictionary: "an object"
        case .array: "an array"
        case .enumeration(let cases): "one of \(cases.joined(separator: ", "))"
        default: "\(type)"
        }
    }
}

/// The interfaces one service implements, for resolving its calls and for
/// org.varlink.service's GetInfo and GetInterfaceDescription.
public struct VarlinkService: Sendable {
    public let interfaces: [VarlinkInterface]
    /// Fully-qualified methods that stream their replies: calling them
    /// without `more` is org.varlink.service.ExpectedMore.
    public let streamingMethods: [String]

    private let byName: [String: VarlinkInterface]

    public init(interfaces: [VarlinkInterface], streamingMethods: [String] = []) {
        self.interfaces = interfaces
        self.streamingMethods = streamingMethods
        var byName: [String: VarlinkInterface] = [:]
        for interface in interfaces where byName[interface.name] == nil { byName[interface.name] = interface }
        self.byName = byName
    }

    /// tetherd's: org.varlink.service and io.tether, from the texts
    /// embedded in this module (`InterfaceText`), with Watch streaming.
    public static let tetherd: VarlinkService = {
        do {
            return VarlinkService(
                interfaces: [try VarlinkInterface(parsing: InterfaceText.orgVarlinkService),
                             try VarlinkInterface(parsing: InterfaceText.ioTether)],
                streamingMethods: [TetherMethod.watch.qualifiedName])
        } catch {
            fatalError("the embedded interface definitions do not parse: \(error)")
        }
    }()

    public func interface(named name: String) -> VarlinkInterface? {
        byName[name]
    }

    /// The names GetInfo lists.
    public var interfaceNames: [String] { interfaces.map(\.name) }

    /// Resolves a call to its method and checks it: the interface exists
    /// (InterfaceNotFound), the method exists (MethodNotFound), the
    /// parameters match its input (InvalidParameter), a streaming method
    /// has `more` (ExpectedMore), and no `upgrade` (io.tether.InvalidCall:
    /// this service takes no connection over).
    ///
    /// The typed parameters (`GetParameters` and the others) check all
    /// that the IDL does, with the same errors (ModelAgreesWithIDLTests),
    /// so a server that reads them may pass `checkingParameters: false`
    /// and save the second walk over the parameters.
    @discardableResult
    public func check(_ call: Call, checkingParameters: Bool = true) throws(VarlinkError) -> IDLMethod {
        guard let interface = interface(named: call.interface) else {
            throw .interfaceNotFound(call.interface)
        }
        guard let method = interface.method(named: call.member) else {
            throw .methodNotFound(call.method)
        }
        if call.upgrade {
            throw .invalidCall(field: "upgrade", "\(call.method) cannot upgrade the connection: this service supports no other protocol")
        }
        if checkingParameters { try interface.checkParameters(call.parameters, method: call.member) }
        if !call.more && streamingMethods.contains(call.method) {
            throw .expectedMore(call.method)
        }
        return method
    }

    /// The reply to org.varlink.service.GetInterfaceDescription.
    public func describe(_ interfaceName: String) throws(VarlinkError) -> String {
        guard let interface = interface(named: interfaceName) else { throw .interfaceNotFound(interfaceName) }
        return interface.text
    }
}
