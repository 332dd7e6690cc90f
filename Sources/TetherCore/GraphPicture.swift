// GraphPicture.swift — what the graph holds now, as plain nodes and edges, for pictures of it (Graphviz DOT in the runtime).

/// A copy of the graph's shape taken under the owner's lock: its live
/// states, computeds, effects, trackings and observers, and who reads whom.
/// Plain values only, so the owner can let go of its lock and write the
/// picture from the copy.
public struct GraphPicture {
    public enum Kind: Sendable {
        case state, computed, effect, tracking, observer
    }

    /// What a derived node is waiting for, or what a state is (the picture
    /// marks them).
    public struct Marks: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// A source changed since the last evaluation (not yet checked).
        public static let stale = Marks(rawValue: 1)
        /// Never evaluated, or lost a source: evaluates on the next read.
        public static let fresh = Marks(rawValue: 2)
        /// Queued to run (effects, trackings).
        public static let queued = Marks(rawValue: 4)
        /// The last evaluation failed (computeds).
        public static let failed = Marks(rawValue: 8)
        /// A mirror of a tetherd state.
        public static let remote = Marks(rawValue: 16)
        /// Read-only (a descriptor says so).
        public static let readOnly = Marks(rawValue: 32)
    }

    public struct Node {
        public let kind: Kind
        public let index: UInt32
        public let generation: UInt32
        /// The descriptor's name (states only), or nil.
        public let name: String?
        public let marks: Marks
        /// A computed made for a custom binding's get (no handle of its own
        /// is given out; its binding names it).
        public let bindingGet: Bool
        /// An effect's run scope, as the owner encodes it (0: none).
        public let ownedScope: UInt64
    }

    /// `reader` read `source` (a state, computed) at `pointer` (nil: the
    /// whole value). For an observer, `reader` is the observer.
    public struct Edge {
        public let source: (kind: Kind, index: UInt32)
        public let reader: (kind: Kind, index: UInt32)
        public let pointer: String?
    }

    public internal(set) var nodes: [Node] = []
    public internal(set) var edges: [Edge] = []
}

extension Graph {
    /// The graph's shape now. O(nodes + links); the caller holds the lock.
    public func picture() -> GraphPicture {
        var picture = GraphPicture()
        for i in 0..<states.count where states[i].generation != StateNode.freed {
            var marks: GraphPicture.Marks = []
            if states[i].described.contains(.remote) { marks.insert(.remote) }
            else if states[i].described.contains(.readOnly) { marks.insert(.readOnly) }
            let name = states[i].described.contains(.stored) ? descriptors[UInt32(i)]?.name : nil
            picture.nodes.append(.init(kind: .state, index: UInt32(i), generation: states[i].generation, name: name,
                                       marks: marks, bindingGet: false, ownedScope: 0))
        }
        for d in 0..<derived.count {
            let node = derived[d]
            guard node.generation != 0, !node.flags.contains(.disposed) else { continue }
            var marks: GraphPicture.Marks = []
            if node.flags.contains(.stale) { marks.insert(.stale) }
            if node.flags.contains(.fresh) { marks.insert(.fresh) }
            if node.flags.contains(.queued) { marks.insert(.queued) }
            if node.flags.contains(.failed) { marks.insert(.failed) }
            let kind: GraphPicture.Kind
            switch node.kind {
            case .computed: kind = .computed
            case .effect: kind = .effect
            case .tracking: kind = .tracking
            }
            picture.nodes.append(.init(kind: kind, index: UInt32(d), generation: node.generation, name: nil, marks: marks,
                                       bindingGet: node.body?.isBindingGet ?? false,
                                       ownedScope: node.body?.ownedScope ?? 0))
            var l = node.firstDep
            while l != noIndex {
                let dep = links[Int(l)].dep
                picture.edges.append(.init(source: pictureSource(dep), reader: (kind, UInt32(d)),
                                           pointer: NodeRef.isPath(dep) ? pathNodes[NodeRef.index(dep)].pointer.description : nil))
                l = links[Int(l)].nextDep
            }
        }
        for o in 0..<observers.count {
            let record = observers[o]
            guard record.generation != 0, !record.removed else { continue }
            picture.nodes.append(.init(kind: .observer, index: UInt32(o), generation: record.generation, name: nil,
                                       marks: [], bindingGet: false, ownedScope: 0))
            picture.edges.append(.init(source: pictureSource(record.target), reader: (.observer, UInt32(o)),
                                       pointer: record.path.map(\.description)))
        }
        return picture
    }

    /// The state or derived node a link or observer points at (a path node
    /// stands for its state).
    private func pictureSource(_ ref: UInt32) -> (kind: GraphPicture.Kind, index: UInt32) {
        if NodeRef.isPath(ref) { return (.state, pathNodes[NodeRef.index(ref)].state) }
        if NodeRef.isState(ref) { return (.state, UInt32(NodeRef.index(ref))) }
        let d = NodeRef.index(ref)
        switch derived[d].kind {
        case .computed: return (.computed, UInt32(d))
        case .effect: return (.effect, UInt32(d))
        case .tracking: return (.tracking, UInt32(d))
        }
    }
}
