import Glibc

/// One line per event on stderr, `tetherd: EVENT key=value ...`: what
/// systemd's journal and a terminal both read well. Values with spaces or
/// quotes are quoted.
public final class EventLog {
    public var quiet: Bool

    public init(quiet: Bool = false) {
        self.quiet = quiet
    }

    public func event(_ name: String, _ fields: (String, String)...) {
        event(name, fields: fields)
    }

    public func event(_ name: String, fields: [(String, String)]) {
        guard !quiet else { return }
        var line = "tetherd: " + name
        for (key, value) in fields {
            line += " " + key + "=" + EventLog.quote(value)
        }
        line += "\n"
        fputs(line, stderr)
    }

    /// A plain line (the banner).
    public func say(_ text: String) {
        fputs("tetherd: " + text + "\n", stderr)
    }

    static func quote(_ value: String) -> String {
        if !value.isEmpty && !value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }) {
            return value
        }
        var out = "\""
        for c in value {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out + "\""
    }
}

infix operator => : AssignmentPrecedence

/// `"peer" => text`: one field of a log line.
public func => (key: String, value: String) -> (String, String) { (key, value) }
