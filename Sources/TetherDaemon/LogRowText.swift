import TetherCore
import TetherWire

/// The JSON of a log row's `changes` and `images` columns, written
/// straight into bytes (a ByteWriter: through `[UInt8]` appends the row
/// text was still ~3 k instructions a commit).
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
    static func changes(_ changes: [Change], into out: inout ByteWriter) throws(TetherError) {
        out.append(UInt8(ascii: "["))
        for (i, change) in changes.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(Keys.name)
            try out.appendString(change.name)
            switch change.write {
            case .set(let value):
                if change.path.isRoot && value != .null {
                    out.append(Keys.setRootValue)  // the commonest change, its keys in one piece
                    try out.appendValue(value)
                    try bytesAt(of: value, &out)
                    break
                }
                out.append(Keys.setPath)
                try path(change.path, &out)
                if value != .null {
                    out.append(Keys.value)
                    try out.appendValue(value)
                    try bytesAt(of: value, &out)
                }
            case .remove:
                out.append(Keys.removePath)
                try path(change.path, &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
    }

    /// A commit's `changes` entry: `changes(_:into:)`, or, for the
    /// commonest commit (one state set whole to a scalar), the short form
    /// `["name",value]` that `SQLiteStore.decodeChanges` reads back as that
    /// change. With its image left out too (`imageFollows`), a 64-client
    /// group's row is ~0.8 KiB instead of ~2 KiB: several groups share a
    /// leaf page, where each took a new page (and rewrote its parent and
    /// the database header: three WAL frames per group,
    /// docs/daemon-performance.md).
    static func commit(_ changes: [Change], into out: inout ByteWriter) throws(TetherError) {
        guard let value = Commit.wholeSet(changes) else { return try self.changes(changes, into: &out) }
        switch value {
        case .bytes, .array, .object: return try self.changes(changes, into: &out)  // may hold bytes: bytes_at
        default: break
        }
        out.append(UInt8(ascii: "["))
        try out.appendString(changes[0].name)
        out.append(UInt8(ascii: ","))
        try out.appendValue(value)
        out.append(UInt8(ascii: "]"))
    }

    /// `[SQLiteStore.imageValue(image), …]`.
    static func images(_ images: [StateImage], into out: inout ByteWriter) throws(TetherError) {
        out.append(UInt8(ascii: "["))
        for (i, image) in images.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            try self.image(image, into: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// What a commit's images are written as when they follow from its
    /// change (`imageFollows`): the commonest commit, a whole value Set of a
    /// state with the default descriptor, writes its value once instead of
    /// twice, so a group of ~40 such commits fits one 4 KiB page instead
    /// of spilling into two overflow pages (docs/daemon-performance.md).
    static var derivedImages: StaticString { "0" }

    /// Whether `state`, the one state `commit` changed, is what its one
    /// change says: set whole to the same value by this commit, with the
    /// default descriptor. `SQLiteStore.decodeImages` rebuilds it so.
    static func imageFollows(from commit: Commit, _ state: StateImage) -> Bool {
        guard state.modified == commit.revision, let value = state.value, isDefault(state.descriptor),
              let written = Commit.wholeSet(commit.changes), commit.changes[0].name == state.name else { return false }
        return written == value
    }

    /// Whether `d` is the default descriptor, field by field (comparing
    /// with a `Descriptor()` made it first: part of ~115 instructions a Set).
    @inline(__always)
    private static func isDefault(_ d: Descriptor) -> Bool {
        d.type == nil && !d.readOnly && d.range == nil
    }

    /// `images([image])`.
    static func images(of image: StateImage, into out: inout ByteWriter) throws(TetherError) {
        out.append(UInt8(ascii: "["))
        try self.image(image, into: &out)
        out.append(UInt8(ascii: "]"))
    }

    private static func image(_ image: StateImage, into out: inout ByteWriter) throws(TetherError) {
        out.append(Keys.name)
        try out.appendString(image.name)
        if let value = image.value {
            out.append(Keys.storedValue)
            try out.appendValue(value)  // null included: a subscript set keeps it
            try bytesAt(of: value, &out)
            out.append(Keys.modified)
            out.appendInt(Int64(bitPattern: image.modified))
            if isDefault(image.descriptor) {
                out.append(Keys.emptyDescriptorEnd)  // every state not declared otherwise
                return
            }
            out.append(Keys.descriptor)
            var text: [UInt8] = []
            try image.descriptor.wireValue.writeJSON(into: &text)
            out.append(text)
        } else {
            out.append(Keys.removed)
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func path(_ path: JSONPointer, _ out: inout ByteWriter) throws(TetherError) {
        if path.isRoot {
            out.append(Keys.emptyString)
        } else {
            try out.appendString(path.description)
        }
    }

    /// `,"bytes_at":[…]` when the value holds bytes.
    private static func bytesAt(of value: Value, _ out: inout ByteWriter) throws(TetherError) {
        switch value {
        case .bytes, .array, .object: break
        default: return  // a scalar holds no bytes
        }
        let pointers = BytesAt.pointers(in: value)
        guard !pointers.isEmpty else { return }
        out.append(Keys.bytesAt)
        var text: [UInt8] = []
        try Value.array(pointers.map(Value.string)).writeJSON(into: &text)
        out.append(text)
    }

    /// The fixed parts (computed: a `static let` is a lazy global, checked
    /// at every use).
    private enum Keys {
        static var name: StaticString { #"{"name":"# }
        static var setPath: StaticString { #","op":"set","path":"# }
        static var removePath: StaticString { #","op":"remove","path":"# }
        static var value: StaticString { #","value":"# }
        static var bytesAt: StaticString { #","bytes_at":"# }
        static var storedValue: StaticString { #","stored":{"value":"# }
        static var modified: StaticString { #"},"modified":"# }
        static var descriptor: StaticString { #","descriptor":"# }
        static var removed: StaticString { #","removed":true"# }
        static var setRootValue: StaticString { #","op":"set","path":"","value":"# }
        static var emptyDescriptorEnd: StaticString { #","descriptor":{}}"# }
        static var emptyString: StaticString { #""""# }
    }
}
