#!/usr/bin/env python3
"""python_client.py ADDRESS — PyPI's `varlink` client (which nobody here
wrote) against a running tetherd.

    python3 Tests/DaemonTests/python_client.py unix:/path/to/tetherd.sock

Opens io.tether with `varlink.Client(address=...).open('io.tether')` (which
itself fetches the interface with GetInterfaceDescription) and calls every
method: Get, Set, Remove, Transaction, List, Describe, Declare, Watch (with
_more=True on a connection of its own: snapshot, progress, then the changes
another connection makes), Stats, Metrics, Watchers, and org.varlink.service's GetInfo and
GetInterfaceDescription. Checks every result and every typed error
(varlink.VarlinkError and its error name). The daemon must be fresh: no
state yet. Exits 0 when every check passes; otherwise prints each mismatch
and exits 1. PythonClientTests runs it against a DaemonFixture.
"""

import base64
import os
import sys

try:
    import varlink
except ImportError:
    sys.exit("python_client.py: the varlink package is missing: pip install varlink")

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

failures = []
checks = 0


def check(condition, what):
    global checks
    checks += 1
    if not condition:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return condition


def equal(got, expected, what):
    return check(got == expected, "%s: expected %r, got %r" % (what, expected, got))


def expect_error(error_name, call, what, **parameters):
    """Runs call(), which must fail with the Varlink error `name` whose
    parameters include `parameters`; returns the error's parameters."""
    try:
        result = call()
    except varlink.VarlinkError as error:
        equal(error.error(), error_name, what + ": error name")
        got = error.parameters() or {}
        for key, value in parameters.items():
            equal(got.get(key), value, "%s: error parameter %s" % (what, key))
        return got
    check(False, "%s: expected %s, got the reply %r" % (what, error_name, result))
    return {}


def next_change(stream):
    """The next change reply of a watch; idle progress replies (the daemon
    sends one now and then) are skipped."""
    while True:
        reply = next(stream)
        if reply.get("event") != "progress":
            return reply


def read_text(relative):
    with open(os.path.join(ROOT, relative), encoding="utf-8") as f:
        return f.read()


def main(address):
    client = varlink.Client(address=address)
    t = client.open("io.tether")
    service = client.open("org.varlink.service")

    # org.varlink.service
    info = service.GetInfo()
    equal(info.get("product"), "tetherd", "GetInfo product")
    equal(sorted(info.get("interfaces", [])), ["io.tether", "org.varlink.service"], "GetInfo interfaces")
    for key in ("vendor", "version", "url"):
        check(isinstance(info.get(key), str), "GetInfo %s is a string: %r" % (key, info))
    equal(service.GetInterfaceDescription(interface="io.tether").get("description"),
          read_text("protocol/io.tether.varlink"), "GetInterfaceDescription io.tether (byte for byte)")
    equal(service.GetInterfaceDescription(interface="org.varlink.service").get("description"),
          read_text("protocol/org.varlink.service.varlink"), "GetInterfaceDescription org.varlink.service")
    expect_error("org.varlink.service.InterfaceNotFound",
                 lambda: service.GetInterfaceDescription(interface="io.nope"),
                 "GetInterfaceDescription of an unknown interface", interface="io.nope")

    # Set, Get
    stats0 = t.Stats()
    r0 = stats0["revision"]
    equal(stats0["states"], 0, "Stats states of a fresh daemon")
    s = t.Set(name="settings", value={"theme": "dark", "font": {"size": 11}})
    equal(s, {"revision": r0 + 1, "changed": True}, "Set creates a state")
    g = t.Get(name="settings")
    equal(g.get("value"), {"theme": "dark", "font": {"size": 11}}, "Get the whole value")
    equal(g.get("type"), "object", "Get type")
    equal((g.get("revision"), g.get("modified")), (r0 + 1, r0 + 1), "Get revision and modified")
    g = t.Get(name="settings", path="/font/size")
    equal((g.get("value"), g.get("type")), (11, "int"), "Get at a path")
    s = t.Set(name="settings", path="/theme", value="light", tag="ui", origin=7)
    equal(s, {"revision": r0 + 2, "changed": True}, "Set at a path")
    s = t.Set(name="settings", path="/theme", value="light")
    equal(s, {"revision": r0 + 2, "changed": False}, "Set of an equal value commits nothing")
    s = t.Set(name="ratio", value=0.25)
    equal(t.Get(name="ratio").get("type"), "double", "a number with a fraction is a double")
    t.Set(name="empty", value=None)
    g = t.Get(name="empty")
    check("value" not in g or g["value"] is None, "a null value is left out: %r" % g)
    equal(g.get("type"), "null", "Get type of null")
    expect_error("io.tether.NotFound", lambda: t.Get(name="nope"), "Get of a missing state", name="nope")
    expect_error("io.tether.NotFound", lambda: t.Get(name="settings", path="/nope"), "Get of a missing member")
    expect_error("io.tether.BadPath", lambda: t.Get(name="settings", path="theme"), "Get with a malformed path")
    expect_error("io.tether.WrongType", lambda: t.Get(name="settings", path="/theme/x"), "Get through a scalar")
    t.Set(name="list", value=[1, 2])
    expect_error("io.tether.OutOfRange", lambda: t.Get(name="list", path="/5"), "Get past the end of an array")
    t.Set(name="list", path="/-", value=3)
    equal(t.Get(name="list").get("value"), [1, 2, 3], "Set at /- appends")

    # Bytes: base64 strings listed in bytes_at.
    blob = base64.b64encode(b"\x00\x01\xfe\xff").decode()
    equal(t.Set(name="avatar", value=blob, bytes_at=[""]).get("changed"), True, "Set bytes")
    g = t.Get(name="avatar")
    equal((g.get("value"), g.get("bytes_at"), g.get("type")), (blob, [""], "bytes"), "Get bytes")
    t.Set(name="avatar", value={"png": blob, "n": 1}, bytes_at=["/png"])
    equal(t.Get(name="avatar").get("bytes_at"), ["/png"], "bytes inside an object")
    expect_error("org.varlink.service.InvalidParameter",
                 lambda: t.Set(name="avatar", value="not base64!", bytes_at=[""]), "bytes_at naming a non-base64 string")

    # Remove
    rev = t.Stats()["revision"]
    equal(t.Remove(name="settings", path="/font"), {"revision": rev + 1, "changed": True}, "Remove at a path")
    equal(t.Get(name="settings").get("value"), {"theme": "light"}, "after Remove at a path")
    expect_error("io.tether.NotFound", lambda: t.Remove(name="settings", path="/font"), "Remove of a missing member")
    equal(t.Remove(name="ratio"), {"revision": rev + 2, "changed": True}, "Remove a state")
    expect_error("io.tether.NotFound", lambda: t.Get(name="ratio"), "Get after Remove")

    # Declare, Describe
    d = t.Declare(name="volume", descriptor={"type": "double", "range": {"minimum": 0.0, "maximum": 1.0}}, value=0.5)
    equal(d, {"revision": rev + 3, "created": True}, "Declare creates a state")
    desc = t.Describe(name="volume")
    equal(desc.get("descriptor", {}).get("type"), "double", "Describe type lock")
    equal(desc.get("descriptor", {}).get("range"), {"minimum": 0.0, "maximum": 1.0}, "Describe range")
    check(not desc.get("descriptor", {}).get("read_only"), "Describe: not read-only")
    equal((desc.get("type"), desc.get("modified")), ("double", rev + 3), "Describe type and modified")
    expect_error("io.tether.OutOfRange", lambda: t.Set(name="volume", value=1.5), "Set outside the range", name="volume")
    expect_error("io.tether.WrongType", lambda: t.Set(name="volume", value="loud"), "Set of the wrong type", name="volume")
    t.Set(name="volume", value=1)
    g = t.Get(name="volume")
    check(g.get("type") == "double" and g.get("value") == 1.0 and isinstance(g.get("value"), float),
          "an int in a double state is stored as a double: %r" % g)
    t.Declare(name="build.id", descriptor={"type": "string", "read_only": True}, value="r1")
    equal(t.Describe(name="build.id").get("descriptor"), {"type": "string", "read_only": True}, "Describe read-only")
    expect_error("io.tether.ReadOnly", lambda: t.Set(name="build.id", value="r2"), "Set of a read-only state",
                 name="build.id")
    expect_error("io.tether.ReadOnly", lambda: t.Remove(name="build.id"), "Remove of a read-only state")
    equal(t.Declare(name="build.id", descriptor={"type": "string"}).get("created"), False, "Declare again lifts read-only")
    equal(t.Set(name="build.id", value="r2").get("changed"), True, "Set after read-only is lifted")
    expect_error("io.tether.WrongType", lambda: t.Declare(name="build.id", descriptor={"type": "int"}),
                 "Declare that the current value does not satisfy")
    equal(t.Describe(name="build.id").get("descriptor"), {"type": "string"}, "a refused Declare changes nothing")
    expect_error("io.tether.NotFound", lambda: t.Describe(name="nope"), "Describe of a missing state")

    # Transaction
    a = t.Set(name="account.alice", value={"balance": 100})["revision"]
    b = t.Set(name="account.bob", value={"balance": 100})["revision"]
    tx = t.Transaction(ops=[{"op": "set", "name": "account.alice", "path": "/balance", "value": 70},
                            {"op": "set", "name": "account.bob", "path": "/balance", "value": 130}],
                       preconditions=[{"name": "account.alice", "revision": a}, {"name": "account.bob", "revision": b},
                                      {"name": "account.carol", "revision": 0}],
                       tag="transfer", origin=7)
    equal(tx, {"revision": b + 1, "changed": True}, "Transaction commits under one revision")
    equal((t.Get(name="account.alice")["modified"], t.Get(name="account.bob")["modified"]), (b + 1, b + 1),
          "both states modified at the transaction's revision")
    expect_error("io.tether.RevisionMismatch",
                 lambda: t.Transaction(ops=[{"op": "set", "name": "account.alice", "path": "/balance", "value": 0}],
                                       preconditions=[{"name": "account.alice", "revision": a}]),
                 "Transaction with a stale precondition", name="account.alice", expected=a, actual=b + 1, index=0)
    expect_error("io.tether.RevisionMismatch",
                 lambda: t.Transaction(ops=[], preconditions=[{"name": "account.bob", "revision": b + 1},
                                                              {"name": "account.alice", "revision": 0}]),
                 "a pure check: the state must not exist", name="account.alice", expected=0, actual=b + 1, index=1)
    equal(t.Transaction(ops=[], preconditions=[{"name": "account.bob", "revision": b + 1}]),
          {"revision": b + 1, "changed": False}, "a pure check that holds")
    expect_error("io.tether.WrongType",
                 lambda: t.Transaction(ops=[{"op": "set", "name": "fresh", "value": 1},
                                            {"op": "set", "name": "volume", "value": "loud"}]),
                 "Transaction with a refused op", name="volume", op=1)
    expect_error("io.tether.NotFound", lambda: t.Get(name="fresh"), "a failed transaction changes nothing")
    equal(t.Get(name="account.alice")["value"], {"balance": 70}, "a failed precondition changes nothing")
    expect_error("org.varlink.service.InvalidParameter",
                 lambda: t.Transaction(ops=[{"op": "sett", "name": "a"}]), "an op that is not set or remove",
                 parameter="ops[0].op")
    tx = t.Transaction(ops=[{"op": "remove", "name": "account.bob", "path": "/balance"},
                            {"op": "set", "name": "account.carol", "value": {"balance": 5}}])
    equal(tx.get("changed"), True, "Transaction with remove")
    equal(t.Get(name="account.bob")["value"], {}, "the remove applied")

    # List
    lst = t.List(prefix="account.")
    equal([s["name"] for s in lst["states"]], ["account.alice", "account.bob", "account.carol"], "List with a prefix")
    equal(lst["truncated"], False, "List not truncated")
    equal(lst["states"][0], {"name": "account.alice", "type": "object", "modified": b + 1}, "List entry")
    page = t.List(prefix="account.", limit=2)
    equal(([s["name"] for s in page["states"]], page["truncated"]), (["account.alice", "account.bob"], True),
          "List first page")
    page = t.List(prefix="account.", after="account.bob", limit=2)
    equal(([s["name"] for s in page["states"]], page["truncated"]), (["account.carol"], False), "List after")
    t.Set(name="accountant", value=1)
    equal(len(t.List(prefix="account.")["states"]), 3, "a prefix matches byte for byte")
    everything = t.List()
    names = [s["name"] for s in everything["states"]]
    equal(names, sorted(names, key=lambda n: n.encode()), "List is in byte order")
    equal(everything["revision"], t.Stats()["revision"], "List revision")

    # Watch, on a connection of its own.
    expect_error("org.varlink.service.ExpectedMore", lambda: t.Watch(names=["settings"]), "Watch without more")
    w = client.open("io.tether")
    stream = w.Watch(names=["settings", "missing"], _more=True)
    snapshots = {}
    progress = None
    while progress is None:
        reply = next(stream)
        if reply.get("event") == "snapshot":
            snapshots[reply["state"]["name"]] = reply
        elif check(reply.get("event") == "progress", "Watch: a snapshot or progress first: %r" % reply):
            progress = reply
        else:
            break
    if progress is not None:
        now = t.Stats()
        epoch = progress.get("epoch")
        equal(progress.get("revision"), now["revision"], "Watch progress at the current revision")
        equal(epoch, now["epoch"], "Watch epoch is the daemon's")
        settings = snapshots.get("settings", {})
        equal((settings.get("revision"), settings.get("epoch")), (now["revision"], epoch), "snapshot revision and epoch")
        equal(settings.get("state", {}).get("value"), {"theme": "light"}, "snapshot value")
        equal(settings.get("state", {}).get("exists"), True, "snapshot exists")
        equal(settings.get("state", {}).get("type"), "object", "snapshot type")
        missing = snapshots.get("missing", {}).get("state", {})
        equal((missing.get("exists"), missing.get("modified")), (False, 0), "snapshot of a missing state")

        r1 = t.Set(name="settings", path="/theme", value="dark", tag="ui", origin=7)["revision"]
        t.Set(name="unwatched", value=1)
        r2 = t.Transaction(ops=[{"op": "set", "name": "missing", "value": 1},
                                {"op": "remove", "name": "settings"}], tag="tx", origin=-1)["revision"]
        changes = [next_change(stream), next_change(stream)]
        c1 = changes[0]
        equal((c1.get("event"), c1.get("revision"), c1.get("epoch")), ("change", r1, epoch), "first change")
        equal(c1.get("changes"), [{"name": "settings", "op": "set", "path": "/theme", "value": "dark"}],
              "first change's writes")
        equal((c1.get("tag"), c1.get("origin")), ("ui", 7), "first change's tag and origin")
        c2 = changes[1]
        equal((c2.get("event"), c2.get("revision")), ("change", r2), "second change (the unwatched write sends nothing)")
        got = sorted(c2.get("changes", []), key=lambda c: c["name"])
        equal(got, [{"name": "missing", "op": "set", "path": "", "value": 1},
                    {"name": "settings", "op": "remove", "path": ""}], "one reply per commit, never split")
        equal((c2.get("tag"), c2.get("origin")), ("tx", -1), "origin travels as int64")
        equal(t.Stats().get("watches"), 1, "Stats counts the watch")
        w.close()

        # Resume from the progress revision: the same changes again, then progress.
        w = client.open("io.tether")
        stream = w.Watch(names=["settings", "missing"], from_revision=progress["revision"], epoch=epoch, _more=True)
        replayed = [next_change(stream), next_change(stream), next(stream)]
        equal([(r.get("event"), r.get("revision")) for r in replayed],
              [("change", r1), ("change", r2), ("progress", t.Stats()["revision"])], "Watch resumed from a revision")
        w.close()

        # A prefix watch with a path.
        w = client.open("io.tether")
        stream = w.Watch(prefix="account.", path="/balance", _more=True)
        first = [next(stream) for _ in range(4)]
        equal([r.get("event") for r in first], ["snapshot"] * 3 + ["progress"], "prefix watch: 3 snapshots, progress")
        t.Set(name="account.alice", path="/note", value="x")       # not at /balance: nothing sent
        r3 = t.Set(name="account.alice", value={"balance": 1})["revision"]
        c3 = next_change(stream)
        equal((c3.get("revision"), c3.get("changes")),
              (r3, [{"name": "account.alice", "op": "set", "path": "/balance", "value": 1}]),
              "a write above the path arrives as a set at the path")
        w.close()

    # Stats
    stats = t.Stats()
    for key in ("revision", "states", "connections", "watches", "oldest_revision"):
        check(isinstance(stats.get(key), int), "Stats %s is an int: %r" % (key, stats))
    equal(stats.get("states"), len(t.List()["states"]), "Stats states")
    check(stats.get("connections", 0) >= 2, "Stats connections: %r" % stats.get("connections"))
    check(0 <= stats.get("oldest_revision", -1) <= stats.get("revision", -1), "Stats oldest_revision")
    equal(stats.get("limits", {}).get("max_ops"), 128, "Stats limits max_ops")
    equal(stats.get("limits", {}).get("max_list"), 1000, "Stats limits max_list")

    # Metrics and Watchers: the daemon's own uid may read them.
    text = t.Metrics()["text"]
    check("tetherd_commits_total " in text, "Metrics has tetherd_commits_total")
    check("tetherd_revision %d" % t.Stats()["revision"] in text, "Metrics has the revision")
    listed = t.Watchers(prefix="account.")
    check(isinstance(listed.get("watchers"), list) and listed.get("truncated") is False,
          "Watchers lists watchers: %r" % listed)

    t.close()
    service.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python_client.py unix:/path/to/tetherd.sock")
    try:
        main(sys.argv[1])
    except varlink.VarlinkError as error:
        failures.append("unexpected Varlink error %s %r" % (error.error(), error.parameters()))
        print("FAIL:", failures[-1])
    except (OSError, StopIteration, KeyError, TypeError) as error:
        failures.append("unexpected %s: %s" % (type(error).__name__, error))
        print("FAIL:", failures[-1])
    if failures:
        print("python_client.py: %d check(s) failed" % len(failures))
        sys.exit(1)
    print("python_client.py: every check passed (%d checks)" % checks)
