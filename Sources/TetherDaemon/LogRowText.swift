import TetherCore
import TetherWire

/// The JSON of a log row's `changes` and `images` columns, written
/// straight into bytes.
///
/// Why not `Value.array(…).jsonString()`: building a `Value` tree for each
/// change and image and then encoding it was ~28 k of the ~105 k
/// instructions of a one-client `--durability full` Set
/// (docs/daemon-performance.md, "Durable commits"); only the states'
/// values themselves need the generic writer. The text is byte for byte
/// what the trees gave (`Change.wireValue`, `SQLiteStore.imageValue`:
/// `LogRowTextTests` holds them equal), so stores written before and after
/// read the same.
enum LogRowText {
    /// `[Change.wireValue, …]`: name, op, path, then value and `bytes_at`
    /// for a set (a null value is left out, as ObjectBuilder leaves it).
    static func changes(_ changes: [Change], into out: inout [UInt8]) throws(TetherError) {
        out.append(UInt8(ascii: "["))
        for (i, change) in changes.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: Keys.name)
            try JSONBytes.string(change.name, &out)
            switch change.write {
            case .set(let value):
                out.append(contentsOf: Keys.setPath)
                try path(change.path, &out)
                if value != .null {
                    out.append(contentsOf: Keys.value)
                    try JSONBytes.value(value, &out)
                    try bytesAt(of: value, &out)
                }
            case .remove:
                out.append(contentsOf: Keys.removePath)
                try path(change.path, &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
    }

    /// `[SQLiteStore.imageValue(image), …]`.
    static func images(_ images: [StateImage], into out: inout [UInt8]) throws(TetherError) {
        out.append(UInt8(ascii: "["))
        for (i, image) in images.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: Keys.name)
            try JSONBytes.string(image.name, &out)
            if let value = image.value {
                out.append(contentsOf: Keys.storedValue)
                try JSONBytes.value(value, &out)  // null included: a subscript set keeps it
                try bytesAt(of: value, &out)
                out.append(contentsOf: Keys.modified)
                JSONBytes.int(Int64(bitPattern: image.modified), &out)
                out.append(contentsOf: Keys.descriptor)
                if image.descriptor == Descriptor() {
                    out.append(contentsOf: Keys.emptyObject)  // every state not declared otherwise
                } else {
                    try image.descriptor.wireValue.writeJSON(into: &out)
                }
            } else {
                out.append(contentsOf: Keys.removed)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func path(_ path: JSONPointer, _ out: inout [UInt8]) throws(TetherError) {
        if path.isRoot {
            out.append(contentsOf: Keys.emptyString)
        } else {
            try JSONBytes.string(path.description, &out)
        }
    }

    /// `,"bytes_at":[…]` when the value holds bytes.
    private static func bytesAt(of value: Value, _ out: inout [UInt8]) throws(TetherError) {
        switch value {
        case .bytes, .array, .object: break
        default: return  // a scalar holds no bytes
        }
        let pointers = BytesAt.pointers(in: value)
        guard !pointers.isEmpty else { return }
        out.append(contentsOf: Keys.bytesAt)
        try Value.array(pointers.map(Value.string)).writeJSON(into: &out)
    }

    /// The fixed parts, as bytes once (appending an array is a copy).
    private enum Keys {
        static let name = Array(#"{"name":"#.utf8)
        static let setPath = Array(#","op":"set","path":"#.utf8)
        static let removePath = Array(#","op":"remove","path":"#.utf8)
        static let value = Array(#","value":"#.utf8)
        static let bytesAt = Array(#","bytes_at":"#.utf8)
        static let storedValue = Array(#","stored":{"value":"#.utf8)
        static let modified = Array(#"},"modified":"#.utf8)
        static let descriptor = Array(#","descriptor":"#.utf8)
        static let removed = Array(#","removed":true"#.utf8)
        static let emptyObject = Array("{}".utf8)
        static let emptyString = Array(#""""#.utf8)
    }
}
