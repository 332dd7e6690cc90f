import CTether
import TetherCore
import TetherRuntime

// State descriptors (include/tether.h, "Validation").

@_cdecl("tether_state_descriptor_init")
public func tether_state_descriptor_init(_ d: UnsafeMutablePointer<tether_state_descriptor_t>?) {
    d?.pointee = tether_state_descriptor_t()
}

/// Room for a validator's reason; longer reasons are truncated.
private let reasonCapacity = 512

@_cdecl("tether_state_describe")
public func tether_state_describe(_ s: tether_state_t, _ d: UnsafePointer<tether_state_descriptor_t>?) -> Int32 {
    let fn: StaticString = "tether_state_describe"
    var descriptor: StateDescriptor?
    if let d {
        let c = d.pointee
        let known = UInt32(TETHER_DESCRIBE_READ_ONLY | TETHER_DESCRIBE_RANGE)
        guard c.flags & ~known == 0 else {
            return fail(.invalidArgument, "\(fn): unknown descriptor flags 0x\(String(c.flags, radix: 16))")
        }
        let reserved = [c.reserved.0, c.reserved.1, c.reserved.2, c.reserved.3]
        guard reserved.allSatisfy({ $0 == 0 }) else {
            return fail(.invalidArgument, "\(fn): reserved fields must be zero (fill the descriptor with tether_state_descriptor_init first)")
        }
        var range: ClosedRange<Double>?
        if c.flags & UInt32(TETHER_DESCRIBE_RANGE) != 0 {
            guard !c.min.isNaN, !c.max.isNaN, c.min <= c.max else {
                return fail(.invalidArgument, "\(fn): the range [\(c.min), \(c.max)] is empty or has a NaN bound")
            }
            range = c.min...c.max
        }
        var validator: Validator?
        let userData = c.user_data, destroy = c.destroy
        if let validate = c.validate {
            let slot = HandleCodec.decode(s.id).slot
            validator = Validator(check: { id, value, cause in
                var proposed = value
                var reason = [CChar](repeating: 0, count: reasonCapacity)
                let accepted = withUnsafeMutablePointer(to: &proposed) { v in
                    reason.withUnsafeMutableBufferPointer { buf in
                        validate(tether_state_t(id: HandleCodec.state(slot, id)), OpaquePointer(v),
                                 TransactionMeta.info(of: cause), buf.baseAddress, reasonCapacity, userData)
                    }
                }
                if accepted { return nil }
                reason[reasonCapacity - 1] = 0
                return String(cString: reason)
            }, release: destroy.map { destroy in { destroy(userData) } })
        } else if let destroy {
            validator = Validator(check: nil, release: { destroy(userData) })
        }
        var name: String?
        if let n = c.name {
            do { if case let .string(text) = try stringValue(n, -1, "name") { name = text } } catch {
                return fail(fn, error)
            }
        }
        descriptor = StateDescriptor(readOnly: c.flags & UInt32(TETHER_DESCRIBE_READ_ONLY) != 0,
                                     range: range, validator: validator, name: name)
    }
    return call("tether_state_describe", .state, s.id) { () throws(TetherError) in try Runtimes.describe(s.id, descriptor) }
}
