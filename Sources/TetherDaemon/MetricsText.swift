/// Prometheus' text exposition format (version 0.0.4), written by hand: a
/// few lines per series, nothing a library would spare (the Swift
/// Prometheus client brings a registry and metric types the daemon would
/// wrap again). Tests read it back with PyPI's prometheus_client parser
/// and with Prometheus itself (Tests/metrics/prometheus_test.py).
struct MetricsText {
    private(set) var text = ""

    mutating func header(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(MetricsText.escapeHelp(help))\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(MetricsText.escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + MetricsText.number(value) + "\n"
    }

    mutating func counter(_ name: String, _ help: String, _ value: UInt64) {
        header(name, "counter", help)
        sample(name, [], Double(value))
    }

    mutating func gauge(_ name: String, _ help: String, _ value: Double) {
        header(name, "gauge", help)
        sample(name, [], value)
    }

    mutating func histogram(_ name: String, _ help: String, _ h: Histogram) {
        header(name, "histogram", help)
        for (bound, count) in zip(h.bounds, h.cumulative) {
            sample(name + "_bucket", [("le", MetricsText.number(bound))], Double(count))
        }
        sample(name + "_bucket", [("le", "+Inf")], Double(h.count))
        sample(name + "_sum", [], h.sum)
        sample(name + "_count", [], Double(h.count))
    }

    /// Integers without a fraction; others in Swift's shortest round-trip form.
    static func number(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return "\(v)"
    }

    /// A label value: backslash, double quote and newline escaped.
    static func escapeLabel(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// HELP text: backslash and newline escaped.
    static func escapeHelp(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
