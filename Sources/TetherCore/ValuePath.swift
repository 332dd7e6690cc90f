// ValuePath.swift — reading and writing inside a value at a JSON Pointer (JSON Patch semantics).

/// Reading and writing inside a value at a JSON Pointer, with JSON Patch
/// (RFC 6902) "add"/"replace"/"remove" semantics for writes.
extension Value {
    /// The value the pointer names. Errors: missing member -> .notFound;
    /// index >= count -> .outOfRange; a token that is not an array index
    /// (or "-") on an array -> .badPath; stepping into a scalar -> .wrongType.
    public func value(at pointer: JSONPointer) throws(TetherError) -> Value {
        switch lookup(pointer.tokens) {
        case .found(let value): return value
        case .failed(let failure): throw failure.error(for: pointer.tokens)
        }
    }

    /// nil when the pointer names nothing. Builds no message, so observers can
    /// compare a path before and after a write cheaply.
    public func valueIfPresent(at pointer: JSONPointer) -> Value? {
        switch lookup(pointer.tokens) {
        case .found(let value): return value
        case .failed: return nil
        }
    }

    /// Sets the value at the pointer; the root pointer replaces self. The parent
    /// must exist and be a container. An object member is set or added (at the
    /// end of member order); an array index < count replaces, == count or "-"
    /// appends. On error self is unchanged.
    public mutating func set(_ newValue: Value, at pointer: JSONPointer) throws(TetherError) {
        let tokens = pointer.tokens
        guard let last = tokens.last else {
            self = newValue
            return
        }
        let leafDepth = tokens.count - 1
        let outcome: Result<Void, PathFailure> = withParent(of: tokens) { parent in
            if var object = parent.takeObject() {
                object.members.updateValue(newValue, forKey: MemberKey(last))
                parent = .object(object)
                return .success(())
            }
            if var array = parent.takeArray() {
                defer { parent = .array(array) }
                switch ArrayIndex(last) {
                case .end: array.append(newValue)
                case .index(let i) where i == array.count: array.append(newValue)
                case .index(let i) where i < array.count: array[i] = newValue
                case .index: return .failure(PathFailure(.indexOutOfRange(count: array.count), depth: leafDepth))
                case .invalid: return .failure(PathFailure(.notAnIndex, depth: leafDepth))
                }
                return .success(())
            }
            return .failure(PathFailure(.notContainer(parent.type), depth: leafDepth))
        }
        if case .failure(let failure) = outcome { throw failure.error(for: tokens) }
    }

    /// Removes the value at the pointer and returns it. An object member must
    /// exist (.notFound); an array index must be < count (.outOfRange), and
    /// later elements move down. The root cannot be removed (.invalidArgument).
    /// On error self is unchanged.
    @discardableResult
    public mutating func remove(at pointer: JSONPointer) throws(TetherError) -> Value {
        let tokens = pointer.tokens
        guard let last = tokens.last else {
            throw TetherError(.invalidArgument, "cannot remove the root: the pointer \"\" names the whole value")
        }
        let leafDepth = tokens.count - 1
        let outcome: Result<Value, PathFailure> = withParent(of: tokens) { parent in
            if var object = parent.takeObject() {
                defer { parent = .object(object) }
                guard let i = object.members.position(of: MemberKey(last)) else {
                    return .failure(PathFailure(.noMember, depth: leafDepth))
                }
                return .success(object.members.remove(at: i).value)
            }
            if var array = parent.takeArray() {
                defer { parent = .array(array) }
                switch ArrayIndex(last) {
                case .index(let i) where i < array.count: return .success(array.remove(at: i))
                case .index: return .failure(PathFailure(.indexOutOfRange(count: array.count), depth: leafDepth))
                case .end: return .failure(PathFailure(.endOfArray, depth: leafDepth))
                case .invalid: return .failure(PathFailure(.notAnIndex, depth: leafDepth))
                }
            }
            return .failure(PathFailure(.notContainer(parent.type), depth: leafDepth))
        }
        switch outcome {
        case .success(let removed): return removed
        case .failure(let failure): throw failure.error(for: tokens)
        }
    }
}

// MARK: - Traversal

private enum Lookup {
    case found(Value)
    case failed(PathFailure)
}

/// A container detached from its parent while a write walks down, so that
/// each level is uniquely referenced and is mutated in place, not copied.
private enum DetachedContainer {
    case object(ValueObject, index: Int)
    case array([Value], index: Int)
}

extension Value {
    fileprivate func lookup(_ tokens: [String]) -> Lookup {
        var current = self
        for depth in tokens.indices {
            let token = tokens[depth]
            switch current {
            case .object(let object):
                guard let child = object.members[MemberKey(token)] else { return .failed(PathFailure(.noMember, depth: depth)) }
                current = child
            case .array(let array):
                switch ArrayIndex(token) {
                case .index(let i) where i < array.count: current = array[i]
                case .index: return .failed(PathFailure(.indexOutOfRange(count: array.count), depth: depth))
                case .end: return .failed(PathFailure(.endOfArray, depth: depth))
                case .invalid: return .failed(PathFailure(.notAnIndex, depth: depth))
                }
            default:
                return .failed(PathFailure(.notContainer(current.type), depth: depth))
            }
        }
        return .found(current)
    }

    /// Walks to the container of the last token, detaching each level on the
    /// way (an explicit stack, so no path is too long for the call stack), runs
    /// `body` on it, then reattaches every level whatever the outcome. When the
    /// walk or `body` fails, nothing has been changed.
    fileprivate mutating func withParent<R>(
        of tokens: [String],
        _ body: (inout Value) -> Result<R, PathFailure>
    ) -> Result<R, PathFailure> {
        var detached: [DetachedContainer] = []
        if tokens.count > 1 { detached.reserveCapacity(tokens.count - 1) }
        var current = self
        self = .null
        var outcome: Result<R, PathFailure>?
        walk: for depth in 0..<(tokens.count - 1) {
            let token = tokens[depth]
            if var object = current.takeObject() {
                guard let i = object.members.position(of: MemberKey(token)) else {
                    current = .object(object)
                    outcome = .failure(PathFailure(.noMember, depth: depth))
                    break walk
                }
                current = object.members.swapValue(.null, at: i)
                detached.append(.object(object, index: i))
            } else if var array = current.takeArray() {
                switch ArrayIndex(token) {
                case .index(let i) where i < array.count:
                    current = array[i]
                    array[i] = .null
                    detached.append(.array(array, index: i))
                    continue walk
                case .index: outcome = .failure(PathFailure(.indexOutOfRange(count: array.count), depth: depth))
                case .end: outcome = .failure(PathFailure(.endOfArray, depth: depth))
                case .invalid: outcome = .failure(PathFailure(.notAnIndex, depth: depth))
                }
                current = .array(array)
                break walk
            } else {
                outcome = .failure(PathFailure(.notContainer(current.type), depth: depth))
                break walk
            }
        }
        if case .none = outcome { outcome = body(&current) }
        while let level = detached.popLast() {
            switch consume level {
            case .object(var object, let i):
                object.members.swapValue(current, at: i)
                current = .object(object)
            case .array(var array, let i):
                array[i] = current
                current = .array(array)
            }
        }
        self = current
        return outcome!
    }
}

/// An array reference token: "0" or [1-9][0-9]* (RFC 6901 section 4), or "-".
enum ArrayIndex {
    case index(Int)
    case end
    case invalid

    init(_ token: String) {
        self.init(utf8: token.utf8)
    }

    init<Bytes: Collection<UInt8>>(utf8 token: Bytes) {
        var n = 0
        var saturated = false
        var count = 0
        var first: UInt8 = 0
        for b in token {
            guard b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") else {
                self = token.count == 1 && b == UInt8(ascii: "-") ? .end : .invalid
                return
            }
            if count == 0 { first = b }
            count += 1
            if !saturated {
                let (times10, o1) = n.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(Int(b - UInt8(ascii: "0")))
                if o1 || o2 { saturated = true } else { n = sum }
            }
        }
        if count == 0 || (first == UInt8(ascii: "0") && count > 1) {
            self = .invalid
        } else {
            // An index too large for Int is still an index, just one past any array.
            self = .index(saturated ? Int.max : n)
        }
    }
}

extension Value {
    /// The object, moved out so that the caller holds the only reference;
    /// self is left .null. (Binding it in a `switch` would keep a second
    /// reference alive for the whole case and make every write copy it.)
    fileprivate mutating func takeObject() -> ValueObject? {
        guard case .object(let object) = self else { return nil }
        self = .null
        return object
    }

    fileprivate mutating func takeArray() -> [Value]? {
        guard case .array(let array) = self else { return nil }
        self = .null
        return array
    }
}

// MARK: - Failures

/// Why a pointer names nothing. Kept free of strings so that
/// `valueIfPresent` never allocates; words are added only when throwing.
struct PathFailure: Error {
    enum Fault {
        case noMember
        case indexOutOfRange(count: Int)
        case notAnIndex
        case endOfArray
        case notContainer(ValueType)
    }

    var fault: Fault
    /// The index of the token that failed; the container is tokens[..<depth].
    var depth: Int

    init(_ fault: Fault, depth: Int) {
        self.fault = fault
        self.depth = depth
    }

    func error(for tokens: [String]) -> TetherError {
        let full = JSONPointer.text(of: tokens[...])
        let token = tokens[depth]
        let container = depth == 0 ? "the root" : JSONPointer.text(of: tokens[..<depth])
        switch fault {
        case .noMember:
            return TetherError(.notFound, "\(full): no member \(jsonQuoted(token)) at \(container)")
        case .indexOutOfRange(let count):
            return TetherError(.outOfRange,
                               "\(full): index \(token) is out of range for the array at \(container), which has \(count) element\(count == 1 ? "" : "s")")
        case .notAnIndex:
            return TetherError(.badPath,
                               "\(full): \(jsonQuoted(token)) is not an array index (the value at \(container) is an array; indexes are 0 or digits without a leading zero)")
        case .endOfArray:
            return TetherError(.badPath,
                               "\(full): \"-\" names the place after the last element of the array at \(container); it can only be used to append")
        case .notContainer(let type):
            return TetherError(.wrongType, "\(full): \(container) is \(type.withArticle), not an object or array")
        }
    }
}

extension ValueType {
    /// "an int", "a string": how messages name a kind of value.
    var withArticle: String {
        switch self {
        case .null: "null"
        case .int, .array, .object: "an \(self)"
        case .bytes: "a bytes value"
        default: "a \(self)"
        }
    }
}
