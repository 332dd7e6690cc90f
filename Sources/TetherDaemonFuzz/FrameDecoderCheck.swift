import Glibc
import TetherWire

/// The fuzzer's first check (the `fast` target's): the frame decoder
/// (`MessageDecoder`) splits an input the same way fed whole or in small
/// chunks, with a large limit and a small one, and exactly as a model does
/// (the input cut at each NUL; refused from the first segment past the
/// limit on). It needs no daemon.
///
/// Each message the decoder hands out (`nextMessage`, as the daemon's
/// sessions read them) is compared where it is with the model's bytes of
/// the input: copying every message into arrays, four decodes and two
/// models an input, was a tenth of this check's allocations, which ASan
/// makes the fuzzer's largest cost (docs/robustness.md).
enum FrameDecoderCheck {
    typealias F = DaemonFuzzer

    /// The input cut at each NUL: each message's offset and length in it.
    struct Model {
        var messages: [(start: Int, count: Int)] = []
        var failed = false
        /// Bytes after the last message (nil when it failed).
        var pending: Int?
    }

    /// What a decode did, as the model says it: how many messages, each
    /// one the model's bytes (`mismatch`: the first that was not).
    struct Decoded: Equatable {
        var count = 0
        var failed = false
        var pending: Int?
        var mismatch: Int?
    }

    /// The model: the input cut at each NUL; past `limit`, refused.
    static func model(_ input: UnsafeRawBufferPointer, limit: Int, into m: inout Model) {
        m.messages.removeAll(keepingCapacity: true)
        m.failed = false
        m.pending = nil
        var start = 0
        for i in NULs(in: input) {
            if i - start > limit { m.failed = true; return }
            m.messages.append((start, i - start))
            start = i + 1
        }
        if input.count - start > limit { m.failed = true; return }
        m.pending = input.count - start
    }

    static func expected(_ m: Model) -> Decoded {
        Decoded(count: m.messages.count, failed: m.failed, pending: m.pending)
    }

    static func decode(_ input: UnsafeRawBufferPointer, limit: Int, model m: Model, chunk: (Int) -> Int) -> Decoded {
        var decoder = MessageDecoder(maxMessage: limit)
        var d = Decoded()
        /// Takes every complete message, each compared with the model's.
        func take() throws(VarlinkError) {
            while true {
                let same = try decoder.nextMessage { message -> Bool in
                    guard d.count < m.messages.count else { return false }
                    let (start, count) = m.messages[d.count]
                    return message.count == count
                        && (count == 0 || memcmp(message.baseAddress!, input.baseAddress! + start, count) == 0)
                }
                guard let same else { return }
                if !same && d.mismatch == nil { d.mismatch = d.count }
                d.count += 1
            }
        }
        var offset = 0, k = 0
        while offset < input.count {
            let n = min(max(1, chunk(k)), input.count - offset)
            k += 1
            decoder.append(UnsafeRawBufferPointer(rebasing: input[offset..<offset + n]))
            offset += n
            do { try take() } catch { d.failed = true; return d }
        }
        do { try take() } catch { d.failed = true; return d }
        d.pending = decoder.pendingCount
        let finishFails = (try? decoder.finish()) == nil
        if finishFails != (decoder.pendingCount > 0) { d.pending = -1 }
        return d
    }

    /// One model's room, reused across inputs (emptied by `model`): it
    /// grows a few times, to the most messages an input had, and is then
    /// allocated no more (libFuzzer looks for a leak after an input that
    /// ends holding more than it started with: those few times).
    nonisolated(unsafe) static var scratch = Model()

    static func run(_ input: UnsafeRawBufferPointer, _ problems: inout [String]) {
        for limit in [F.limits.maxMessage, 16] {
            model(input, limit: limit, into: &scratch)
            let expected = expected(scratch)
            let whole = decode(input, limit: limit, model: scratch) { _ in input.count }
            let small = decode(input, limit: limit, model: scratch) { k in input.isEmpty ? 1 : Int(input[k % input.count] % 7) + 1 }
            for (how, got) in [("whole", whole), ("in chunks of 1 to 7 bytes", small)] where got != expected {
                problems.append("MessageDecoder(maxMessage: \(limit)) fed \(how): \(got.count) messages"
                    + (got.mismatch.map { ", message \($0) not the input's bytes between its NULs" } ?? "")
                    + ", failed \(got.failed), pending \(got.pending.map(String.init) ?? "-"); the input cut at its NULs gives \(expected.count), failed \(expected.failed), pending \(expected.pending.map(String.init) ?? "-")")
            }
        }
    }
}
