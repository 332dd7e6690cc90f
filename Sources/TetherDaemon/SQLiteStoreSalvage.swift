// SQLiteStoreSalvage.swift — tetherd --salvage, and the store's readers as the fuzzer drives them.

import CSQLite
import Glibc
import TetherCore
import TetherWire

extension SQLiteStore {
    // MARK: Salvage

    /// What `salvage` kept and dropped.
    public struct SalvageReport {
        public var states = 0
        public var revision: UInt64 = 0
        /// What could not be read, each with where (table, state or
        /// revision) and why.
        public var dropped: [String] = []
        /// Where the damaged files went (`tether.db.damaged-EPOCH`).
        public var movedTo: String?
    }

    /// `tetherd --salvage`: reads what is readable of the store in
    /// `directory` (each states row on its own, the log rows after the
    /// states table replayed onto it, a damaged table up to its damage),
    /// moves the damaged files aside (`tether.db.damaged-EPOCH`, with its
    /// -wal and -shm), and writes a new store holding the states read,
    /// under `epoch` (a new one: clients resync), its revision the highest
    /// found or `atLeast` (the marker's), whichever is higher, so that
    /// revisions go on rising. Its log starts empty.
    public static func salvage(directory: String, epoch: String, atLeast: UInt64) throws(TetherError) -> SalvageReport {
        var report = SalvageReport()
        var contents = Contents()
        let path = directory + "/tether.db"
        var st = stat()
        if stat(path, &st) == 0 {
            do {
                // Closed at the end of this block (its WAL checkpointed).
                let old = try SQLiteStore(directory: directory, durability: .full, logCapacity: Int.max)
                contents = try old.load(salvaging: true)
            } catch {
                report.dropped.append("the whole store: \(error.message)")
            }
        } else {
            report.dropped.append("the whole store: \(path) does not exist")
        }
        for (name, reason) in contents.quarantined { report.dropped.append("state '\(name)': \(reason)") }
        for (revision, reason) in contents.unreadableLogRows { report.dropped.append("log revision \(revision): \(reason)") }
        report.dropped += contents.dropped
        let aside = path + ".damaged-" + epoch
        for suffix in ["", "-wal", "-shm"] where stat(path + suffix, &st) == 0 {
            guard rename(path + suffix, aside + suffix) == 0 else {
                throw TetherError(.loopFailure, "cannot move \(path + suffix) aside to \(aside + suffix): \(String(cString: strerror(errno)))")
            }
            report.movedTo = aside
        }
        let fresh = try SQLiteStore(directory: directory, durability: .full, logCapacity: Int.max)
        report.revision = max(contents.revision, atLeast)
        try fresh.begin()
        try fresh.run("INSERT OR REPLACE INTO meta(key, value) VALUES('epoch', ?1)") { (s) throws(TetherError) in try s.bind(1, epoch) }
        for image in contents.states {
            guard let value = image.value else { continue }
            let valueText = try SQLiteStore.encodeValue(value)
            let descriptorText = try image.descriptor.wireValue.jsonString()
            try fresh.run("INSERT OR REPLACE INTO states(name, value, modified, descriptor) VALUES(?1, ?2, ?3, ?4)") { (s) throws(TetherError) in
                try s.bind(1, image.name)
                try s.bind(2, valueText)
                try s.bind(3, Int64(bitPattern: min(image.modified, report.revision)))
                try s.bind(4, descriptorText)
            }
            report.states += 1
        }
        for key in ["revision", "applied"] {
            try fresh.run("INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)") { (s) throws(TetherError) in
                try s.bind(1, key)
                try s.bind(2, String(report.revision))
            }
        }
        try fresh.commitBegun()
        return report
    }

    // MARK: The readers under the fuzzer

    /// The store's readers on arbitrary bytes (`make fuzz`, issue 30): the
    /// input read as each kind of text a row holds, and, when it is an
    /// SQLite file, opened as a store. Nothing may trap; a reading either
    /// succeeds or is a TetherError. Returns the violations of what must
    /// hold besides:
    /// - a states row's value that reads re-encodes to text that reads
    ///   back to the same value;
    /// - a group row (the input cut at its first NUL: changes, images)
    ///   reads as exactly `commits` consecutive commits ending at `last`,
    ///   for a few counts and last revisions, including damaged ones;
    /// - a file that opens as a store loads, and salvages: the salvaged
    ///   store loads with nothing quarantined or dropped and as many
    ///   states as the salvage kept, at no lower revision than it found.
    /// `scratch`: a directory the store check may use (emptied each time).
    public static func checkReaders(_ input: UnsafeRawBufferPointer, scratch: String) -> [String] {
        var problems: [String] = []
        let text = String(decoding: input, as: UTF8.self)
        if let value = try? decodeValue(text, name: "fuzz") {
            do {
                let again = try decodeValue(try encodeValue(value), name: "fuzz")
                if again != value { problems.append("store reader: a states row's value does not read back the same after encoding: \(text.prefix(200).debugDescription)") }
            } catch {
                problems.append("store reader: a value read from a states row cannot be written back: \(error.message)")
            }
        }
        _ = try? decodeChanges(text, revision: 7)
        _ = try? decodeDescriptor(text, name: "fuzz")
        if let list = try? Value(json: text, maxDepth: rowDepth) {
            _ = try? decodeImages(list, of: Commit(revision: 7, changes: [Change(name: "a", write: .set(.int(1)))], tag: nil, origin: nil))
        }
        let cut = input.firstIndex(of: 0) ?? input.count
        let changes = String(decoding: UnsafeRawBufferPointer(rebasing: input[..<cut]), as: UTF8.self)
        let images = cut < input.count ? String(decoding: UnsafeRawBufferPointer(rebasing: input[(cut + 1)...]), as: UTF8.self) : "[]"
        for (commits, last) in [(Int64(2), UInt64(2)), (2, 1), (3, 100), (-1, 5), (0, 0), (0, UInt64.max), (1, 0), (Int64.max, UInt64.max), (Int64.min, 3)] {
            guard let group = try? decodeGroup(changes: changes, images: images, commits: commits, last: last) else { continue }
            let revisions = group.map { $0.0.revision }
            if Int64(revisions.count) != commits || revisions.last != last
                || zip(revisions, revisions.dropFirst()).contains(where: { $1 != $0 + 1 }) {
                problems.append("store reader: a group row of \(commits) commits ending at \(last) read as revisions \(revisions.prefix(8))")
            }
        }
        if input.starts(with: Array("SQLite format 3\0".utf8)) {
            checkStoreFile(input, scratch: scratch, &problems)
        }
        return problems
    }

    private static func checkStoreFile(_ input: UnsafeRawBufferPointer, scratch: String, _ problems: inout [String]) {
        for name in ["tether.db", "tether.db-wal", "tether.db-shm", "tether.db-journal"] { unlink(scratch + "/" + name) }
        if let dir = opendir(scratch) {  // the salvages' damaged copies
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name.hasPrefix("tether.db") { unlink(scratch + "/" + name) }
            }
            closedir(dir)
        }
        let fd = open(scratch + "/tether.db", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        _ = write(fd, input.baseAddress, input.count)
        close(fd)
        var found: UInt64 = 0
        do {
            let store = try SQLiteStore(directory: scratch, durability: .normal, logCapacity: 64, logBytes: 1 << 16, exclusive: false)
            if let contents = try? store.load() { found = contents.revision }
            _ = try? store.load(salvaging: true)
        } catch {
            // Not a store SQLite can open: refused, as it should be.
        }
        do {
            let report = try salvage(directory: scratch, epoch: "fuzz", atLeast: 0)
            let contents = try SQLiteStore(directory: scratch, durability: .normal, logCapacity: 64).load()
            if !contents.quarantined.isEmpty || !contents.unreadableLogRows.isEmpty || !contents.dropped.isEmpty {
                problems.append("store reader: a salvaged store does not read whole: \(contents.quarantined.prefix(3)) \(contents.unreadableLogRows.prefix(3)) \(contents.dropped.prefix(3))")
            }
            if contents.states.count != report.states || contents.epoch != "fuzz" || contents.revision < max(report.revision, found) {
                problems.append("store reader: a salvaged store holds \(contents.states.count) states at revision \(contents.revision), epoch \(contents.epoch ?? "none"); the salvage kept \(report.states) at \(report.revision) (found \(found))")
            }
        } catch {
            problems.append("store reader: salvage failed: \(error.message)")
        }
    }
}
