import Testing
import TetherCore
@testable import TetherWire

/// Feeds `chunks` to a decoder, taking every complete message after each.
private func decode(_ chunks: [[UInt8]], maxMessage: Int = 1 << 20) throws(VarlinkError) -> (messages: [[UInt8]], pending: Int) {
    var decoder = MessageDecoder(maxMessage: maxMessage)
    var messages: [[UInt8]] = []
    for chunk in chunks {
        chunk.withUnsafeBytes { decoder.append($0) }
        while let message = try decoder.next() { messages.append(message) }
    }
    return (messages, decoder.pendingCount)
}

/// What splitting at every NUL gives: the messages, and the tail after the last NUL.
private func reference(_ stream: [UInt8]) -> (messages: [[UInt8]], tail: Int) {
    var parts = stream.split(separator: 0, omittingEmptySubsequences: false).map(Array.init)
    let tail = parts.removeLast()
    return (parts, tail.count)
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// `stream` cut at the given offsets (sorted, within 1..<count).
private func chunks(_ stream: [UInt8], cutAt cuts: [Int]) -> [[UInt8]] {
    var result: [[UInt8]] = []
    var start = 0
    for cut in cuts {
        result.append(Array(stream[start..<cut]))
        start = cut
    }
    result.append(Array(stream[start...]))
    return result
}

@Suite struct FramingTests {
    static let samples: [[UInt8]] = [
        bytes(#"{"method":"io.tether.Get","parameters":{"name":"a"}}"#) + [0],
        bytes(#"{"a":1}"#) + [0] + bytes(#"{"b":2}"#) + [0] + bytes(#"{"c":3}"#) + [0],
        [0, 0, 0],                                             // three empty messages
        bytes("x") + [0, 0] + bytes("yz") + [0] + bytes("tail"), // empty in the middle, NUL-less tail
        bytes("héllo 😀") + [0] + bytes("ü") ,                   // multi-byte UTF-8 split anywhere
        Array(repeating: UInt8(ascii: "a"), count: 37) + [0] + Array(repeating: UInt8(ascii: "b"), count: 9) + [0],
    ]

    @Test func oneMessage() throws {
        let (messages, pending) = try decode([bytes("{}") + [0]])
        #expect(messages == [bytes("{}")])
        #expect(pending == 0)
    }

    @Test func manyMessagesInOneChunk() throws {
        let (messages, pending) = try decode([bytes("a") + [0] + bytes("bb") + [0] + bytes("ccc") + [0] + bytes("dd")])
        #expect(messages == [bytes("a"), bytes("bb"), bytes("ccc")])
        #expect(pending == 2)
    }

    @Test func emptyMessagesAreMessages() throws {
        let (messages, pending) = try decode([[0, 0], [0]])
        #expect(messages == [[], [], []])
        #expect(pending == 0)
    }

    @Test func aMessageByteByByte() throws {
        let stream = bytes(#"{"method":"org.varlink.service.GetInfo"}"#) + [0]
        let (messages, pending) = try decode(stream.map { [$0] })
        #expect(messages == [Array(stream.dropLast())])
        #expect(pending == 0)
    }

    @Test func emptyChunksChangeNothing() throws {
        let (messages, _) = try decode([[], bytes("ab"), [], [0], []])
        #expect(messages == [bytes("ab")])
    }

    /// Every way to cut each short sample into chunks (2^(n-1) of them for
    /// n bytes) gives the same messages as splitting it whole.
    @Test(arguments: FramingTests.samples.filter { $0.count <= 14 })
    func everyChunkingOfAShortStream(stream: [UInt8]) throws {
        let expected = reference(stream)
        let gaps = stream.count - 1
        for mask in 0..<(1 << gaps) {
            let cuts = (0..<gaps).filter { mask & (1 << $0) != 0 }.map { $0 + 1 }
            let (messages, pending) = try decode(chunks(stream, cutAt: cuts))
            #expect(messages == expected.messages, "cuts \(cuts)")
            #expect(pending == expected.tail, "cuts \(cuts)")
        }
    }

    /// A property test: random streams of random messages (empty ones,
    /// NUL-heavy ones, long ones), cut at random points, decode to the
    /// messages they were made of.
    @Test(arguments: 0..<40)
    func randomStreamsAtRandomSplitPoints(seed: UInt64) throws {
        var rng = SeededGenerator(state: seed)
        var stream: [UInt8] = []
        var expected: [[UInt8]] = []
        for _ in 0..<Int.random(in: 0...30, using: &rng) {
            let length = Bool.random(using: &rng) ? Int.random(in: 0...8, using: &rng) : Int.random(in: 0...3000, using: &rng)
            let message = (0..<length).map { _ in UInt8.random(in: 1...255, using: &rng) }
            expected.append(message)
            MessageEncoder.append(message: message, to: &stream)
        }
        let tailLength = Int.random(in: 0...20, using: &rng)
        stream += (0..<tailLength).map { _ in UInt8.random(in: 1...255, using: &rng) }

        for _ in 0..<25 {
            let cutCount = stream.isEmpty ? 0 : Int.random(in: 0...min(stream.count, 64), using: &rng)
            let cuts = Set((0..<cutCount).map { _ in Int.random(in: 0...stream.count, using: &rng) }).sorted()
            let (messages, pending) = try decode(chunks(stream, cutAt: cuts))
            #expect(messages == expected, "seed \(seed), cuts \(cuts)")
            #expect(pending == tailLength, "seed \(seed), cuts \(cuts)")
        }
    }

    /// The word-at-a-time scan finds a NUL at every position of a word and
    /// across word boundaries.
    @Test func findsTheNULAtEveryOffset() {
        for length in 0..<40 {
            for at in 0..<length {
                var buffer = [UInt8](repeating: 0x41, count: length)
                buffer[at] = 0
                for from in 0...at {
                    let found = buffer.withUnsafeBytes { MessageDecoder.firstNUL(in: $0, from: from) }
                    #expect(found == at)
                }
            }
            let none = [UInt8](repeating: 0x80, count: length).withUnsafeBytes { MessageDecoder.firstNUL(in: $0, from: 0) }
            #expect(none == nil)
        }
        // A byte 0x01 after 0x00 inside one word (the borrow case).
        let tricky: [UInt8] = [0x41, 0x41, 0x00, 0x01, 0x41, 0x41, 0x41, 0x41, 0x41]
        #expect(tricky.withUnsafeBytes { MessageDecoder.firstNUL(in: $0, from: 0) } == 2)
        #expect(tricky.withUnsafeBytes { MessageDecoder.firstNUL(in: $0, from: 3) } == nil)
    }

    // MARK: Limits

    @Test func aMessageOfExactlyTheLimitPasses() throws {
        let (messages, _) = try decode([Array(repeating: 0x61, count: 16) + [0]], maxMessage: 16)
        #expect(messages.count == 1)
    }

    @Test func anOversizeMessageIsRefusedWithItsLength() {
        let error = varlinkError { try decode([Array(repeating: 0x61, count: 17) + [0]], maxMessage: 16) }
        #expect(error?.name == "io.tether.LimitExceeded")
        #expect(error?.parameters["limit"] == .string("message"))
        #expect(error?.parameters["maximum"] == .int(16))
        #expect(error?.parameters["actual"] == .int(17))
    }

    /// A peer that never sends a NUL is refused once it passes the limit,
    /// without the decoder waiting (and buffering) for the end.
    @Test func anOversizeMessageIsRefusedBeforeItsNUL() {
        var decoder = MessageDecoder(maxMessage: 100)
        var refusedAfter: Int?
        for i in 1...20 {
            Array(repeating: UInt8(0x61), count: 10).withUnsafeBytes { decoder.append($0) }
            do {
                #expect(try decoder.next() == nil)
            } catch {
                refusedAfter = i * 10
                #expect(error.name == "io.tether.LimitExceeded")
                #expect(error.message.contains("no NUL yet"))
                break
            }
        }
        #expect(refusedAfter == 110)
    }

    /// After an oversize message the stream cannot be trusted: every later
    /// call fails the same way, even with good messages behind.
    @Test func theDecoderStaysFailed() {
        var decoder = MessageDecoder(maxMessage: 4)
        (bytes("toolong") + [0] + bytes("ok") + [0]).withUnsafeBytes { decoder.append($0) }
        let first = varlinkError { try decoder.next() }
        decoder.append(bytes("ok") + [0])
        let second = varlinkError { try decoder.next() }
        #expect(first != nil)
        #expect(first == second)
        #expect(varlinkError { try decoder.finish() } == first)
    }

    @Test func anOversizeMessageBehindGoodOnesFailsInItsTurn() throws {
        var decoder = MessageDecoder(maxMessage: 4)
        decoder.append(bytes("ab") + [0] + bytes("toolong") + [0])
        #expect(try decoder.next() == bytes("ab"))
        #expect(varlinkError { try decoder.next() }?.parameters["actual"] == .int(7))
    }

    // MARK: End of stream

    @Test func finishAfterWholeMessagesIsClean() throws {
        var decoder = MessageDecoder()
        decoder.append(bytes("{}") + [0])
        #expect(try decoder.next() == bytes("{}"))
        #expect(try decoder.next() == nil)
        try decoder.finish()
    }

    @Test func aTailWithoutNULIsATruncatedMessage() throws {
        var decoder = MessageDecoder()
        decoder.append(bytes("{}") + [0] + bytes(#"{"meth"#))
        #expect(try decoder.next() == bytes("{}"))
        #expect(try decoder.next() == nil)
        let error = varlinkError { try decoder.finish() }
        #expect(error?.name == "io.tether.InvalidCall")
        #expect(error?.message.contains("6 bytes without a terminating NUL") == true)
    }

    // MARK: Encoding

    @Test func theEncoderAppendsTheMessageAndANUL() throws {
        var out: [UInt8] = bytes("x")
        MessageEncoder.append(message: bytes("ab"), to: &out)
        try MessageEncoder.append(Call(method: "io.tether.Stats"), to: &out)
        try MessageEncoder.append(Reply(), to: &out)
        #expect(out == bytes("x") + bytes("ab") + [0] + bytes(#"{"method":"io.tether.Stats"}"#) + [0]
            + bytes(#"{"parameters":{}}"#) + [0])
    }

    /// A NUL inside a string value is escaped, so it never ends a message.
    @Test func aNULInAValueStaysInsideItsMessage() throws {
        var parameters = ValueObject()
        parameters["name"] = .string("a\u{0}b")
        var out: [UInt8] = []
        try MessageEncoder.append(Call(method: "io.tether.Get", parameters: parameters), to: &out)
        #expect(out.filter { $0 == 0 }.count == 1)
        var decoder = MessageDecoder()
        decoder.append(out)
        let message = try #require(try decoder.next())
        #expect(try Call(parsing: message).parameters["name"] == .string("a\u{0}b"))
    }

    /// The borrowed form hands out the same bytes without copying them.
    @Test func nextMessageLendsTheBytes() throws {
        var decoder = MessageDecoder()
        decoder.append(bytes(#"{"method":"io.tether.Stats"}"#) + [0])
        let call = try decoder.nextMessage { raw in Result { () throws(VarlinkError) in try Call(parsing: raw) } }
        #expect(try call?.get().method == "io.tether.Stats")
        #expect(try decoder.nextMessage { $0.count } == nil)
    }
}
