import Foundation
import Testing
@testable import TetherCore

/// SipHash is written out (see its header for why), so it is checked
/// against the reference: SipHash-2-4's published vectors (the same code
/// with other round counts) and SipHash-1-3's values from a reference
/// implementation, for every message length 0 to 63, which covers every
/// length of the tail loads; and its key is checked to be the process's.
@Suite struct SipHashTests {
    /// Key 00 01 .. 0f; message n is 00 01 .. (n-1). The reference
    /// implementation's vectors.h (SipHash-2-4, 64-bit output) and
    /// benchmarks/hashflood/siphash_ref.py (both; it checks itself against
    /// vectors.h and the paper's example, a129ca6149be45e5 at n = 15).
    static let sip24: [UInt64] = [
        0x726FDB47DD0E0E31, 0x74F839C593DC67FD, 0x0D6C8009D9A94F5A, 0x85676696D7FB7E2D,
        0xCF2794E0277187B7, 0x18765564CD99A68D, 0xCBC9466E58FEE3CE, 0xAB0200F58B01D137,
        0x93F5F5799A932462, 0x9E0082DF0BA9E4B0, 0x7A5DBBC594DDB9F3, 0xF4B32F46226BADA7,
        0x751E8FBC860EE5FB, 0x14EA5627C0843D90, 0xF723CA908E7AF2EE, 0xA129CA6149BE45E5,
        0x3F2ACC7F57C29BDB, 0x699AE9F52CBE4794, 0x4BC1B3F0968DD39C, 0xBB6DC91DA77961BD,
        0xBED65CF21AA2EE98, 0xD0F2CBB02E3B67C7, 0x93536795E3A33E88, 0xA80C038CCD5CCEC8,
        0xB8AD50C6F649AF94, 0xBCE192DE8A85B8EA, 0x17D835B85BBB15F3, 0x2F2E6163076BCFAD,
        0xDE4DAAACA71DC9A5, 0xA6A2506687956571, 0xAD87A3535C49EF28, 0x32D892FAD841C342,
        0x7127512F72F27CCE, 0xA7F32346F95978E3, 0x12E0B01ABB051238, 0x15E034D40FA197AE,
        0x314DFFBE0815A3B4, 0x027990F029623981, 0xCADCD4E59EF40C4D, 0x9ABFD8766A33735C,
        0x0E3EA96B5304A7D0, 0xAD0C42D6FC585992, 0x187306C89BC215A9, 0xD4A60ABCF3792B95,
        0xF935451DE4F21DF2, 0xA9538F0419755787, 0xDB9ACDDFF56CA510, 0xD06C98CD5C0975EB,
        0xE612A3CB9ECBA951, 0xC766E62CFCADAF96, 0xEE64435A9752FE72, 0xA192D576B245165A,
        0x0A8787BF8ECB74B2, 0x81B3E73D20B49B6F, 0x7FA8220BA3B2ECEA, 0x245731C13CA42499,
        0xB78DBFAF3A8D83BD, 0xEA1AD565322A1A0B, 0x60E61C23A3795013, 0x6606D7E446282B93,
        0x6CA4ECB15C5F91E1, 0x9F626DA15C9625F3, 0xE51B38608EF25F57, 0x958A324CEB064572,
    ]
    static let sip13: [UInt64] = [
        0xABAC0158050FC4DC, 0xC9F49BF37D57CA93, 0x82CB9B024DC7D44D, 0x8BF80AB8E7DDF7FB,
        0xCF75576088D38328, 0xDEF9D52F49533B67, 0xC50D2B50C59F22A7, 0xD3927D989BB11140,
        0x369095118D299A8E, 0x25A48EB36C063DE4, 0x79DE85EE92FF097F, 0x70C118C1F94DC352,
        0x78A384B157B4D9A2, 0x306F760C1229FFA7, 0x605AA111C0F95D34, 0xD320D86D2A519956,
        0xCC4FDD1A7D908B66, 0x9CF2689063DBD80C, 0x8FFC389CB473E63E, 0xF21F9DE58D297D1C,
        0xC0DC2F46A6CCE040, 0xB992ABFE2B45F844, 0x7FFE7B9BA320872E, 0x525A0E7FDAE6C123,
        0xF464AEB267349C8C, 0x45CD5928705B0979, 0x3A3E35E3CA9913A5, 0xA91DC74E4ADE3B35,
        0xFB0BED02EF6CD00D, 0x88D93CB44AB1E1F4, 0x540F11D643C5E663, 0x2370DD1F8C21D1BC,
        0x81157B6C16A7B60D, 0x4D54B9E57A8FF9BF, 0x759F12781F2A753E, 0xCEA1A3BEBF186B91,
        0x2CF508D3ADA26206, 0xB6101C2DA3C33057, 0xB3F47496AE3A36A1, 0x626B57547B108392,
        0xC1D2363299E41531, 0x667CC1923F1AD944, 0x65704FFEC8138825, 0x24F280D1C28949A6,
        0xC2CA1CEDFAF8876B, 0xC2164BFC9F042196, 0xA16E9C9368B1D623, 0x49FB169C8B5114FD,
        0x9F3143F8DF074C46, 0xC6FDAF2412CC86B3, 0x7EAF49D10A52098F, 0x1CF313559D292F9A,
        0xC44A30DDA2F41F12, 0x36FAE98943A71ED0, 0x318FB34C73F0BCE6, 0xA27ABF3670A7E980,
        0xB4BCC0DB243C6D75, 0x23F8D852FDB71513, 0x8F035F4DA67D8A08, 0xD89CD0E5B7E8F148,
        0xF6F4E6BCF7A644EE, 0xAEC59AD80F1837F2, 0xC3B2F6154B6694E0, 0x9D199062B7BBB3A8,
    ]

    static let referenceKey: (UInt64, UInt64) = (0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908)

    @Test func matchesTheReferenceForEveryLength() {
        let message = [UInt8](0..<64)
        for n in 0..<64 {
            message[..<n].withUnsafeBufferPointer { bytes in
                let c2d4 = SipHash.hash(bytes, key: Self.referenceKey, compressionRounds: 2, finalizationRounds: 4)
                let c1d3 = SipHash.hash(bytes, key: Self.referenceKey, compressionRounds: 1, finalizationRounds: 3)
                #expect(c2d4 == Self.sip24[n], "SipHash-2-4, \(n) bytes")
                #expect(c1d3 == Self.sip13[n], "SipHash-1-3, \(n) bytes")
            }
        }
        // Bytes at an odd address: the loads are unaligned.
        let shifted = [UInt8](repeating: 0xAA, count: 1) + message
        for n in [3, 7, 9, 15, 17] {
            shifted[1...n].withUnsafeBufferPointer { bytes in
                #expect(SipHash.hash(bytes, key: Self.referenceKey, compressionRounds: 1, finalizationRounds: 3)
                        == Self.sip13[n], "unaligned, \(n) bytes")
            }
        }
    }

    /// What `SipHash.key` would be with `Hasher`'s key zero (as under
    /// SWIFT_DETERMINISTIC_HASHING): `Hasher` is SipHash-1-3, and
    /// `combine(UInt64)` feeds the word's eight bytes, little-endian.
    static var keyUnderAZeroSeed: (UInt64, UInt64) {
        func half(_ word: UInt64) -> UInt64 {
            withUnsafeBytes(of: word.littleEndian) { raw in
                SipHash.hash(raw.bindMemory(to: UInt8.self), key: (0, 0), compressionRounds: 1, finalizationRounds: 3)
            }
        }
        return (half(0x7465_7468_6572_6B30), half(0x7465_7468_6572_6B31))
    }

    @Test func theKeyIsTheProcesssOwn() {
        // Drawn from Hasher's seed, which the runtime makes random per
        // process unless SWIFT_DETERMINISTIC_HASHING is set: then it is
        // the zero seed's, computed here by the code under test.
        let deterministic = ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING"].map { !$0.isEmpty } ?? false
        let zero = Self.keyUnderAZeroSeed
        let same = SipHash.key.0 == zero.0 && SipHash.key.1 == zero.1
        #expect(same == deterministic)
        #expect(SipHash.key.0 != SipHash.key.1)
        // And a name's hash is its bytes' SipHash-1-3 under that key.
        for name in ["", "a", "value", "0123456789abcdef", "\u{E9}t\u{E9}"] {
            let expected = Array(name.utf8).withUnsafeBufferPointer {
                SipHash.hash($0, key: SipHash.key, compressionRounds: 1, finalizationRounds: 3)
            }
            #expect(MemberKey(name).bytesHash == Int(truncatingIfNeeded: expected), "\(name)")
        }
    }
}
