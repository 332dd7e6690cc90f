// BytesAt.swift — bytes values on the wire: base64 strings, listed by JSON Pointer in a `bytes_at` field.

import TetherCore

/// JSON has no bytes, and Tether values do. On the wire a bytes value is
/// the base64 string Tether's JSON writer makes of it (RFC 4648, padded),
/// and the field `bytes_at` beside the value lists the JSON Pointers
/// (relative to the value) of the strings that are bytes. A client that
/// knows nothing of this sees base64 strings; one that does gets exactly
/// the value the daemon holds.
public enum BytesAt {
    /// `value` with the strings at `pointers` decoded into bytes. Errors
    /// name the entry of the list at fault ("bytes_at[1]"): not a pointer,
    /// naming nothing, not a string, not base64.
    public static func decode(_ value: Value, at pointers: [String], parameter: String) throws(VarlinkError) -> Value {
        var result = value
        for (i, text) in pointers.enumerated() {
            let entry = "\(parameter)[\(i)]"
            let pointer: JSONPointer
            do {
                pointer = try JSONPointer(parsing: text)
            } catch {
                throw .invalidParameter(entry, error.message)
            }
            guard let found = result.valueIfPresent(at: pointer) else {
                throw .invalidParameter(entry, "\(VarlinkError.quoted(text)) names nothing in the value")
            }
            guard case .string(let encoded) = found else {
                throw .invalidParameter(entry, "\(VarlinkError.quoted(text)) names \(Message.describe(found)), not a base64 string")
            }
            let bytes: [UInt8]
            do {
                bytes = try Base64.decode(encoded)
            } catch {
                throw .invalidParameter(entry, "\(VarlinkError.quoted(text)): \(error.message)")
            }
            do {
                try result.set(.bytes(bytes), at: pointer)
            } catch {
                throw .invalidParameter(entry, error.message)
            }
        }
        return result
    }

    /// The pointers of every bytes value in `value`, in document order.
    public static func pointers(in value: Value) -> [String] {
        var found: [String] = []
        var tokens: [String] = []
        collect(value, &tokens, &found)
        return found
    }

    private static func collect(_ value: Value, _ tokens: inout [String], _ found: inout [String]) {
        switch value {
        case .bytes:
            found.append(JSONPointer(tokens: tokens).description)
        case .array(let items):
            for (i, item) in items.enumerated() where item.mayHoldBytes {
                tokens.append(String(i))
                collect(item, &tokens, &found)
                tokens.removeLast()
            }
        case .object(let object):
            for (key, item) in object.members where item.mayHoldBytes {
                tokens.append(key.string)
                collect(item, &tokens, &found)
                tokens.removeLast()
            }
        default:
            return
        }
    }
}

private extension Value {
    var mayHoldBytes: Bool {
        switch self {
        case .bytes, .array, .object: true
        default: false
        }
    }
}
