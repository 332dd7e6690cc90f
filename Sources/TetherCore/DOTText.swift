// DOTText.swift — Graphviz DOT quoted strings, for the pictures of a runtime's graph and of tetherd's watchers.

/// DOT's quoted strings, shared by `tether_runtime_graph_dot` and
/// `tetherctl graph`.
public enum DOTText {
    /// A DOT quoted string. Names are user data: a quote or backslash is
    /// escaped (a lone backslash would start a label escape such as \N), a
    /// newline becomes DOT's \n (a line break in a label), other control
    /// characters are written as visible \u{...} text.
    public static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
