import TetherCore
import TetherDaemon
import TetherWire

/// tetherd's keys in etcd (one cluster, or one prefix of it, per Tether
/// domain) and what each holds, as compact JSON:
///
/// | key | value |
/// |---|---|
/// | `/tether/meta/epoch` | the epoch, 16 hex digits; its create revision is the base |
/// | `/tether/s/NAME` | the state: a TetherWire.Change setting its whole value (`name`, `value`, `bytes_at`) |
/// | `/tether/d/NAME` | its descriptor, when it has one |
/// | `/tether/c` | the commit record every commit writes: host, sequence, tag, origin and, unless the state events say it all, the changes |
///
/// A state's etcd `mod_revision` minus the base is its `modified`; the
/// cluster's revision minus the base is the daemon's revision, as long
/// as only tetherds write the cluster.
///
/// Everything read from etcd is checked as a peer's bytes are: a value
/// that does not parse, or breaks a limit, is refused with the key named.
enum EtcdKeys {
    static let root = "/tether/"
    static let epoch = "/tether/meta/epoch"
    static let statePrefix = "/tether/s/"
    static let descriptorPrefix = "/tether/d/"
    static let commit = "/tether/c"

    static func state(_ name: String) -> [UInt8] { Array((statePrefix + name).utf8) }
    static func descriptor(_ name: String) -> [UInt8] { Array((descriptorPrefix + name).utf8) }

    /// The end of the range of keys starting with `prefix` (etcd's
    /// `range_end`: the prefix with its last byte plus one).
    static func rangeEnd(_ prefix: String) -> [UInt8] {
        var bytes = Array(prefix.utf8)
        bytes[bytes.count - 1] += 1
        return bytes
    }

    /// What a key under the root is.
    enum Kind {
        case state(String)
        case descriptor(String)
        case commit
        case other
    }

    static func kind(of key: [UInt8]) -> Kind {
        let text = String(decoding: key, as: UTF8.self)
        if text == commit { return .commit }
        if text.hasPrefix(statePrefix) { return .state(String(text.dropFirst(statePrefix.count))) }
        if text.hasPrefix(descriptorPrefix) { return .descriptor(String(text.dropFirst(descriptorPrefix.count))) }
        return .other
    }
}

/// The JSON of each key's value.
enum EtcdCodec {
    /// An error's own words.
    static func describe(_ error: Error) -> String {
        if let e = error as? TetherError { return e.message }
        if let e = error as? VarlinkError { return e.detail }
        return "\(error)"
    }

    static func json(_ value: Value) throws(TetherError) -> [UInt8] {
        var out: [UInt8] = []
        try value.writeJSON(into: &out)
        return out
    }

    static func parse(_ bytes: [UInt8], limits: Limits, what: String) throws(TetherError) -> Value {
        guard bytes.count <= limits.maxMessage else {
            throw TetherError(.outOfRange, "etcd holds \(bytes.count) bytes at \(what), more than a message may (\(limits.maxMessage))")
        }
        do {
            return try bytes.withUnsafeBytes { raw throws(TetherError) in try Value(json: raw, maxDepth: limits.maxDepth) }
        } catch {
            throw TetherError(.badJSON, "etcd's value at \(what) is not JSON tetherd wrote: \(EtcdCodec.describe(error))")
        }
    }

    static func encodeState(_ name: String, _ value: Value) throws(TetherError) -> [UInt8] {
        try json(TetherWire.Change(name: name, write: .set(value)).wireValue)
    }

    static func decodeState(_ name: String, _ bytes: [UInt8], limits: Limits) throws(TetherError) -> Value {
        let what = EtcdKeys.statePrefix + name
        let change: TetherWire.Change
        do {
            change = try TetherWire.Change(from: try parse(bytes, limits: limits, what: what), limits: limits)
        } catch {
            throw TetherError(.badJSON, "etcd's value at \(what) is not a state: \(EtcdCodec.describe(error))")
        }
        guard change.name == name, change.path.isRoot, case .set(let value) = change.write else {
            throw TetherError(.badJSON, "etcd's value at \(what) is not a state of that name")
        }
        return value
    }

    static func encodeDescriptor(_ descriptor: Descriptor) throws(TetherError) -> [UInt8] {
        try json(descriptor.wireValue)
    }

    static func decodeDescriptor(_ name: String, _ bytes: [UInt8], limits: Limits) throws(TetherError) -> Descriptor {
        let what = EtcdKeys.descriptorPrefix + name
        do {
            return try Descriptor(from: try parse(bytes, limits: limits, what: what), limits: limits)
        } catch {
            throw TetherError(.badJSON, "etcd's value at \(what) is not a descriptor: \(EtcdCodec.describe(error))")
        }
    }

    /// A commit's record: who made it (host, sequence), its tag and
    /// origin, and its changes unless they are whole Sets and Removes of
    /// distinct states (then the state events say the same).
    struct Record {
        var host: String
        var sequence: UInt64
        var tag: String?
        var origin: UInt64?
        var changes: [TetherWire.Change]?
    }

    static func encodeRecord(_ record: Record) throws(TetherError) -> [UInt8] {
        var members: [(String, Value)] = [("h", .string(record.host)), ("s", .int(Int64(bitPattern: record.sequence)))]
        if let tag = record.tag { members.append(("t", .string(tag))) }
        if let origin = record.origin { members.append(("o", .int(Int64(bitPattern: origin)))) }
        if let changes = record.changes { members.append(("c", .array(changes.map(\.wireValue)))) }
        var object = ValueObject()
        for (key, value) in members { object[key] = value }
        return try json(.object(object))
    }

    static func decodeRecord(_ bytes: [UInt8], limits: Limits) throws(TetherError) -> Record {
        guard case .object(let object) = try parse(bytes, limits: limits, what: EtcdKeys.commit) else {
            throw TetherError(.badJSON, "etcd's commit record is not an object")
        }
        guard case .string(let host)? = object["h"], case .int(let sequence)? = object["s"] else {
            throw TetherError(.badJSON, "etcd's commit record has no host and sequence")
        }
        var record = Record(host: host, sequence: UInt64(bitPattern: sequence))
        if case .string(let tag)? = object["t"] { record.tag = tag }
        if case .int(let origin)? = object["o"] { record.origin = UInt64(bitPattern: origin) }
        if let list = object["c"] {
            guard case .array(let items) = list, items.count <= limits.maxOps else {
                throw TetherError(.badJSON, "etcd's commit record has a change list tetherd did not write")
            }
            var changes: [TetherWire.Change] = []
            for (i, item) in items.enumerated() {
                do {
                    changes.append(try TetherWire.Change(from: item, limits: limits, parameter: "c[\(i)]"))
                } catch {
                    throw TetherError(.badJSON, "etcd's commit record: change \(i): \(EtcdCodec.describe(error))")
                }
            }
            record.changes = changes
        }
        return record
    }

    /// Whether `changes` are exactly whole Sets and Removes of distinct
    /// states (the record then leaves them out: the state events say it).
    static func stateEventsSayAll(_ changes: [TetherWire.Change]) -> Bool {
        var names = Set<String>()
        for change in changes {
            guard change.path.isRoot, names.insert(change.name).inserted else { return false }
        }
        return true
    }
}
