#!/usr/bin/env python3
"""check_idl.py — proves that the PyPI `varlink` package, which nobody here
wrote, understands Tether's interface definitions.

    python3 Tests/TetherWireTests/check_idl.py
        Parses protocol/io.tether.varlink and protocol/org.varlink.service.varlink
        with varlink's own parser (`varlink.Interface(text)`) and checks that
        every method, type and error the daemon needs is there.

    python3 Tests/TetherWireTests/check_idl.py --exchange REPLIES.json --emit-calls CALLS.bin
        Drives varlink's real client (SimpleClientInterfaceHandler) over a fake
        connection: for each sample call below, writes the bytes the client
        sends to CALLS.bin (NUL-terminated messages, for TetherWireTests to
        parse with TetherWire), answers with the replies TetherWire wrote to
        REPLIES.json ({"io.tether.Get": [reply, ...], ...}), and checks that
        the client hands back exactly their parameters (errors as
        VarlinkError). TetherWireTests runs this when python3 has varlink.

Needs `pip install varlink` (a wheel may be waiting in /tmp/vl). Exits 0 when
every check passes, 1 otherwise, printing what failed.
"""

import argparse
import json
import os
import sys

try:
    import varlink
except ImportError:
    sys.exit("check_idl.py: the varlink package is missing: pip install varlink")

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

EXPECTED = {
    "io.tether": {
        "methods": ["Get", "Set", "Remove", "Transaction", "List", "Describe", "Declare", "Watch", "Snapshot",
                    "Compact", "Stats", "Metrics", "Watchers"],
        "types": ["ValueType", "OpKind", "Op", "Precondition", "Range", "Descriptor", "StateInfo", "Entry",
                  "Change", "WatchEvent", "Limits", "Limit", "WatcherInfo"],
        "errors": ["RevisionMismatch", "LimitExceeded", "InvalidCall", "AccessDenied", "StorageFull", "InvalidArgument", "Stale",
                   "WrongType", "BadPath", "NotFound", "BadJSON", "OutOfRange", "NoMemory", "FeedbackLoop", "Busy",
                   "WrongThread", "LoopFailure", "ReadOnly", "Cycle", "Rejected", "Untrusted", "TimedOut"],
    },
    "org.varlink.service": {
        "methods": ["GetInfo", "GetInterfaceDescription"],
        "types": [],
        "errors": ["InterfaceNotFound", "MethodNotFound", "MethodNotImplemented", "InvalidParameter",
                   "PermissionDenied", "ExpectedMore"],
    },
}

# One call per method, as a Python program would make it (keyword arguments).
SAMPLES = {
    "io.tether.Get": dict(name="settings", path="/theme"),
    "io.tether.Set": dict(name="settings", path="/theme", value="dark", tag="ui", origin=7),
    "io.tether.Remove": dict(name="settings", path="/old"),
    "io.tether.Transaction": dict(
        ops=[{"op": "set", "name": "a", "path": "/n", "value": 1},
             {"op": "set", "name": "blob", "value": "aGk=", "bytes_at": [""]},
             {"op": "remove", "name": "b"}],
        preconditions=[{"name": "a", "revision": 4}, {"name": "c", "revision": 0}],
        tag="move", origin=-1),
    "io.tether.List": dict(prefix="app.", after="app.m", limit=10),
    "io.tether.Describe": dict(name="volume"),
    "io.tether.Declare": dict(name="volume", descriptor={"type": "double", "read_only": False,
                                                        "range": {"minimum": 0, "maximum": 1}}, value=0.5),
    "io.tether.Watch": dict(names=["settings"], prefix="app.", path="/theme", from_revision=3, epoch="e"),
    "io.tether.Snapshot": dict(path="/var/backups/tether.db"),
    "io.tether.Compact": dict(revision=30),
    "io.tether.Stats": dict(),
    "io.tether.Metrics": dict(),
    "io.tether.Watchers": dict(prefix="app."),
    "org.varlink.service.GetInfo": dict(),
    "org.varlink.service.GetInterfaceDescription": dict(interface="io.tether"),
}
STREAMING = {"io.tether.Watch"}

failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what)


def load(name):
    path = os.path.join(ROOT, "protocol", name + ".varlink")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        interface = varlink.Interface(text)
    except Exception as e:  # varlink raises SyntaxError, and others on bad input
        fail("%s: varlink.Interface refused it: %r" % (path, e))
        return None
    if interface.name != name:
        fail("%s: varlink read the interface name %r" % (path, interface.name))
    methods = [m for m, v in interface.members.items() if isinstance(v, varlink.scanner._Method)]
    types = [m for m, v in interface.members.items() if isinstance(v, varlink.scanner._Alias)]
    errors = [m for m, v in interface.members.items() if isinstance(v, varlink.scanner._Error)]
    expected = EXPECTED[name]
    if methods != expected["methods"]:
        fail("%s: methods %s, expected %s" % (name, methods, expected["methods"]))
    if types != expected["types"]:
        fail("%s: types %s, expected %s" % (name, types, expected["types"]))
    if errors != expected["errors"]:
        fail("%s: errors %s, expected %s" % (name, errors, expected["errors"]))
    for m in methods:
        if interface.members[m].signature is None:
            fail("%s.%s: varlink could not read its signature (a parenthesis in a comment inside it?)" % (name, m))
    print("varlink parsed %s: %d methods, %d types, %d errors" % (name, len(methods), len(types), len(errors)))
    return interface


class FakeConnection:
    """What SimpleClientInterfaceHandler needs of a socket: sendall and recv."""

    def __init__(self, incoming):
        self.sent = b""
        self.incoming = incoming

    def sendall(self, data):
        self.sent += data

    def recv(self, n):
        data, self.incoming = self.incoming[:n], self.incoming[n:]
        return data

    def close(self):
        pass


def normalized(value):
    return json.loads(json.dumps(value, cls=varlink.VarlinkEncoder))


def exchange(interfaces, replies_path, calls_path):
    with open(replies_path, encoding="utf-8") as f:
        replies = json.load(f)
    calls = b""
    exchanged = 0
    for qualified, kwargs in SAMPLES.items():
        interface_name, method = qualified.rsplit(".", 1)
        interface = interfaces[interface_name]
        method_replies = replies.get(qualified, [])
        if not method_replies:
            fail("%s: TetherWire wrote no replies for it" % qualified)
            continue
        batches = [method_replies] if qualified in STREAMING else [[r] for r in method_replies]
        for batch in batches:
            incoming = b"".join(json.dumps(r).encode("utf-8") + b"\0" for r in batch)
            connection = FakeConnection(incoming)
            client = varlink.SimpleClientInterfaceHandler(interface, connection)
            call = getattr(client, method)
            expected_error = batch[-1].get("error")
            try:
                if qualified in STREAMING:
                    got = list(call(_more=True, **kwargs))
                else:
                    got = [call(**kwargs)]
            except varlink.VarlinkError as e:
                if expected_error is None:
                    fail("%s: the client raised %r on a good reply" % (qualified, e))
                elif e.error() != expected_error or normalized(e.parameters()) != batch[-1].get("parameters", {}):
                    fail("%s: the client raised %s %r, expected %s %r" % (
                        qualified, e.error(), e.parameters(), expected_error, batch[-1].get("parameters")))
                got = None
            if got is not None:
                if expected_error is not None:
                    fail("%s: the client did not raise %s" % (qualified, expected_error))
                want = [r.get("parameters", {}) for r in batch]
                if normalized(got) != want:
                    fail("%s: the client read\n  %s\nfrom TetherWire's replies\n  %s" % (
                        qualified, json.dumps(normalized(got)), json.dumps(want)))
            if connection.incoming:
                fail("%s: the client left %d reply bytes unread" % (qualified, len(connection.incoming)))
            if not connection.sent.endswith(b"\0") or connection.sent.count(b"\0") != 1:
                fail("%s: the client sent %r, not one NUL-terminated message" % (qualified, connection.sent))
            calls += connection.sent
            exchanged += 1
    with open(calls_path, "wb") as f:
        f.write(calls)
    print("varlink's client exchanged %d calls with TetherWire's replies" % exchanged)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exchange", metavar="REPLIES.json")
    parser.add_argument("--emit-calls", metavar="CALLS.bin")
    args = parser.parse_args()
    interfaces = {}
    for name in EXPECTED:
        interface = load(name)
        if interface is not None:
            interfaces[name] = interface
    if args.exchange and len(interfaces) == len(EXPECTED):
        exchange(interfaces, args.exchange, args.emit_calls or os.devnull)
    if failures:
        print("check_idl.py: %d check%s failed" % (len(failures), "" if len(failures) == 1 else "s"))
        return 1
    print("check_idl.py: ok (varlink %s)" % getattr(varlink, "__version__", "from PyPI"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
