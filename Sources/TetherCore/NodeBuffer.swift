// NodeBuffer.swift — contiguous storage for the graph's nodes and links, addressed by index.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Contiguous storage for graph nodes, addressed by index. Why not
/// `[Element]`: profiled, an array stored in a class paid a uniqueness check
/// on every mutation and, for our multi-field node structs, copied whole
/// elements through value witnesses on reads. Addressors here hand out the
/// element's address, so `nodes[i].field = x` is one store. The owner calls
/// `destroy()` exactly once (Graph's deinit).
@usableFromInline
struct NodeBuffer<Element> {
    @usableFromInline private(set) var base: UnsafeMutablePointer<Element>?
    @usableFromInline private(set) var count = 0
    private var capacity = 0

    init() {}

    /// Checked in debug builds (the Swift tests) only: every index comes
    /// from the graph's own links and lists, or from a handle that
    /// `resolve` bounds-checked; the checks were ~8% of a recompute in
    /// release (profiled: a compare and branch, plus the nil test of
    /// `base`, per field access).
    @inlinable
    subscript(i: Int) -> Element {
        unsafeAddress {
            assert(i >= 0 && i < count, "node index out of range")
            return UnsafePointer(base.unsafelyUnwrapped + i)
        }
        nonmutating unsafeMutableAddress {
            assert(i >= 0 && i < count, "node index out of range")
            return base.unsafelyUnwrapped + i
        }
    }

    var indices: Range<Int> { 0..<count }

    /// The class reference stored at `offset` in element `i`, without a
    /// retain: its raw bits, read as `Unmanaged` (an optional class
    /// reference is one pointer, null for nil; a test pins that). The caller
    /// must keep the element from releasing it while in use.
    @inlinable @inline(__always)
    func unretained<T: AnyObject>(_ i: Int, at offset: Int, as: T.Type) -> Unmanaged<T>? {
        assert(i >= 0 && i < count, "node index out of range")
        return UnsafeRawPointer(base.unsafelyUnwrapped + i).load(fromByteOffset: offset, as: Unmanaged<T>?.self)
    }

    /// The address of the field at `offset` in element `i`, for moving a
    /// value in or out without a copy. Valid until the storage grows.
    @inline(__always)
    func address<T>(_ i: Int, at offset: Int, as: T.Type) -> UnsafeMutablePointer<T> {
        assert(i >= 0 && i < count, "node index out of range")
        return (UnsafeMutableRawPointer(base.unsafelyUnwrapped + i) + offset).assumingMemoryBound(to: T.self)
    }

    mutating func append(_ element: consuming Element) {
        if count == capacity { grow() }
        (base! + count).initialize(to: element)
        count += 1
    }

    /// Stack use (the graph's evaluation and propagation stacks): an
    /// `Array` paid a uniqueness check on every push and pop (profiled).
    var last: Element? {
        count > 0 ? base![count - 1] : nil
    }

    mutating func popLast() -> Element? {
        guard count > 0 else { return nil }
        count -= 1
        return (base! + count).move()
    }

    /// Drops the last element (the pull's frames: a pop without an
    /// Optional to unwrap).
    mutating func removeLast() {
        assert(count > 0, "removeLast on an empty buffer")
        count -= 1
        (base.unsafelyUnwrapped + count).deinitialize(count: 1)
    }

    /// Empties the buffer, keeping its storage.
    mutating func removeAll() {
        if let base { base.deinitialize(count: count) }
        count = 0
    }

    /// Doubles the storage with `realloc`: for a large buffer glibc moves
    /// the pages (mremap) instead of copying them into freshly faulted ones
    /// (profiled: creating 100k states was page faults and memmove, 3x the
    /// time of the code itself). Nodes are bitwise movable (checked), so
    /// moving their bytes is moving them.
    private mutating func grow() {
        let newCapacity = Swift.max(16, capacity * 2)
        let bytes = newCapacity * MemoryLayout<Element>.stride
        if _isBitwiseTakable(Element.self) && MemoryLayout<Element>.alignment <= 16 {
            guard let raw = realloc(UnsafeMutableRawPointer(base), bytes) else { fatalError("out of memory") }
            base = raw.bindMemory(to: Element.self, capacity: newCapacity)
        } else {
            guard let raw = malloc(bytes) else { fatalError("out of memory") }
            let newBase = raw.bindMemory(to: Element.self, capacity: newCapacity)
            if let base {
                newBase.moveInitialize(from: base, count: count)
                free(base)
            }
            base = newBase
        }
        capacity = newCapacity
    }

    /// Deinitializes every element and frees the storage; the buffer is empty after.
    mutating func destroy() {
        if let base {
            base.deinitialize(count: count)
            free(base)
        }
        base = nil
        count = 0
        capacity = 0
    }
}
