// KeyPathPointer.swift — the JSON Pointer of a key path's member in the value Codable makes.
@_spi(Reflection) import Swift
import Synchronization

/// A type whose encoded members are not named like its properties (custom
/// `CodingKeys`) says where a key path's member lives.
public protocol TetherPathMapping {
    /// The pointer of the member `keyPath` names, or nil for "not a member".
    static func tetherPointer(for keyPath: PartialKeyPath<Self>) -> JSONPointer?
}

/// The JSON Pointer of the member a key path names in the value that
/// synthesized `Codable` makes of `Root`: `\User.address.city` →
/// `/address/city`. Works for chains of stored properties of structs (the
/// Swift property name is the member name, as synthesized CodingKeys make
/// it; a type that renames members conforms to `TetherPathMapping`).
/// Nil for anything else (computed properties, classes, tuples, optional
/// chaining, subscripts): then there is no one member to point at.
///
/// How: `MemoryLayout.offset(of:)` gives the key path's byte offset in
/// `Root`, and the runtime's field reflection gives each stored property's
/// name, offset and type; the property containing the offset (and, at an
/// equal offset, the first whose type is the key path's value type) is the
/// next token. Results are cached per key path.
public func jsonPointer<Root, V>(for keyPath: KeyPath<Root, V>) -> JSONPointer? {
    if let mapped = Root.self as? any TetherPathMapping.Type {
        return mappedPointer(mapped, keyPath)
    }
    let key = KeyPathPointers.Key(path: keyPath)
    if let cached = KeyPathPointers.cache.withLock({ $0[key] }) { return cached.pointer }
    let found = MemoryLayout<Root>.offset(of: keyPath).flatMap { offset in
        KeyPathPointers.tokens(in: Root.self, at: offset, valueType: V.self).map { JSONPointer(tokens: $0) }
    }
    KeyPathPointers.cache.withLock { $0[key] = .init(pointer: found) }
    return found
}

private func mappedPointer<M: TetherPathMapping, Root, V>(_ type: M.Type, _ keyPath: KeyPath<Root, V>) -> JSONPointer? {
    guard let partial = keyPath as? PartialKeyPath<M> else { return nil }
    return M.tetherPointer(for: partial)
}

enum KeyPathPointers {
    struct Entry: Sendable { let pointer: JSONPointer? }
    /// Key paths compare by value; they are immutable once made, so
    /// sharing one across threads is safe though the type does not say so.
    struct Key: Hashable, @unchecked Sendable { let path: AnyKeyPath }
    static let cache = Mutex<[Key: Entry]>([:])

    private static func size(of type: Any.Type) -> Int {
        func measure<T>(_: T.Type) -> Int { MemoryLayout<T>.size }
        return _openExistential(type, do: measure)
    }

    /// The member names from `type` down to the stored property of
    /// `valueType` at byte `offset`.
    static func tokens(in type: Any.Type, at offset: Int, valueType: Any.Type) -> [String]? {
        var fields: [(name: String, offset: Int, type: Any.Type, isStruct: Bool)] = []
        let isStruct = _forEachField(of: type, options: []) { name, fieldOffset, fieldType, kind in
            fields.append((String(cString: name), fieldOffset, fieldType, kind == .struct))
            return true
        }
        guard isStruct else { return nil }
        for field in fields {
            let size = size(of: field.type)
            // A zero-sized property occupies no bytes: only an exact match names it.
            let contains = size == 0 ? offset == field.offset
                                     : offset >= field.offset && offset < field.offset + size
            guard contains else { continue }
            if offset == field.offset && field.type == valueType { return [field.name] }
            guard field.isStruct, let rest = tokens(in: field.type, at: offset - field.offset, valueType: valueType) else {
                continue
            }
            return [field.name] + rest
        }
        return nil
    }
}
