#!/usr/bin/env python3
"""make_corpus.py — writes the fuzzer's seed corpus, Tests/fuzz/corpus/:
every call of docs/protocol.md's examples (the lines starting with "→"),
one file per method with its examples, one with all of them in order, and
a few sequences that reach deeper (states made first, then written at
paths that the fuzzer's path watches see, arrays shifted, transactions
with preconditions, a Watch followed by a call). Each file is a stream of
NUL-terminated messages, as a client sends them. (The store target's own
seeds, an SQLite file and store rows, are in Tests/fuzz/corpus-store, not
written here.)

    python3 Tests/fuzz/make_corpus.py      (rewrites the directory)
"""

import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(HERE, "corpus")


def stream(calls):
    return b"".join((c if isinstance(c, str) else json.dumps(c, separators=(",", ":"))).encode() + b"\0"
                    for c in calls)


def call(method, more=False, oneway=False, **parameters):
    c = {"method": method if "." in method else "io.tether." + method}
    if parameters:
        c["parameters"] = parameters
    if more:
        c["more"] = True
    if oneway:
        c["oneway"] = True
    return c


def main():
    examples = []
    with open(os.path.join(ROOT, "docs", "protocol.md"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("→ "):
                examples.append(line[2:].strip())
    by_method = {}
    for text in examples:
        try:
            method = json.loads(text)["method"].split(".")[-1]
        except (ValueError, KeyError):
            method = "bad"
        by_method.setdefault(method, []).append(text)

    files = {"protocol-all": stream(examples)}
    for method, texts in by_method.items():
        files["protocol-" + method] = stream(texts)

    files["paths-arrays"] = stream([
        call("Set", name="a", value=[[1, 2], {"x": 1}, 3]),
        call("Set", name="a", path="/0/-", value=4),
        call("Remove", name="a", path="/0/0"),
        call("Set", name="a", path="/-", value="end"),
        call("Remove", name="a", path="/0"),
        call("Get", name="a", path="/0/1"),
        call("Set", name="b", value={"a": [0, {"k": True}], "z": None}),
        call("Set", name="b", path="/a/1/k", value=False),
        call("Remove", name="b", path="/a/0"),
        call("Set", name="b", path="/a/-", value=1.5),
        call("Remove", name="b"),
    ])
    files["transactions"] = stream([
        call("Transaction", ops=[{"op": "set", "name": "a", "value": {"a": [1, 2, 3]}},
                                 {"op": "set", "name": "b", "value": [0]}], tag="t", origin=1),
        call("Transaction", ops=[{"op": "set", "name": "a", "path": "/a/1", "value": 9},
                                 {"op": "remove", "name": "b", "path": "/0"}],
             preconditions=[{"name": "a", "revision": 1}, {"name": "b", "revision": 1}]),
        call("Transaction", ops=[{"op": "set", "name": "a", "path": "/a/-", "value": 4},
                                 {"op": "remove", "name": "a", "path": "/a/3"}]),
        call("Transaction", ops=[{"op": "set", "name": "c", "value": 1},
                                 {"op": "remove", "name": "c"}]),
        call("Transaction", ops=[], preconditions=[{"name": "zz", "revision": 0}]),
        call("Transaction", ops=[{"op": "set", "name": "a", "value": 1}],
             preconditions=[{"name": "a", "revision": 99}]),
    ])
    files["declare"] = stream([
        call("Set", name="a", value=[1, 2]),
        call("Declare", name="a", descriptor={"type": "array"}),
        call("Set", name="a", value="x"),
        call("Declare", name="n", descriptor={"type": "double", "range": {"minimum": 0, "maximum": 10}}, value=3),
        call("Set", name="n", value=7),
        call("Set", name="n", value=70),
        call("Declare", name="n", descriptor={"read_only": True}),
        call("Set", name="n", value=1.0),
        call("Describe", name="n"),
        call("Declare", name="i", descriptor={}, value=1),
        call("Declare", name="i", descriptor={"type": "double"}),
    ])
    files["watch-then-call"] = stream([
        call("Set", name="a", value={"a": [0, 1]}),
        call("Watch", more=True, prefix="", path="/a/1"),
        call("Get", name="a"),
    ])
    files["watch-resume"] = stream([
        call("Set", name="b", value=1),
        call("Set", name="b", value=2),
        call("Watch", more=True, names=["b"], from_revision=1, epoch="fuzz"),
    ])
    files["oneway-and-bad"] = stream([
        call("Set", oneway=True, name="a", value=1),
        '{"method":"io.tether.Get","parameters":{"name":"a"},"oneway":true,"more":true}',
        '{"method":"io.tether.Get","upgrade":true}',
        "",
        "[1,2]",
        '{"method":"io.tether.Get","parameters":{"name":"a","extra":1}}',
        '{"method":"io.tether.Set","parameters":{"name":"a","value":"\\u0000\\ud800"}}',
        call("Stats"),
        call("List"),
    ])
    files["bytes"] = stream([
        call("Set", name="a", value={"k": "AAEC", "l": ["/w=="]}, bytes_at=["/k", "/l/0"]),
        call("Get", name="a", path="/k"),
        call("Set", name="a", path="/l/-", value="AA==", bytes_at=[""]),
    ])

    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    for name, data in sorted(files.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("make_corpus.py: %d files in %s" % (len(files), os.path.relpath(OUT, ROOT)))


if __name__ == "__main__":
    main()
