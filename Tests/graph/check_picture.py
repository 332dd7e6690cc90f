#!/usr/bin/env python3
"""check_picture.py — the lesson graph_form's picture, read back by Graphviz.

Runs the lesson (examples-c/graph_form.c, built by Tests/CTests/run.sh) to
get its graph as DOT, has Graphviz lay it out (`dot -Tjson`: Graphviz's own
reader and writer, not ours), and checks the picture's structure from that
JSON: which nodes there are (kind and name) and which edges join them, with
the JSON Pointer each read. No text of the DOT is compared.

    check_picture.py BUILT_LESSON [--png OUT.png]

--png also writes the picture (docs/graph_form.png is made this way).
Exit 0: as expected; 1: not; 77: Graphviz is not installed (skipped).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    lesson = sys.argv[1]
    if shutil.which("dot") is None:
        print("graph_form_picture: skipped (Graphviz's dot is not installed: apt-get install graphviz)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        dot_file = os.path.join(tmp, "form.dot")
        run = subprocess.run([lesson, dot_file], capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            print(run.stdout + run.stderr)
            print("FAIL: the lesson exited %d" % run.returncode)
            return 1
        laid_out = subprocess.run(["dot", "-Tjson", dot_file], capture_output=True, text=True, timeout=60)
        if laid_out.returncode != 0:
            print(laid_out.stderr)
            print("FAIL: dot -Tjson refused the lesson's DOT")
            return 1
        if "--png" in sys.argv:
            out = sys.argv[sys.argv.index("--png") + 1]
            subprocess.run(["dot", "-Tpng", dot_file, "-o", out], check=True, timeout=60)
    picture = json.loads(laid_out.stdout)

    nodes = picture.get("objects", [])
    edges = picture.get("edges", [])
    by_id = {n["_gvid"]: n for n in nodes}
    kinds = {}
    for n in nodes:
        kinds.setdefault(n.get("tether_kind"), []).append(n)
    # Every node was placed: Graphviz gave it a position.
    check(all("pos" in n for n in nodes), "every node has a position")

    states = {n.get("tether_name"): n for n in kinds.get("state", [])}
    check(sorted(states) == ["age", "agreed", "form"], "states form, agreed, age by name: %s" % sorted(states))
    for name, n in states.items():
        check(n.get("label") == name, "state %s is labelled with its name (%r)" % (name, n.get("label")))
        check(n.get("shape") == "box", "state %s is a box" % name)
    check(len(kinds.get("computed", [])) == 2, "two computeds")
    check(len(kinds.get("effect", [])) == 1, "one effect")
    check(set(kinds) <= {"state", "computed", "effect"}, "nothing else: %s" % sorted(k for k in kinds if k))
    for n in kinds.get("computed", []) + kinds.get("effect", []):
        check("tether_marks" not in n, "%s is up to date (no marks)" % n.get("name"))
        check(n.get("label", "").endswith(n.get("tether_handle", "?")),
              "unnamed %s labelled by kind and handle (%r)" % (n.get("tether_kind"), n.get("label")))

    def end(gvid):
        n = by_id[gvid]
        return n.get("tether_name") or n.get("tether_kind")

    found = []
    for e in edges:
        found.append((end(e["tail"]), end(e["head"]), e.get("tether_pointer"), e.get("tether_edge")))
        check((e.get("label") or None) == e.get("tether_pointer"),
              "an edge is labelled with its pointer (none: the whole value): %r" % (e.get("label"),))

    # Tell the computeds apart by what they read.
    readers_of_name = {e[1] for e in found if e[2] == "/name"}
    check(readers_of_name == {"computed"}, "a computed reads form at /name")
    expected = sorted([
        ("form", "computed", "/name", "reads"),        # greeting
        ("form", "computed", "/email", "reads"),       # can_submit
        ("agreed", "computed", None, "reads"),         # can_submit: the whole value
        ("age", "computed", None, "reads"),
        ("computed", "effect", None, "reads"),         # the button reads both
        ("computed", "effect", None, "reads"),
    ], key=str)
    check(sorted(found, key=str) == expected, "edges %s, expected %s" % (sorted(found, key=str), expected))
    # greeting (reads /name) and can_submit (reads /email, agreed, age) are
    # different computeds, and the effect reads each of them.
    gv = {(by_id[e["tail"]].get("tether_name"), e.get("tether_pointer")): e["head"] for e in edges}
    greeting, can_submit = gv.get(("form", "/name")), gv.get(("form", "/email"))
    check(greeting is not None and can_submit is not None and greeting != can_submit,
          "greeting and can_submit are two nodes")
    check(gv.get(("agreed", None)) == can_submit and gv.get(("age", None)) == can_submit,
          "agreed and age are read by the computed that reads /email")
    effect_reads = {e["tail"] for e in edges if by_id[e["head"]].get("tether_kind") == "effect"}
    check(effect_reads == {greeting, can_submit}, "the effect reads both computeds")

    print("graph_form_picture: %d nodes, %d edges; %s" %
          (len(nodes), len(edges), "ok" if not failures else "%d failed" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
