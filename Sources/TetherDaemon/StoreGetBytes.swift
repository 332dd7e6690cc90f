import TetherCore
import TetherWire

extension Store {
    /// Appends the reply to a Get of the whole of `name` (with its NUL)
    /// as `MessageEncoder` writes `Reply(parameters: get(name, at: .root)
    /// .parameters)`, without a `Value` tree for it (`SimpleGetCall`);
    /// returns false, appending nothing, for a reply that must go the
    /// ordinary way (a null value, whose reply has no "value"; a value the
    /// writer refuses, whose error that way gives). Big values use their
    /// kept encoding (EncodedValues.swift). The errors are `get`'s.
    func appendGet(_ name: String, to out: inout [UInt8]) throws(VarlinkError) -> Bool {
        guard let r = records[name] else { throw missingState(name) }
        if let fragment = try keptFragment(r) {  // big values: their kept encoding (appendWholeGet's)
            Store.appendGetReply(fragment, revision: revision, modified: r.modified, to: &out)
            return true
        }
        let value: Value
        do { value = try r.value } catch { throw VarlinkError(error, name: name) }
        let start = out.count
        out.append(contentsOf: #"{"parameters":{"#.utf8)
        guard Store.appendFragment(of: value, to: &out) else {
            out.removeSubrange(start...)
            return false
        }
        Store.appendGetReplyTail(revision: revision, modified: r.modified, to: &out)
        return true
    }
}
