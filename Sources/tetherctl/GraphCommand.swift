// GraphCommand.swift — `tetherctl graph`: which processes watch which states, as Graphviz DOT (io.tether.Watchers).

import ArgumentParser
import Glibc
import TetherCore
import TetherWire

struct GraphCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "Draw which processes watch which states (and so hold them as remote states), as Graphviz DOT.",
        discussion: """
            One node per watching process (its command name, pid and uid), one per state name \
            or watched prefix ("app.*"), an edge from the process to each, labelled with the \
            watch's path. PREFIX keeps the watches of names starting with it. Prints DOT; \
            --svg FILE or --png FILE runs Graphviz's dot instead (apt-get install graphviz). \
            Uses io.tether.Watchers: the daemon's uid or root only.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Only watches of names starting with this (or of a prefix that overlaps it).")
    var prefix: String?

    @Option(help: "Write the picture as SVG to this file (runs dot).")
    var svg: String?

    @Option(help: "Write the picture as PNG to this file (runs dot).")
    var png: String?

    func validate() throws {
        if svg != nil && png != nil { throw ValidationError("give --svg or --png, not both") }
    }

    func run() throws {
        var parameters = ValueObject()
        if let prefix { parameters["prefix"] = .string(prefix) }
        let reply = try WatchersReply(parameters: try global.call("io.tether.Watchers", parameters, reply: WatchersReply.self))
        let dot = GraphCommand.dot(reply)
        guard let (format, file) = svg.map({ ("svg", $0) }) ?? png.map({ ("png", $0) }) else {
            Swift.print(dot, terminator: "")
            return
        }
        try GraphCommand.render(dot, format: format, to: file)
    }

    /// The DOT text: processes as boxes, states as ellipses, prefixes as
    /// folders; every name is user data, quoted by DOTText.
    static func dot(_ reply: WatchersReply) -> String {
        var out = "digraph tetherd {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=11];\n"
        out += "  edge [fontname=\"Helvetica\", fontsize=9];\n"
        var states: Set<String> = []
        var processes: Set<String> = []
        var edges = ""
        for w in reply.watchers {
            // One node per process, however many watches it has open.
            let process = "pid \(w.pid) uid \(w.uid)"
            if processes.insert(process).inserted {
                let label = (w.command.isEmpty ? "(gone)" : w.command) + "\npid \(w.pid) uid \(w.uid)"
                out += "  \(DOTText.quoted(process)) [label=\(DOTText.quoted(label)), shape=box, tether_pid=\"\(w.pid)\", tether_uid=\"\(w.uid)\"];\n"
            }
            let edgeLabel = w.path.map { ", label=\(DOTText.quoted($0))" } ?? ""
            for name in w.names {
                states.insert("state " + name)
                edges += "  \(DOTText.quoted(process)) -> \(DOTText.quoted("state " + name)) [tether_edge=\"watches\"\(edgeLabel)];\n"
            }
            if let prefix = w.prefix {
                states.insert("prefix " + prefix)
                edges += "  \(DOTText.quoted(process)) -> \(DOTText.quoted("prefix " + prefix)) [tether_edge=\"watches\"\(edgeLabel)];\n"
            }
        }
        for node in states.sorted() {
            if node.hasPrefix("prefix ") {
                let prefix = String(node.dropFirst(7))
                out += "  \(DOTText.quoted(node)) [label=\(DOTText.quoted(prefix + "*")), shape=folder, tether_prefix=\(DOTText.quoted(prefix))];\n"
            } else {
                let name = String(node.dropFirst(6))
                out += "  \(DOTText.quoted(node)) [label=\(DOTText.quoted(name)), shape=ellipse, tether_name=\(DOTText.quoted(name))];\n"
            }
        }
        out += edges
        if reply.truncated { out += "  \"truncated\" [label=\"(more watchers: the list was cut at the reply's limit)\", shape=plaintext];\n" }
        return out + "}\n"
    }

    /// Runs `dot -T<format> -o file` on the text; says how to install
    /// Graphviz when dot is not on PATH.
    static func render(_ dot: String, format: String, to file: String) throws {
        guard let exe = findOnPath("dot") else {
            fputs("tetherctl: Graphviz's dot is not installed: apt-get install graphviz (dnf install graphviz, brew install graphviz); or write the DOT text with `tetherctl graph > graph.dot`\n", stderr)
            throw ExitCode(Exit.usage)
        }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ExitCode(Exit.daemonError) }
        var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[0], 0)
        posix_spawn_file_actions_addclose(&actions, fds[1])
        let argv = [exe, "-T" + format, "-o", file]
        var cargs = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, exe, &actions, nil, &cargs, environ)
        close(fds[0])
        guard rc == 0 else {
            close(fds[1])
            fputs("tetherctl: cannot run \(exe): \(String(cString: strerror(rc)))\n", stderr)
            throw ExitCode(Exit.daemonError)
        }
        var bytes = Array(dot.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(fds[1], $0.baseAddress! + written, $0.count - written) }
            if n <= 0 { break }
            written += n
        }
        close(fds[1])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            fputs("tetherctl: dot failed (status \(status)) writing \(file)\n", stderr)
            throw ExitCode(Exit.daemonError)
        }
    }

    static func findOnPath(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
