import TetherWire

/// The fuzzer's first check (the `fast` target's): the frame decoder
/// (`MessageDecoder`) splits an input the same way fed whole or in small
/// chunks, with a large limit and a small one, and exactly as a model does
/// (the input cut at each NUL; refused from the first segment past the
/// limit on). It needs no daemon.
enum FrameDecoderCheck {
    typealias F = DaemonFuzzer

    struct Decoded: Equatable {
        var messages: [[UInt8]] = []
        var failed = false
        /// Bytes after the last message (nil when it failed).
        var pending: Int?
    }

    /// The model: the input cut at each NUL; past `limit`, refused.
    static func model(_ input: UnsafeRawBufferPointer, limit: Int) -> Decoded {
        var d = Decoded()
        var start = 0
        for i in NULs(in: input) {
            if i - start > limit { d.failed = true; return d }
            d.messages.append(Array(input[start..<i]))
            start = i + 1
        }
        if input.count - start > limit { d.failed = true; return d }
        d.pending = input.count - start
        return d
    }

    static func decode(_ input: UnsafeRawBufferPointer, limit: Int, chunk: (Int) -> Int) -> Decoded {
        var decoder = MessageDecoder(maxMessage: limit)
        var d = Decoded()
        var offset = 0, k = 0
        while offset < input.count {
            let n = min(max(1, chunk(k)), input.count - offset)
            k += 1
            decoder.append(UnsafeRawBufferPointer(rebasing: input[offset..<offset + n]))
            offset += n
            do {
                while let message = try decoder.next() { d.messages.append(message) }
            } catch {
                d.failed = true
                return d
            }
        }
        do {
            while let message = try decoder.next() { d.messages.append(message) }
        } catch {
            d.failed = true
            return d
        }
        d.pending = decoder.pendingCount
        let finishFails = (try? decoder.finish()) == nil
        if finishFails != (decoder.pendingCount > 0) { d.pending = -1 }
        return d
    }

    static func run(_ input: UnsafeRawBufferPointer, _ problems: inout [String]) {
        for limit in [F.limits.maxMessage, 16] {
            let expected = model(input, limit: limit)
            let whole = decode(input, limit: limit) { _ in input.count }
            let small = decode(input, limit: limit) { k in input.isEmpty ? 1 : Int(input[k % input.count] % 7) + 1 }
            for (how, got) in [("whole", whole), ("in chunks of 1 to 7 bytes", small)] where got != expected {
                problems.append("MessageDecoder(maxMessage: \(limit)) fed \(how): \(got.messages.count) messages, failed \(got.failed), pending \(got.pending.map(String.init) ?? "-"); the input cut at its NULs gives \(expected.messages.count), failed \(expected.failed), pending \(expected.pending.map(String.init) ?? "-")")
            }
        }
    }
}
