// TetherMethods.swift — the typed parameters and replies of io.tether's methods, and of org.varlink.service's.

import TetherCore

// MARK: Get

public struct GetParameters: WireStruct {
    public var name: String
    public var path: JSONPointer

    public init(name: String, path: JSONPointer = .root) {
        self.name = name
        self.path = path
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["name", "path"])
        name = try f.stateName("name", limits)
        path = try f.path("path")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("name", name)
        b.set("path", path)
        return b.value
    }
}

public struct GetReply: WireStruct {
    /// The value at the path (its type is written beside it).
    public var value: Value
    /// The daemon's revision the read was made at.
    public var revision: UInt64
    /// The revision of the last commit that changed the state.
    public var modified: UInt64

    public init(value: Value, revision: UInt64, modified: UInt64) {
        self.value = value
        self.revision = revision
        self.modified = modified
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        let v = try f.value("value", bytesAt: "bytes_at")
        let type = try f.valueType("type")
        guard type == v.type else {
            throw .invalidParameter(f.name("type"), "says \(type.wireName), but the value is \(v.type.wireName)")
        }
        self.value = v
        revision = try f.revision("revision")
        modified = try f.revision("modified")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("value", value: self.value, bytesAt: "bytes_at")
        b.set("type", self.value.type)
        b.set("revision", revision)
        b.set("modified", modified)
        return b.value
    }
}

// MARK: Set, Remove, Transaction

public struct SetParameters: WireStruct {
    public var name: String
    public var path: JSONPointer
    public var value: Value
    public var tag: String?
    public var origin: UInt64?

    public init(name: String, path: JSONPointer = .root, value: Value, tag: String? = nil, origin: UInt64? = nil) {
        self.name = name
        self.path = path
        self.value = value
        self.tag = tag
        self.origin = origin
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["name", "path", "value", "bytes_at", "tag", "origin"])
        name = try f.stateName("name", limits)
        path = try f.path("path")
        self.value = try f.value("value", bytesAt: "bytes_at")
        tag = try f.optionalString("tag")
        origin = try f.optionalOrigin("origin")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("name", name)
        b.set("path", path)
        b.set("value", value: value, bytesAt: "bytes_at")
        b.set("tag", tag)
        b.set("origin", origin: origin)
        return b.value
    }
}

public struct RemoveParameters: WireStruct {
    public var name: String
    /// The root removes the state itself.
    public var path: JSONPointer
    public var tag: String?
    public var origin: UInt64?

    public init(name: String, path: JSONPointer = .root, tag: String? = nil, origin: UInt64? = nil) {
        self.name = name
        self.path = path
        self.tag = tag
        self.origin = origin
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["name", "path", "tag", "origin"])
        name = try f.stateName("name", limits)
        path = try f.path("path")
        tag = try f.optionalString("tag")
        origin = try f.optionalOrigin("origin")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("name", name)
        b.set("path", path)
        b.set("tag", tag)
        b.set("origin", origin: origin)
        return b.value
    }
}

public struct TransactionParameters: WireStruct {
    public var ops: [Op]
    public var preconditions: [Precondition]
    public var tag: String?
    public var origin: UInt64?

    public init(ops: [Op], preconditions: [Precondition] = [], tag: String? = nil, origin: UInt64? = nil) {
        self.ops = ops
        self.preconditions = preconditions
        self.tag = tag
        self.origin = origin
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["ops", "preconditions", "tag", "origin"])
        let opValues = try f.array("ops")
        if opValues.count > limits.maxOps {
            throw .limitExceeded(.ops, maximum: limits.maxOps, actual: opValues.count,
                                 "a transaction has at most \(limits.maxOps) ops; this one has \(opValues.count)")
        }
        if let count = try f.optionalArray("preconditions")?.count, count > limits.maxOps {
            throw .limitExceeded(.preconditions, maximum: limits.maxOps, actual: count,
                                 "a transaction has at most \(limits.maxOps) preconditions; this one has \(count)")
        }
        ops = try f.structs("ops") { (v, p) throws(VarlinkError) in try Op(from: v, limits: limits, parameter: p) } ?? []
        preconditions = try f.structs("preconditions") { (v, p) throws(VarlinkError) in
            try Precondition(from: v, limits: limits, parameter: p)
        } ?? []
        tag = try f.optionalString("tag")
        origin = try f.optionalOrigin("origin")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b["ops"] = .array(ops.map(\.wireValue))
        if !preconditions.isEmpty { b["preconditions"] = .array(preconditions.map(\.wireValue)) }
        b.set("tag", tag)
        b.set("origin", origin: origin)
        return b.value
    }
}

/// The reply of Set, Remove and Transaction.
public struct WriteReply: WireStruct {
    /// The commit's revision; the current revision when nothing changed.
    public var revision: UInt64
    /// False when the write left every value as it was (nothing committed).
    public var changed: Bool

    public init(revision: UInt64, changed: Bool) {
        self.revision = revision
        self.changed = changed
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        revision = try f.revision("revision")
        changed = try f.bool("changed")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("revision", revision)
        b.set("changed", changed)
        return b.value
    }
}

public typealias SetReply = WriteReply
public typealias RemoveReply = WriteReply
public typealias TransactionReply = WriteReply

// MARK: List

public struct ListParameters: WireStruct {
    public var prefix: String
    public var after: String?
    public var limit: Int?

    public init(prefix: String = "", after: String? = nil, limit: Int? = nil) {
        self.prefix = prefix
        self.after = after
        self.limit = limit
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["prefix", "after", "limit"])
        prefix = try f.optionalString("prefix") ?? ""
        after = try f.optionalString("after")
        if let n = try f.optionalInt("limit") {
            guard n >= 1 else { throw .invalidParameter(f.name("limit"), "must be at least 1 (got \(n))") }
            limit = Int(clamping: n)
        } else {
            limit = nil
        }
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        if !prefix.isEmpty { b.set("prefix", prefix) }
        b.set("after", after)
        b.set("limit", int: limit.map(Int64.init))
        return b.value
    }

    /// How many states the reply may hold: `limit`, capped by `maxList`.
    public func count(limits: Limits) -> Int { min(limit ?? limits.maxList, limits.maxList) }
}

public struct ListReply: WireStruct {
    public var states: [StateInfo]
    public var revision: UInt64
    /// More states follow: ask again with `after` set to the last name.
    public var truncated: Bool

    public init(states: [StateInfo], revision: UInt64, truncated: Bool) {
        self.states = states
        self.revision = revision
        self.truncated = truncated
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        _ = try f.array("states")
        states = try f.structs("states") { (v, p) throws(VarlinkError) in
            try StateInfo(from: v, limits: limits, parameter: p)
        } ?? []
        revision = try f.revision("revision")
        truncated = try f.bool("truncated")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b["states"] = .array(states.map(\.wireValue))
        b.set("revision", revision)
        b.set("truncated", truncated)
        return b.value
    }
}

// MARK: Describe, Declare

public struct DescribeParameters: WireStruct {
    public var name: String

    public init(name: String) {
        self.name = name
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["name"])
        name = try f.stateName("name", limits)
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("name", name)
        return b.value
    }
}

public struct DescribeReply: WireStruct {
    public var descriptor: Descriptor
    /// The type of the value the state holds now.
    public var type: ValueType
    public var modified: UInt64
    public var revision: UInt64

    public init(descriptor: Descriptor, type: ValueType, modified: UInt64, revision: UInt64) {
        self.descriptor = descriptor
        self.type = type
        self.modified = modified
        self.revision = revision
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        descriptor = try Descriptor(from: .object(try f.fields("descriptor").object), limits: limits,
                                    parameter: f.name("descriptor"))
        type = try f.valueType("type")
        modified = try f.revision("modified")
        revision = try f.revision("revision")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b["descriptor"] = descriptor.wireValue
        b.set("type", type)
        b.set("modified", modified)
        b.set("revision", revision)
        return b.value
    }
}

public struct DeclareParameters: WireStruct {
    public var name: String
    public var descriptor: Descriptor
    /// The value of the state when Declare creates it.
    public var value: Value

    public init(name: String, descriptor: Descriptor, value: Value = .null) {
        self.name = name
        self.descriptor = descriptor
        self.value = value
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["name", "descriptor", "value", "bytes_at"])
        name = try f.stateName("name", limits)
        descriptor = try Descriptor(from: .object(try f.fields("descriptor").object), limits: limits,
                                    parameter: f.name("descriptor"))
        self.value = try f.value("value", bytesAt: "bytes_at")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("name", name)
        b["descriptor"] = descriptor.wireValue
        b.set("value", value: value, bytesAt: "bytes_at")
        return b.value
    }
}

public struct DeclareReply: WireStruct {
    public var revision: UInt64
    public var created: Bool

    public init(revision: UInt64, created: Bool) {
        self.revision = revision
        self.created = created
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        revision = try f.revision("revision")
        created = try f.bool("created")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("revision", revision)
        b.set("created", created)
        return b.value
    }
}

// MARK: Watch

public struct WatchParameters: WireStruct {
    /// States watched by name (they need not exist yet).
    public var names: [String]
    /// Every state whose name starts with it ("" is every state); nil: none.
    public var prefix: String?
    public var path: JSONPointer
    /// Replay every change after this revision; nil starts with a snapshot.
    public var fromRevision: UInt64?
    /// The epoch `fromRevision` belongs to.
    public var epoch: String?

    public init(names: [String] = [], prefix: String? = nil, path: JSONPointer = .root, fromRevision: UInt64? = nil,
                epoch: String? = nil) {
        self.names = names
        self.prefix = prefix
        self.path = path
        self.fromRevision = fromRevision
        self.epoch = epoch
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["names", "prefix", "path", "from_revision", "epoch"])
        let names = try f.optionalStrings("names") ?? []
        if names.count > limits.maxNames {
            throw .limitExceeded(.names, maximum: limits.maxNames, actual: names.count,
                                 "a watch lists at most \(limits.maxNames) names; this one lists \(names.count)")
        }
        for (i, name) in names.enumerated() {
            try StateName.check(name, parameter: "\(f.name("names"))[\(i)]", limits: limits)
        }
        self.names = names
        prefix = try f.optionalString("prefix")
        if let prefix, !prefix.isEmpty {
            try StateName.check(prefix, parameter: f.name("prefix"), limits: limits)
        }
        if names.isEmpty && prefix == nil {
            throw .invalidParameter(f.name("names"), "a watch needs names, a prefix, or both (\"prefix\": \"\" watches every state)")
        }
        path = try f.path("path")
        fromRevision = try f.optionalRevision("from_revision")
        epoch = try f.optionalString("epoch")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        if !names.isEmpty { b["names"] = .array(names.map(Value.string)) }
        b.set("prefix", prefix)
        b.set("path", path)
        b.set("from_revision", fromRevision)
        b.set("epoch", epoch)
        return b.value
    }

    /// Whether the watch covers the state `name`.
    public func covers(_ name: String) -> Bool {
        if let prefix, StateName.has(name, prefix: prefix) { return true }
        return names.contains(name)
    }
}

public struct WatchReply: WireStruct {
    public enum Event: Sendable, Equatable {
        /// One state's current value at `revision`; `resync` when it
        /// replaces a history the daemon no longer has.
        case snapshot(Entry, resync: Bool)
        /// The changes of the commit `revision` to the watched states, with
        /// the commit's tag and origin.
        case change([Change], tag: String?, origin: UInt64?)
        /// Everything up to `revision` has been sent; `resync` when it ends
        /// a resync's snapshot (which may hold no state at all).
        case progress(resync: Bool)
    }

    enum Kind: String, CaseIterable { case snapshot, change, progress }

    public var event: Event
    public var revision: UInt64
    /// The daemon's epoch: revisions of another epoch are not comparable.
    public var epoch: String

    public init(event: Event, revision: UInt64, epoch: String) {
        self.event = event
        self.revision = revision
        self.epoch = epoch
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        revision = try f.revision("revision")
        epoch = try f.string("epoch")
        switch try f.enumeration("event", Kind.self) {
        case .snapshot:
            let entry = try Entry(from: .object(try f.fields("state").object), limits: limits, parameter: f.name("state"))
            event = .snapshot(entry, resync: try f.optionalBool("resync") ?? false)
        case .change:
            _ = try f.array("changes")
            let changes = try f.structs("changes") { (v, p) throws(VarlinkError) in
                try Change(from: v, limits: limits, parameter: p)
            } ?? []
            event = .change(changes, tag: try f.optionalString("tag"), origin: try f.optionalOrigin("origin"))
        case .progress:
            event = .progress(resync: try f.optionalBool("resync") ?? false)
        }
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        switch event {
        case .snapshot(let entry, let resync):
            b["event"] = .string(Kind.snapshot.rawValue)
            b.set("revision", revision)
            b.set("epoch", epoch)
            b["state"] = entry.wireValue
            if resync { b.set("resync", true) }
        case .change(let changes, let tag, let origin):
            b["event"] = .string(Kind.change.rawValue)
            b.set("revision", revision)
            b.set("epoch", epoch)
            b["changes"] = .array(changes.map(\.wireValue))
            b.set("tag", tag)
            b.set("origin", origin: origin)
        case .progress(let resync):
            b["event"] = .string(Kind.progress.rawValue)
            b.set("revision", revision)
            b.set("epoch", epoch)
            if resync { b.set("resync", true) }
        }
        return b.value
    }
}

// MARK: Snapshot and Compact

public struct SnapshotParameters: WireStruct {
    /// Where the copy goes, on the daemon's machine.
    public var path: String

    public init(path: String) {
        self.path = path
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["path"])
        path = try f.string("path")
        if !path.hasPrefix("/") {
            throw .invalidParameter(f.name("path"), "must be an absolute path on the daemon's machine")
        }
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("path", path)
        return b.value
    }
}

public struct SnapshotReply: WireStruct {
    public var revision: UInt64
    public var bytes: UInt64

    public init(revision: UInt64, bytes: UInt64) {
        self.revision = revision
        self.bytes = bytes
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        revision = try f.revision("revision")
        bytes = try f.revision("bytes")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("revision", revision)
        b.set("bytes", bytes)
        return b.value
    }
}

public struct CompactParameters: WireStruct {
    /// Forget the commits up to this one; nil: all but the newest.
    public var revision: UInt64?

    public init(revision: UInt64? = nil) {
        self.revision = revision
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["revision"])
        revision = try f.optionalRevision("revision")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("revision", revision)
        return b.value
    }
}

public struct CompactReply: WireStruct {
    public var oldestRevision: UInt64

    public init(oldestRevision: UInt64) {
        self.oldestRevision = oldestRevision
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        oldestRevision = try f.revision("oldest_revision")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("oldest_revision", oldestRevision)
        return b.value
    }
}

// MARK: Stats, and methods without parameters

/// The parameters of a method that takes none (Stats, GetInfo).
public struct NoParameters: WireStruct {
    public init() {}

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown([])
    }

    public var wireValue: Value { .object(ValueObject()) }
}

public typealias StatsParameters = NoParameters
public typealias MetricsParameters = NoParameters

// MARK: Watchers

public struct WatchersParameters: WireStruct, Equatable {
    public var prefix: String?

    public init(prefix: String? = nil) { self.prefix = prefix }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["prefix"])
        prefix = try f.optionalString("prefix")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("prefix", prefix)
        return b.value
    }
}

/// One watching connection (io.tether `WatcherInfo`).
public struct WatcherInfo: WireStruct, Equatable {
    public var pid: Int64
    public var uid: Int64
    public var command: String
    public var names: [String]
    public var prefix: String?
    public var path: String?

    public init(pid: Int64, uid: Int64, command: String, names: [String], prefix: String?, path: String?) {
        self.pid = pid
        self.uid = uid
        self.command = command
        self.names = names
        self.prefix = prefix
        self.path = path
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        guard let pid = try f.optionalInt("pid"), let uid = try f.optionalInt("uid") else {
            throw .invalidParameter(f.name("pid"), "pid and uid are required")
        }
        self.pid = pid
        self.uid = uid
        command = try f.string("command")
        _ = try f.array("names")
        names = try f.optionalStrings("names") ?? []
        prefix = try f.optionalString("prefix")
        path = try f.optionalString("path")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("pid", int: pid)
        b.set("uid", int: uid)
        b.set("command", command)
        b["names"] = .array(names.map(Value.string))
        b.set("prefix", prefix)
        b.set("path", path)
        return b.value
    }
}

public struct WatchersReply: WireStruct, Equatable {
    public var watchers: [WatcherInfo]
    public var truncated: Bool

    public init(watchers: [WatcherInfo], truncated: Bool) {
        self.watchers = watchers
        self.truncated = truncated
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        _ = try f.array("watchers")
        watchers = try f.structs("watchers") { (v, p) throws(VarlinkError) in
            try WatcherInfo(from: v, limits: limits, parameter: p)
        } ?? []
        truncated = try f.bool("truncated")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b["watchers"] = .array(watchers.map(\.wireValue))
        b.set("truncated", truncated)
        return b.value
    }
}

/// io.tether.Metrics' reply: the Prometheus text.
public struct MetricsReply: WireStruct {
    public var text: String

    public init(text: String) { self.text = text }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        text = try f.string("text")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("text", text)
        return b.value
    }
}

public struct StatsReply: WireStruct {
    public var revision: UInt64
    public var epoch: String
    public var states: UInt64
    public var connections: UInt64
    public var watches: UInt64
    /// A watch can resume from this revision or any later one.
    public var oldestRevision: UInt64
    public var limits: Limits

    public init(revision: UInt64, epoch: String, states: UInt64, connections: UInt64, watches: UInt64,
                oldestRevision: UInt64, limits: Limits) {
        self.revision = revision
        self.epoch = epoch
        self.states = states
        self.connections = connections
        self.watches = watches
        self.oldestRevision = oldestRevision
        self.limits = limits
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        revision = try f.revision("revision")
        epoch = try f.string("epoch")
        states = try f.revision("states")
        connections = try f.revision("connections")
        watches = try f.revision("watches")
        oldestRevision = try f.revision("oldest_revision")
        self.limits = try Limits(from: .object(try f.fields("limits").object), parameter: f.name("limits"))
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("revision", revision)
        b.set("epoch", epoch)
        b.set("states", states)
        b.set("connections", connections)
        b.set("watches", watches)
        b.set("oldest_revision", oldestRevision)
        b["limits"] = limits.wireValue
        return b.value
    }
}

// MARK: org.varlink.service

public typealias GetInfoParameters = NoParameters

public struct GetInfoReply: WireStruct {
    public var vendor: String
    public var product: String
    public var version: String
    public var url: String
    public var interfaces: [String]

    public init(vendor: String, product: String, version: String, url: String, interfaces: [String]) {
        self.vendor = vendor
        self.product = product
        self.version = version
        self.url = url
        self.interfaces = interfaces
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        vendor = try f.string("vendor")
        product = try f.string("product")
        version = try f.string("version")
        url = try f.string("url")
        _ = try f.array("interfaces")
        interfaces = try f.optionalStrings("interfaces") ?? []
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("vendor", vendor)
        b.set("product", product)
        b.set("version", version)
        b.set("url", url)
        b["interfaces"] = .array(interfaces.map(Value.string))
        return b.value
    }
}

public struct GetInterfaceDescriptionParameters: WireStruct {
    public var interface: String

    public init(interface: String) {
        self.interface = interface
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        try f.rejectUnknown(["interface"])
        interface = try f.string("interface")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("interface", interface)
        return b.value
    }
}

public struct GetInterfaceDescriptionReply: WireStruct {
    public var description: String

    public init(description: String) {
        self.description = description
    }

    public init(from value: Value, limits: Limits, parameter: String) throws(VarlinkError) {
        let f = try Fields(value, parameter: parameter)
        description = try f.string("description")
    }

    public var wireValue: Value {
        var b = ObjectBuilder()
        b.set("description", description)
        return b.value
    }
}
