import TetherCore
import TetherWire

/// Whole-state Gets of big values answered from bytes encoded once (issue
/// 30 §4: an 80,000-member Get within 2× a Get of one string of the same
/// bytes).
///
/// Writing a `Value` tree as JSON costs per member (~57 ns a member of
/// strings), a string of the same bytes is one copy. So the Get reply's
/// part that depends only on the value, its fragment
/// `"value":…[,"bytes_at":[…]],"type":"…"`, is kept beside the state
/// after the first whole-state Get that follows a write, and the next
/// Gets copy it between the reply's head and its revisions, which are
/// written by hand (as `WriteReplyBytes` writes a Set's reply). The bytes
/// are those `MessageEncoder.append(Reply(parameters: GetReply…))` writes
/// (EncodedValuesTests compare them for many values).
///
/// Never stale: a fragment is used only while the record's `modified` is
/// the one it was made at, and it is dropped (its bytes no longer
/// counted) wherever a value changes: `setWhole`, a transaction's
/// `install`, a Declare that converts the value, and `delete` (a Remove,
/// a record replaced, a refused group's rollback, a quarantine); records
/// made by `restore`, Declare or a rollback start without one.
///
/// Bounded: only values whose size bound is at least `defaultEncodedMinimum`
/// bytes go this way (a small value's Get stays as it was), and the
/// fragments kept weigh at most `defaultEncodedLimit` bytes in all (64 MiB,
/// whatever the number of states: the daemon's memory grows by at most
/// that); past it, fragments kept earlier are dropped, in no particular
/// order, to make room. A Watch's snapshot reply of a whole state uses
/// (and keeps) the same fragment; Gets and snapshots at a path encode the
/// value as before.
extension Store {
    /// Values smaller than this (their size bound; the fragment itself
    /// too) are encoded at each Get (`encodedMinimum`, lowered by tests).
    public static let defaultEncodedMinimum = 4 << 10
    /// The bytes of every fragment kept, at most (`encodedLimit`).
    public static let defaultEncodedLimit = 64 << 20

    /// Forgets the fragment `r` keeps, if any.
    @inline(__always)
    func dropEncoded(_ r: StateRecord) {
        guard let bytes = r.encoded else { return }
        encodedBytes -= bytes.capacity
        r.encoded = nil
        encodedRecords[ObjectIdentifier(r)] = nil
    }

    /// Appends the reply to a Get of the whole of `name`, with its NUL,
    /// when the state's value is big enough to go this way; returns false
    /// (and appends nothing) otherwise: the caller answers as before. The
    /// errors are `get`'s.
    func appendWholeGet(_ name: String, to out: inout [UInt8]) throws(VarlinkError) -> Bool {
        guard keepsEncodedValues else { return false }
        guard let r = records[name] else { throw missingState(name) }
        guard let fragment = try keptFragment(r) else { return false }
        Store.appendGetReply(fragment, revision: revision, modified: r.modified, to: &out)
        return true
    }

    /// The fragment of `r`'s value: the one kept, else made now (and kept
    /// when it is big enough and fits); nil when the value is too small
    /// to go this way, or is one the ordinary path must write (null, a
    /// value the writer refuses). Throws what reading the value throws.
    func keptFragment(_ r: StateRecord) throws(VarlinkError) -> [UInt8]? {
        guard keepsEncodedValues, r.sizeBound >= encodedMinimum else { return nil }
        if let fragment = r.encoded, r.encodedModified == r.modified { return fragment }
        dropEncoded(r)
        let value: Value
        do { value = try r.value } catch { throw VarlinkError(error, name: r.name) }
        guard let fragment = Store.fragment(of: value) else { return nil }
        // Counted at its capacity: the writer's array grew by doubling, and
        // its slack is memory kept too.
        if fragment.count >= encodedMinimum && fragment.capacity <= encodedLimit {
            makeRoom(for: fragment.capacity)
            r.encoded = fragment
            r.encodedModified = r.modified
            encodedBytes += fragment.capacity
            encodedRecords[ObjectIdentifier(r)] = r
        }
        return fragment
    }

    /// Drops kept fragments until `n` more bytes fit under the limit.
    private func makeRoom(for n: Int) {
        while encodedBytes + n > encodedLimit, let (_, r) = encodedRecords.first {
            dropEncoded(r)
        }
    }

    /// `"value":…[,"bytes_at":[…]],"type":"…"` for `value` as GetReply's
    /// `wireValue` and the JSON writer make it; nil for what does not go
    /// this way (null, whose reply has no "value"; a value the writer
    /// refuses, whose error the ordinary path gives).
    static func fragment(of value: Value) -> [UInt8]? {
        var out: [UInt8] = []
        return appendFragment(of: value, to: &out) ? out : nil
    }

    /// Appends `fragment(of: value)` to `out`; false, with nothing
    /// appended, for what does not go this way.
    static func appendFragment(of value: Value, to out: inout [UInt8]) -> Bool {
        if case .null = value { return false }
        let start = out.count
        out.append(contentsOf: #""value":"#.utf8)
        // A scalar, what most states hold, is written directly: through the
        // general writer (its stack of levels, a second write for the type's
        // name, the search for bytes) a Get of an int cost 1,254
        // instructions here (callgrind, `profile_tetherd.py get`).
        switch value {
        case .int(let n): JSONWriter.writeInt(n, into: &out)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .double(let d) where d.isFinite: JSONWriter.writeDouble(d, into: &out)
        case .string(let s): JSONWriter.writeString(s, into: &out)
        default:
            do {
                try value.writeJSON(into: &out)
                let pointers = BytesAt.pointers(in: value)
                if !pointers.isEmpty {
                    out.append(contentsOf: #","bytes_at":"#.utf8)
                    try Value.array(pointers.map(Value.string)).writeJSON(into: &out)
                }
            } catch {
                out.removeSubrange(start...)
                return false
            }
        }
        let tail = typeTail(value.type)
        out.append(contentsOf: UnsafeBufferPointer(start: tail.utf8Start, count: tail.utf8CodeUnitCount))
        return true
    }

    /// `,"type":"…"` as constant bytes: the type's `wireName` appended as a
    /// `String` cost a Get ~200 instructions.
    private static func typeTail(_ type: ValueType) -> StaticString {
        switch type {
        case .null: #","type":"null""#
        case .bool: #","type":"bool""#
        case .int: #","type":"int""#
        case .double: #","type":"double""#
        case .string: #","type":"string""#
        case .bytes: #","type":"bytes""#
        case .array: #","type":"array""#
        case .object: #","type":"object""#
        }
    }

    /// `{"parameters":{` fragment `,"revision":R,"modified":M}}` and the
    /// NUL: a GetReply's reply as `MessageEncoder` writes it.
    static func appendGetReply(_ fragment: [UInt8], revision: UInt64, modified: UInt64, to out: inout [UInt8]) {
        // Room for the whole reply at once (growing geometrically): else
        // the fragment's append sizes the buffer to it, and the tail's
        // reallocates and copies it again.
        out.reserveGrowing(fragment.count + 128)
        out.append(contentsOf: #"{"parameters":{"#.utf8)
        out.append(contentsOf: fragment)
        appendGetReplyTail(revision: revision, modified: modified, to: &out)
    }

    /// `,"revision":R,"modified":M}}` and the NUL: a Get reply's end.
    static func appendGetReplyTail(revision: UInt64, modified: UInt64, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 96) { buffer in
            let p = buffer.baseAddress!
            var n = copy(#","revision":"#, to: p)
            n += writeWireInt(revision, at: p + n)
            n += copy(#","modified":"#, to: p + n)
            n += writeWireInt(modified, at: p + n)
            p[n] = UInt8(ascii: "}")
            p[n + 1] = UInt8(ascii: "}")
            p[n + 2] = 0
            out.append(contentsOf: UnsafeBufferPointer(start: p, count: n + 3))
        }
    }

    /// A watch's snapshot reply of a whole state that exists, as
    /// `MessageEncoder` writes `Reply(parameters: WatchReply(event:
    /// .snapshot(Entry(…), resync:)…).parameters, continues: true)`:
    /// `{"parameters":{"event":"snapshot","revision":R,"epoch":"…","state":
    /// {"name":"…","exists":true,` fragment `,"modified":M}[,"resync":true]},
    /// "continues":true}` and the NUL.
    static func appendSnapshotReply(_ fragment: [UInt8], name: String, revision: UInt64, epoch: String,
                                    modified: UInt64, resync: Bool, to out: inout [UInt8]) throws(TetherError) {
        var head: [UInt8] = []
        head.append(contentsOf: #"{"parameters":{"event":"snapshot","revision":"#.utf8)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: JSONBytes.maxIntBytes) { buffer in
            let n = writeWireInt(revision, at: buffer.baseAddress!)
            head.append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress!, count: n))
        }
        head.append(contentsOf: #","epoch":"#.utf8)
        try Value.string(epoch).writeJSON(into: &head)
        head.append(contentsOf: #","state":{"name":"#.utf8)
        try Value.string(name).writeJSON(into: &head)
        head.append(contentsOf: #","exists":true,"#.utf8)
        out.reserveGrowing(head.count + fragment.count + 128)
        out.append(contentsOf: head)
        out.append(contentsOf: fragment)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 96) { buffer in
            let p = buffer.baseAddress!
            var n = copy(#","modified":"#, to: p)
            n += writeWireInt(modified, at: p + n)
            n += copy(resync ? #"},"resync":true},"continues":true}"# : #"}},"continues":true}"#, to: p + n)
            p[n] = 0
            out.append(contentsOf: UnsafeBufferPointer(start: p, count: n + 1))
        }
    }

    /// A revision as `wireInt` makes it (past Int64, Int64.max), written
    /// as the JSON writer writes an int.
    private static func writeWireInt(_ n: UInt64, at p: UnsafeMutablePointer<UInt8>) -> Int {
        JSONBytes.writeInt(Int64(exactly: n) ?? .max, at: p)
    }

    private static func copy(_ text: StaticString, to p: UnsafeMutablePointer<UInt8>) -> Int {
        p.initialize(from: text.utf8Start, count: text.utf8CodeUnitCount)
        return text.utf8CodeUnitCount
    }
}
