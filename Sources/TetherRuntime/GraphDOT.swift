import TetherCore

// The runtime's graph as Graphviz DOT (tether_runtime_graph_dot,
// Runtime.graph()). The shape is copied under the lock (Graph.picture plus
// the runtime's bindings and scopes) and written after letting go of it, so
// a picture of a large graph does not hold up writers while it is spelled.
//
// Every node's DOT id is its handle ("0x..."), unique in the runtime; its
// label is the state's descriptor name where one is set, else its kind and
// handle. Attributes starting with tether_ carry the same facts for
// programs (dot -Tjson passes them through): tether_kind, tether_handle,
// tether_name, tether_marks; edges carry tether_edge ("reads", "observes",
// "binds", "owns") and tether_pointer (the JSON Pointer read; absent for a
// whole-value read).

/// A copy of the runtime's objects, taken under its lock.
struct RuntimeShape {
    var picture: GraphPicture
    var slot: Int
    var bindings: [(handle: UInt64, source: UInt64, pointer: String)] = []
    var scopes: [(handle: UInt64, members: [UInt64])] = []
}

extension Runtimes {
    /// The runtime's graph as DOT text. Any thread, inside callbacks too.
    package static func graphDOT(_ rt: UInt64) throws(TetherError) -> String {
        let engine = try acquire(rt, .runtime)
        let shape = engine.shapeLocked()
        engine.lock.unlock()
        return DOTWriter.write(shape)
    }
}

extension Runtimes {
    package static func liveStates(_ rt: UInt64) throws(TetherError) -> Int {
        let engine = try acquire(rt, .runtime)
        defer { engine.lock.unlock() }
        return engine.graph.liveStates
    }
}

extension Engine {
    /// `lock` held.
    func shapeLocked() -> RuntimeShape {
        var shape = RuntimeShape(picture: graph.picture(), slot: slotIndex)
        let slot = slotIndex
        bindings.forEach { index, generation, record in
            let source: UInt64
            switch record.source {
            case let .state(s), let .constant(s): source = HandleCodec.state(slot, s)
            case let .custom(d, _): source = HandleCodec.derived(slot, .computed, d)
            }
            shape.bindings.append((HandleCodec.encode(slot: slot, kind: .binding, index: index, generation: generation),
                                   source, record.path.description))
        }
        scopes.forEach { index, generation, record in
            shape.scopes.append((HandleCodec.encode(slot: slot, kind: .scope, index: index, generation: generation),
                                 record.members.filter { isLive($0) }))
        }
        return shape
    }
}

enum DOTWriter {
    static func write(_ shape: RuntimeShape) -> String {
        var out = "digraph tether {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=11];\n"
        out += "  edge [fontname=\"Helvetica\", fontsize=9];\n"
        // Handles by (kind, index): edges name their ends that way.
        var handles: [String: UInt64] = [:]
        for node in shape.picture.nodes {
            let h = HandleCodec.encode(slot: shape.slot, kind: handleKind(node.kind), index: node.index,
                                       generation: node.generation)
            handles[key(node.kind, node.index)] = h
            writeNode(&out, handle: h, kind: handleKind(node.kind), name: node.name, marks: markWords(node.marks),
                      extra: node.bindingGet ? "custom binding get" : nil)
            if node.ownedScope != 0 { writeEdge(&out, from: h, to: node.ownedScope, edge: "owns", pointer: nil) }
        }
        for b in shape.bindings {
            writeNode(&out, handle: b.handle, kind: .binding, name: nil, marks: [], extra: nil)
            writeEdge(&out, from: b.source, to: b.handle, edge: "binds", pointer: b.pointer)
        }
        for s in shape.scopes {
            writeNode(&out, handle: s.handle, kind: .scope, name: nil, marks: [], extra: nil)
            for member in s.members { writeEdge(&out, from: s.handle, to: member, edge: "owns", pointer: nil) }
        }
        for e in shape.picture.edges {
            guard let from = handles[key(e.source.kind, e.source.index)],
                  let to = handles[key(e.reader.kind, e.reader.index)] else { continue }
            writeEdge(&out, from: from, to: to, edge: e.reader.kind == .observer ? "observes" : "reads", pointer: e.pointer)
        }
        out += "}\n"
        return out
    }

    private static func key(_ kind: GraphPicture.Kind, _ index: UInt32) -> String { "\(kind)#\(index)" }

    private static func handleKind(_ kind: GraphPicture.Kind) -> HandleKind {
        switch kind {
        case .state: return .state
        case .computed: return .computed
        case .effect: return .effect
        case .tracking: return .tracking
        case .observer: return .observer
        }
    }

    private static func markWords(_ marks: GraphPicture.Marks) -> [String] {
        var words: [String] = []
        if marks.contains(.stale) { words.append("stale") }
        if marks.contains(.fresh) { words.append("fresh") }
        if marks.contains(.queued) { words.append("queued") }
        if marks.contains(.failed) { words.append("failed") }
        if marks.contains(.remote) { words.append("remote") }
        if marks.contains(.readOnly) { words.append("read-only") }
        return words
    }

    private static func shape(of kind: HandleKind) -> String {
        switch kind {
        case .state: return "box"
        case .computed: return "ellipse"
        case .effect: return "hexagon"
        case .tracking: return "octagon"
        case .observer: return "note"
        case .binding: return "cds"
        default: return "folder"
        }
    }

    private static func writeNode(_ out: inout String, handle: UInt64, kind: HandleKind, name: String?,
                                  marks: [String], extra: String?) {
        let handleText = hexHandle(handle)
        var label = name ?? "\(kind.noun) \(handleText)"
        if let extra { label += "\n(\(extra))" }
        // Waiting to be brought up to date: drawn dashed and red.
        let dirty = marks.contains { $0 == "stale" || $0 == "fresh" || $0 == "queued" || $0 == "failed" }
        if !marks.isEmpty { label += "\n[" + marks.joined(separator: ", ") + "]" }
        out += "  \(quoted(handleText)) [label=\(quoted(label)), shape=\(shape(of: kind))"
        if dirty { out += ", style=\"dashed,bold\", color=\"red\"" }
        out += ", tether_kind=\(quoted(kind.noun)), tether_handle=\(quoted(handleText))"
        if let name { out += ", tether_name=\(quoted(name))" }
        if !marks.isEmpty { out += ", tether_marks=\(quoted(marks.joined(separator: " ")))" }
        out += "];\n"
    }

    private static func writeEdge(_ out: inout String, from: UInt64, to: UInt64, edge: String, pointer: String?) {
        out += "  \(quoted(hexHandle(from))) -> \(quoted(hexHandle(to))) ["
        if edge == "owns" { out += "style=dotted, label=\"owns\", " }
        if let pointer, !pointer.isEmpty { out += "label=\(quoted(pointer)), tether_pointer=\(quoted(pointer)), " }
        out += "tether_edge=\(quoted(edge))];\n"
    }

    static func quoted(_ s: String) -> String { DOTText.quoted(s) }
}
