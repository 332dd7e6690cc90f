// PointerText.swift — JSON Pointers from C as text, checked and walked in place; reads at such a path.

/// A JSON Pointer as its caller's UTF-8 text, checked but not split into
/// tokens: a read walks the text in place. Parsing a path from C into a
/// `JSONPointer` (an array and a `String` per token) was ~490 of the ~1,900
/// instructions of `tether_computed_get_path` in kairo mux (profiled), for
/// a pointer used once. Borrowed: valid only while the caller's bytes are.
public struct PointerText {
    public let bytes: UnsafeRawBufferPointer
    /// A token holds "~0" or "~1": such pointers are read through
    /// `JSONPointer`, which unescapes its tokens.
    let hasEscapes: Bool

    /// Checks the text as `JSONPointer(parsingUTF8:)` does, with its errors.
    public init(validating bytes: UnsafeRawBufferPointer) throws(TetherError) {
        self.bytes = bytes
        var escapes = false
        var valid = bytes.isEmpty || bytes[0] == UInt8(ascii: "/")
        var i = 0
        while valid && i < bytes.count {
            if bytes[i] == UInt8(ascii: "~") {
                escapes = true
                valid = i + 1 < bytes.count && (bytes[i + 1] == UInt8(ascii: "0") || bytes[i + 1] == UInt8(ascii: "1"))
            }
            i += 1
        }
        if !valid {
            // The parser words the error.
            _ = try JSONPointer(parsingUTF8: bytes)
            preconditionFailure("JSONPointer accepted a pointer init(validating:) refused")
        }
        hasEscapes = escapes
    }

    /// The pointer parsed, for escaped tokens and for error messages.
    public var pointer: JSONPointer {
        do throws(TetherError) {
            return try JSONPointer(parsingUTF8: bytes)
        } catch {
            preconditionFailure("a pointer init(validating:) accepted does not parse: \(error)")
        }
    }
}

extension Value {
    /// `value(at:)` for pointer text: escape-free pointers that name a value
    /// are walked in place; the rest go through `JSONPointer`, for the
    /// unescaping or for the failure's message.
    public func value(at text: PointerText) throws(TetherError) -> Value {
        if !text.hasEscapes, let found = walk(text.bytes) { return found }
        return try value(at: text.pointer)
    }

    /// The value the (escape-free) pointer names, or nil.
    private func walk(_ bytes: UnsafeRawBufferPointer) -> Value? {
        var current = self
        var start = 1  // past the leading "/"; "" (the root) has no token
        while start <= bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != UInt8(ascii: "/") { end += 1 }
            let token = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            switch current {
            case .object(let object):
                guard let p = object.members.position(ofUTF8: token) else { return nil }
                current = object.members.values[p]
            case .array(let array):
                guard case .index(let i) = ArrayIndex(utf8: token), i < array.count else { return nil }
                current = array[i]
            default:
                return nil
            }
            start = end + 1
        }
        return current
    }
}

extension Value {
    /// The scalar the pointer names, as a typed getter sees it, read in
    /// place: `value(at:)` copied the value out first, and the walk copied
    /// each container it passed (a retain and a release each; ~170 of
    /// ~780 instructions of tether_computed_get_path_int in kairo mux,
    /// profiled). Escaped and failing pointers go through `value(at:)`,
    /// for the unescaping or the failure's message.
    public func scalar(at text: PointerText) throws(TetherError) -> ScalarValue {
        if let found = scalarIfFound(at: text) { return found }
        return try value(at: text.pointer).scalar
    }

    /// `scalar(at:)` when the (escape-free) pointer names a part: nil for
    /// escapes and for pointers naming nothing (their errors are
    /// `scalar(at:)`'s to word).
    public func scalarIfFound(at text: PointerText) -> ScalarValue? {
        text.hasEscapes ? nil : scalar(walking: text.bytes, from: 1)
    }

    /// The scalar at the (escape-free) pointer's tokens from byte `start`
    /// on, or nil when they name nothing. Recursive, on the element in its
    /// container, so nothing is copied on the way down. (`walk` does the
    /// same for a whole part; one walker generic over what it takes at the
    /// end cost the typed reads ~9 instructions each, kairo mux +0.9%.)
    private func scalar(walking bytes: UnsafeRawBufferPointer, from start: Int) -> ScalarValue? {
        if start > bytes.count { return scalar }
        var end = start
        while end < bytes.count && bytes[end] != UInt8(ascii: "/") { end += 1 }
        let token = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        switch self {
        case .object(let object):
            guard let p = object.members.position(ofUTF8: token) else { return nil }
            return object.members.values[p].scalar(walking: bytes, from: end + 1)
        case .array(let array):
            guard case .index(let i) = ArrayIndex(utf8: token), i < array.count else { return nil }
            return array[i].scalar(walking: bytes, from: end + 1)
        default:
            return nil
        }
    }
}

extension Graph {
    /// `read(_:at:tracked:)` for a typed getter: the scalar there, read in
    /// place (`Value.scalar(at:)`).
    public func readScalar(_ id: StateID, at path: PointerText, tracked: Bool = false) throws(TetherError) -> ScalarValue {
        let i = try resolve(id)
        if tracked { trackPath(i, path) }
        return try states[i].value.scalar(at: path)
    }

    /// `readComputed(_:at:tracked:)` for a typed getter.
    public func readComputedScalar(_ id: DerivedID, at path: PointerText, tracked: Bool = false) throws(TetherError) -> ScalarValue {
        try derived[try upToDate(id, tracked: tracked)].value.scalar(at: path)
    }

    /// `read(_:at:tracked:)` for pointer text: tracked as a read of that
    /// part only (GraphPaths.swift).
    public func read(_ id: StateID, at path: PointerText, tracked: Bool = false) throws(TetherError) -> Value {
        let i = try resolve(id)
        if tracked { trackPath(i, path) }
        return try states[i].value.value(at: path)
    }

    /// The part of a computed's value at `path`. The read (recorded when
    /// `tracked`) is of the whole computed (a state's path read is of the
    /// part: GraphPaths.swift): it is recorded even when the path names
    /// nothing.
    public func readComputed(_ id: DerivedID, at path: PointerText, tracked: Bool = false) throws(TetherError) -> Value {
        try derived[try upToDate(id, tracked: tracked)].value.value(at: path)
    }
}
