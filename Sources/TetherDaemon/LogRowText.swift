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
            key("name", first: true, &out)
            try string(change.name, &out)
            key("op", &out)
            switch change.write {
            case .set(let value):
                literal("\"set\"", &out)
                key("path", &out)
                try string(change.path.description, &out)
                if value != .null {
                    key("value", &out)
                    try value.writeJSON(into: &out)
                    try bytesAt(of: value, &out)
                }
            case .remove:
                literal("\"remove\"", &out)
                key("path", &out)
                try string(change.path.description, &out)
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
            key("name", first: true, &out)
            try string(image.name, &out)
            if let value = image.value {
                key("stored", &out)
                key("value", first: true, &out)
                try value.writeJSON(into: &out)  // null included: a subscript set keeps it
                try bytesAt(of: value, &out)
                out.append(UInt8(ascii: "}"))
                key("modified", &out)
                literal(String(Int64(bitPattern: image.modified)), &out)
                key("descriptor", &out)
                if image.descriptor == Descriptor() {
                    literal("{}", &out)  // every state not declared otherwise
                } else {
                    try image.descriptor.wireValue.writeJSON(into: &out)
                }
            } else {
                key("removed", &out)
                literal("true", &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
    }

    /// `,"bytes_at":[…]` when the value holds bytes.
    private static func bytesAt(of value: Value, _ out: inout [UInt8]) throws(TetherError) {
        let pointers = BytesAt.pointers(in: value)
        guard !pointers.isEmpty else { return }
        key("bytes_at", &out)
        try Value.array(pointers.map(Value.string)).writeJSON(into: &out)
    }

    /// `{"key":` for the first member of an object, `,"key":` after one.
    /// Keys here are fixed ASCII words: nothing to escape.
    private static func key(_ key: StaticString, first: Bool = false, _ out: inout [UInt8]) {
        out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
        out.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    private static func literal(_ text: String, _ out: inout [UInt8]) {
        out.append(contentsOf: text.utf8)
    }

    /// A string as the JSON writer quotes it (the same escapes).
    private static func string(_ s: String, _ out: inout [UInt8]) throws(TetherError) {
        try Value.string(s).writeJSON(into: &out)
    }
}
