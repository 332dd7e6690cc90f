import Glibc
import Testing
import TetherWire

/// The address fallback and the directory rules of SocketTrust, on
/// directories of this process's own uid (HijackTests in DaemonTests use
/// other uids).
@Suite struct SocketTrustTests {
    @Test func theFallbackHonoursTMPDIRAndIsPrivate() throws {
        let plain = try DaemonAddress.standard(uid: 1000, environment: [:])
        #expect(plain.path == "/tmp/tether-1000/tetherd.sock")
        let tmp = try DaemonAddress.standard(uid: 1000, environment: ["TMPDIR": "/var/tmp/u/"])
        #expect(tmp.path == "/var/tmp/u/tether-1000/tetherd.sock")
        let runtime = try DaemonAddress.standard(uid: 1000, environment: ["XDG_RUNTIME_DIR": "/run/user/1000", "TMPDIR": "/x"])
        #expect(runtime.path == "/run/user/1000/tether/tetherd.sock")
        #expect(DaemonAddress.privateDirectories(uid: 1000, environment: ["XDG_RUNTIME_DIR": "/run/user/1000/", "TMPDIR": "/x"])
                == ["/run/user/1000/tether", "/x/tether-1000"])
        let trust = SocketTrust(uids: [1000], daemonUID: 998, privateDirectories: ["/run/user/1000/tether"])
        #expect(trust.isPrivate("/run/user/1000/tether/"))
        #expect(!trust.isPrivate("/run/tether"))
        #expect(Set(trust.trustedUIDs) == [1000, 0, 998])
    }

    @Test func aPrivateDirectoryMustBeOursAnd0700AndNoLink() throws {
        var bytes = Array("/tmp/socket-trust.XXXXXX".utf8CString)
        #expect(mkdtemp(&bytes) != nil)
        let base = bytes.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { _ = unlink(base + "/link"); _ = rmdir(base + "/dir"); _ = rmdir(base) }
        #expect(mkdir(base + "/dir", 0o700) == 0)
        #expect(throws: Never.self) { try SocketTrust.checkPrivateDirectory(base + "/dir", owner: getuid()) }
        chmod(base + "/dir", 0o755)
        let open = #expect(throws: UntrustedSocket.self) { try SocketTrust.checkPrivateDirectory(base + "/dir", owner: getuid()) }
        #expect(open?.message.contains("mode 0755") == true)
        chmod(base + "/dir", 0o700)
        let other = #expect(throws: UntrustedSocket.self) { try SocketTrust.checkPrivateDirectory(base + "/dir", owner: getuid() &+ 1) }
        #expect(other?.message.contains("belongs to \(SocketTrust.describe(uid: getuid()))") == true)
        #expect(symlink(base + "/dir", base + "/link") == 0)
        let link = #expect(throws: UntrustedSocket.self) { try SocketTrust.checkPrivateDirectory(base + "/link", owner: getuid()) }
        #expect(link?.message.contains("symbolic link") == true)
        // Not a private directory: a link is refused as well.
        let trust = SocketTrust(uids: [getuid()], daemonUID: nil, privateDirectories: [])
        #expect(throws: UntrustedSocket.self) { try trust.checkDirectory(of: DaemonAddress(path: base + "/link/tetherd.sock")) }
        #expect(throws: Never.self) { try trust.checkDirectory(of: DaemonAddress(path: base + "/dir/tetherd.sock")) }
    }
}
