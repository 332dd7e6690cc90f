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
/// order, to make room. Gets at a path, and
/// Watch snapshots, encode the value as before.
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
        encodedBytes -= bytes.count
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
        guard r.sizeBound >= encodedMinimum else { return false }
        if let fragment = r.encoded, r.encodedModified == r.modified {
            append(fragment, revision: revision, modified: r.modified, to: &out)
            return true
        }
        dropEncoded(r)
        let value: Value
        do { value = try r.value } catch { throw VarlinkError(error, name: name) }
        guard let fragment = Store.fragment(of: value) else { return false }
        append(fragment, revision: revision, modified: r.modified, to: &out)
        if fragment.count >= encodedMinimum && fragment.count <= encodedLimit {
            makeRoom(for: fragment.count)
            r.encoded = fragment
            r.encodedModified = r.modified
            encodedBytes += fragment.count
            encodedRecords[ObjectIdentifier(r)] = r
        }
        return true
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
        if value == .null { return nil }
        var out: [UInt8] = []
        out.append(contentsOf: #""value":"#.utf8)
        do {
            try value.writeJSON(into: &out)
            let pointers = BytesAt.pointers(in: value)
            if !pointers.isEmpty {
                out.append(contentsOf: #","bytes_at":"#.utf8)
                try Value.array(pointers.map(Value.string)).writeJSON(into: &out)
            }
            out.append(contentsOf: #","type":"#.utf8)
            try Value.string(value.type.wireName).writeJSON(into: &out)
        } catch {
            return nil
        }
        return out
    }

    /// `{"parameters":{` fragment `,"revision":R,"modified":M}}` and the NUL.
    private func append(_ fragment: [UInt8], revision: UInt64, modified: UInt64, to out: inout [UInt8]) {
        out.append(contentsOf: #"{"parameters":{"#.utf8)
        out.append(contentsOf: fragment)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 96) { buffer in
            let p = buffer.baseAddress!
            var n = Store.copy(#","revision":"#, to: p)
            // Past Int64, Int64.max, as wireInt writes it.
            n += JSONBytes.writeInt(Int64(exactly: revision) ?? .max, at: p + n)
            n += Store.copy(#","modified":"#, to: p + n)
            n += JSONBytes.writeInt(Int64(exactly: modified) ?? .max, at: p + n)
            p[n] = UInt8(ascii: "}")
            p[n + 1] = UInt8(ascii: "}")
            p[n + 2] = 0
            out.append(contentsOf: UnsafeBufferPointer(start: p, count: n + 3))
        }
    }

    private static func copy(_ text: StaticString, to p: UnsafeMutablePointer<UInt8>) -> Int {
        p.initialize(from: text.utf8Start, count: text.utf8CodeUnitCount)
        return text.utf8CodeUnitCount
    }
}
