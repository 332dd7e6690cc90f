#!/usr/bin/env python3
"""report.py - docs/benchmarks.md and docs/benchmarks.png from one run of
benchmarks/run.sh (`make bench`).

Reads .build-bench/results/<system>.r<N>.jsonl (one JSON object per figure
and round, as benchmarks/common/bench.h writes them; each figure the better
of its rounds), <system>.status and versions.txt,
and writes the table (every workload, Tether beside each anchor, Tether's
ratio to each, whether each target of the benchmark issue is met), the
machine, the date, the command, and a bar chart of the ratios (log scale).

Standard library only, plus matplotlib for the chart (skipped with a message
when it is missing).
"""
import argparse
import datetime
import glob
import json
import math
import os
import re
import platform
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "icount"))
import report_icount  # noqa: E402  (the section "Instruction counts")

SYSTEMS = ["tether", "gobject", "qt", "swift"]
# Drivers whose results are loaded: the systems above, plus "daemon"
# (benchmarks/daemon/bench_tetherd.c: tetherd beside Redis, its own section).
DRIVERS = SYSTEMS + ["daemon"]
# Results that come from no driver of their own: benchmarks/icount/icount.py
# (instruction counts under callgrind, one round: they do not drift).
RESULT_FILES = DRIVERS + ["icount"]
ANCHORS = ["gobject", "qt", "swift"]
LABEL = {
    "tether": "Tether",
    "gobject": "GObject",
    "qt": "Qt 6",
    "swift": "Swift Observation",
    "alien": "alien-signals",
    "daemon": "tetherd beside Redis",
}

# alien-signals 3.2.1 on V8, fastest kept, this machine class (2 cores):
# /work/shared/BENCHMARKS.md, "Figures to beat", measured 2026-11-22.
ALIEN_MS = {
    "avoidablePropagation": 39.6,
    "broadPropagation": 86.5,
    "deepPropagation": 31.9,
    "diamond": 48.8,
    "mux": 90.1,
    "repeatedObservers": 6.3,
    "triangle": 20.2,
    "unstable": 17.4,
    "molBench": 18.5,
    "cellx1000": 15.6,
    "cellx2500": 35.3,
    "2-10x5 lazy80%": 175.7,
    "6-10x10 dyn25% lazy80%": 140.5,
    "4-1000x12 dyn5%": 331.8,
    "25-1000x5": 484.5,
    "3-5x500": 105.5,
    "6-100x15 dyn50%": 181.9,
}

# The anchor figures BENCHMARKS.md quotes (median of 3 runs, 2026-11-22);
# shown for reference only: the targets compare with this run's figures.
BENCHMARKS_ANCHORS = {
    "set+notify": {"qt": 14.5, "gobject": 285, "swift": 928},
    "chain": {"qt": 22.5, "gobject": 761, "swift": 1257},
    "fanout": {"qt": 3.6, "gobject": 53.7, "swift": 1028},
}

KAIRO = ["avoidablePropagation", "broadPropagation", "deepPropagation", "diamond", "mux",
         "repeatedObservers", "triangle", "unstable", "molBench"]
DYNAMIC = ["2-10x5 lazy80%", "6-10x10 dyn25% lazy80%", "4-1000x12 dyn5%", "25-1000x5",
           "3-5x500", "6-100x15 dyn50%"]


def same(group, name):
    return {s: (group, name) for s in SYSTEMS}


def row(label, unit, names, alien=None, target=None, lower_is_better=True, key=None):
    return {"label": label, "unit": unit, "names": names, "alien": alien, "target": target,
            "lower": lower_is_better, "key": key or label}


def micro(label, tether_name, anchor_name, unit, target, key):
    names = {s: ("micro", anchor_name) for s in ANCHORS}
    names["tether"] = ("micro", tether_name)
    return row(label, unit, names, target=target, key=key)


GROUPS = [
    ("kairo", "Kairo suite", "build once, 3 warm-up `iter()`, fastest of 10 samples of 500 "
     "`iter()` (GObject's deepPropagation: 5 samples)",
     [row(n, "ms", same("kairo", n), ALIEN_MS[n], "alien") for n in KAIRO]),
    ("kairo-single", "Kairo suite, Tether's single-threaded runtime (TETHER_RUNTIME_SINGLE_THREAD: "
     "no locks, one thread only; the peers' figures are their only mode)",
     "as the Kairo suite",
     [row(n, "ms", {**same("kairo", n), "tether": ("kairo-single", n)}, ALIEN_MS[n], "alien",
          key=n + " [single]") for n in KAIRO]),
    ("cellx", "cellx", "build (untimed), run timed, dispose (untimed), 10 times, sum",
     [row(n, "ms", same("cellx", n), ALIEN_MS[n], "alien") for n in ("cellx1000", "cellx2500")]),
    ("dynamic", "Dynamic graphs (\"reactively\")",
     "build, 3 untimed runs, fastest of 5 timed runs with the counter reset; sum and count "
     "checked on every run",
     [row(n, "ms", same("dynamic", n), ALIEN_MS[n], "alien") for n in DYNAMIC]),
    ("creation", "Creation and update (S.js style), COUNT = 100000",
     "per case: 3 warm-ups at n/100, fastest of 10 samples (create, update and dispose timed); "
     "each figure is the sum of its cases",
     [row(n, "ms", same("creation", n), None, "peers")
      for n in ("createSignals", "createComputations", "updateSignals")]),
    ("micro", "set+notify, 50-deep chain, fan-out",
     "fastest of 5 runs (Swift Observation: 3 runs; its fan-out: one run) after a warm-up",
     [micro("set+notify, ns per write", "set+notify [host]", "set+notify", "ns", "qt30",
            "set+notify"),
      micro("set+notify, Tether's default runtime (loop thread)", "set+notify [thread]",
            "set+notify", "ns", "qt30", "set+notify-thread"),
      micro("set+notify, Tether's single-threaded runtime (no locks)", "set+notify [single]",
            "set+notify", "ns", "qt30", "set+notify-single"),
      micro("50-deep chain (deepPropagation), ms", "50-deep chain", "50-deep chain", "ms",
            "qt30", "chain"),
      micro("50-deep chain, Tether's single-threaded runtime", "50-deep chain [single]",
            "50-deep chain", "ms", "qt30", "chain-single"),
      micro("fan-out, ns per notification", "fan-out [host]", "fan-out", "ns", "qt30", "fanout"),
      micro("fan-out, Tether's default runtime (loop thread)", "fan-out [thread]", "fan-out",
            "ns", "qt30", "fanout-thread"),
      micro("fan-out, Tether's single-threaded runtime", "fan-out [single]", "fan-out",
            "ns", "qt30", "fanout-single")]),
    ("crossthread", "Cross-thread: writer thread -> observer on the loop thread",
     "latency: each write is delivered before the next is made; sustained: as fast as "
     "the writer can go",
     [row("latency p50, us", "us", same("crossthread", "latency p50"), None, "peers"),
      row("latency p99, us", "us", same("crossthread", "latency p99"), None, "p99"),
      row("sustained writes per second", "writes/s",
          same("crossthread", "sustained writes/s"), None, "peers", lower_is_better=False)]),
    ("paths", "Tracking by path: one write among 1,000 fields",
     "one state of 1,000 int fields and one computed per field; an iteration writes one field "
     "and reads all 1,000 computeds, in µs; fastest of 5 runs; the recomputes per write are "
     "checked (1 by path, 1,000 through the whole value)",
     [row("1,000 computeds reading their field by path", "us", same("paths", "path tracking"),
          None, None),
      row("1,000 computeds reading the whole state, picking a field", "us",
          same("paths", "whole-state tracking"), None, None)]),
    ("memory", "Memory at one million nodes",
     "mallinfo2() (uordblks + hblkhd) before and after, divided by the count; RSS difference "
     "in the JSON results",
     [row("bytes per state", "bytes", same("memory", "per state"), None, "state64"),
      row("bytes per computed", "bytes", same("memory", "per computed"), None, None),
      row("bytes per dependency edge", "bytes", same("memory", "per dependency edge"), None,
          "edge48")]),
]

TARGET_TEXT = {
    "alien": "at or under alien-signals, ahead of every peer",
    "peers": "ahead of every peer",
    "qt30": "at or under Qt 6, 30x faster than Swift Observation, ahead of every peer",
    "p99": "p99 at or under 100 us",
    "state64": "at most 64 bytes",
    "edge48": "at most 48 bytes",
}


# ---------------------------------------------------------------------------
# loading

def better(old, new):
    """The record to keep when a figure was measured in several rounds: a
    record that is not ok (a failed check, a crash, a workload not finished
    or not expressed) is never hidden by a round that went well; of two ok
    records, the faster (for writes per second, the higher) one."""
    if old is None:
        return new
    if not old.get("ok"):
        return old
    if not new.get("ok"):
        return new
    if "value" not in old or "value" not in new:
        return old if "value" in old else new
    if old.get("unit") in ("writes/s", "ops/s"):
        return new if new["value"] > old["value"] else old
    return new if new["value"] < old["value"] else old


def load(results):
    figures = {}
    status = {}
    for s in RESULT_FILES:
        # <system>.r<N>.jsonl per round (run.sh); <system>.jsonl from before rounds.
        paths = sorted(glob.glob(os.path.join(results, s + ".r*.jsonl")))
        paths += [p for p in [os.path.join(results, s + ".jsonl")] if os.path.exists(p)]
        for path in paths:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    line = line.strip()
                    if not line.startswith("{"):
                        continue
                    try:
                        r = json.loads(line)
                    except ValueError:
                        continue
                    key = (r["sys"], r["group"], r["name"])
                    figures[key] = better(figures.get(key), r)
        st = os.path.join(results, s + ".status")
        status[s] = open(st, encoding="utf-8").read().strip() if os.path.exists(st) else "not run"
    versions = {}
    vp = os.path.join(results, "versions.txt")
    if os.path.exists(vp):
        for line in open(vp, encoding="utf-8"):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                versions[k] = v
    return figures, status, versions


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def machine():
    model, cpus = "?", "?"
    for line in sh("lscpu").splitlines():
        k, _, v = line.partition(":")
        if k.strip() == "Model name":
            model = v.strip()
        elif k.strip() == "CPU(s)":
            cpus = v.strip()
    mem = "?"
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem = "%.1f GiB" % (int(line.split()[1]) / 1048576)
    except OSError:
        pass
    osname = platform.system()
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                osname = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"cpu": model, "cores": cpus, "memory": mem, "kernel": platform.release(),
            "os": osname}


def git_commit():
    c = sh("git", "rev-parse", "--short=12", "HEAD") or "?"
    dirty = sh("git", "status", "--porcelain", "--untracked-files=no")
    return c + (" (with uncommitted changes)" if dirty else "")


# ---------------------------------------------------------------------------
# formatting

def fmt(v):
    if v is None:
        return ""
    a = abs(v)
    if a >= 1e6:
        return "%.3g M" % (v / 1e6) if a < 1e9 else "%.3g G" % (v / 1e9)
    if a >= 1e4:
        return "%.0f k" % (v / 1e3)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3g" % v


def cell_value(r):
    """(value or None, marker text for the table)."""
    if r is None:
        return None, "n/r"
    if r.get("skip"):
        return None, "—"
    if r.get("dnf"):
        return None, "DNF"
    if r.get("crashed"):
        return None, "crash"
    if not r.get("ok"):
        return None, "check failed"
    v = r.get("value")
    text = fmt(v)
    if r.get("check_failed"):
        text += " ‡"
    return v, text


def ratio(tether, other, lower):
    """Tether's cost relative to `other`: < 1 means Tether is better."""
    if tether is None or other is None or other == 0 or tether == 0:
        return None
    return tether / other if lower else other / tether


def ratio_text(q, memory=False):
    if q is None:
        return ""
    word = ("smaller" if q < 1 else "larger") if memory else ("faster" if q < 1 else "slower")
    if abs(q - 1) < 0.005:
        word = "equal"
    return "%s× (%s)" % (("%.3g" % q) if q < 10 else "%.0f" % q, word)


# ---------------------------------------------------------------------------
# targets

def judge(rw, vals, raw):
    """(met: True/False/None, text) for a row."""
    t = rw["target"]
    tv = vals.get("tether")
    tr = raw.get("tether")
    if t is None:
        return None, ""
    if tv is None:
        return False, "no Tether figure" + (" (a check failed)" if tr is not None else "")
    misses = []
    # ahead of every peer (where the peer produced a figure)
    if t in ("alien", "peers", "qt30"):
        for a in ANCHORS:
            q = ratio(tv, vals.get(a), rw["lower"])
            if q is not None and q > 1:
                misses.append("%.2g× %s" % (q, LABEL[a]))
    if t == "alien" and rw["alien"] is not None and tv > rw["alien"]:
        misses.insert(0, "%.2g× alien-signals" % (tv / rw["alien"]))
    if t == "qt30":
        sw = vals.get("swift")
        if sw is not None and tv * 30 > sw:
            misses.append("only %.3g× faster than Swift (needs 30×)" % (sw / tv))
        if vals.get("qt") is None:
            misses.append("no Qt figure to compare with")
    if t == "p99" and tv > 100:
        misses.append("%.0f us" % tv)
    if t == "state64" and tv > 64:
        misses.append("%.0f bytes" % tv)
    if t == "edge48" and tv > 48:
        misses.append("%.0f bytes" % tv)
    if misses:
        return False, "missed: " + "; ".join(misses)
    return True, "met"


# ---------------------------------------------------------------------------
# the markdown

METHODS = """\
## How each system expresses the workloads

Every driver checks the values and counts BENCHMARKS.md states for each
workload it runs (the Tether driver reuses the checked ports in
`benchmarks/workloads/` unchanged); a Tether workload whose checks fail
reports no figure.

**Tether** (`benchmarks/tether/bench_tether.c`, C, `-O2`). The graph
workloads run in a `TETHER_LOOP_HOST` runtime (no loop thread) with
`TETHER_EFFECT_SYNC` effects, every write in its own batch, as
`benchmarks/workloads/` defines them. set+notify and fan-out use
`TETHER_OBSERVE_SYNC` observers and are measured in two runtimes: the
`TETHER_LOOP_HOST` one and the default one (`TETHER_LOOP_THREAD`, with its
loop thread). Both are thread-safe (every Tether function may be called
from any thread), so these figures include Tether's locking, while Qt's
properties make no thread-safety promise and GObject's signals run
unsynchronized on the emitting thread. The 50-deep
chain is kairo deepPropagation itself. Cross-thread: the default runtime, an
observer without `TETHER_OBSERVE_SYNC` (delivered on the loop thread,
coalesced per loop turn).

**GObject** (`benchmarks/gobject/bench_gobject.c`, GLib/GObject). A state is
a `BenchCell` object with one `gint64` property declared
`G_PARAM_EXPLICIT_NOTIFY`, whose C setter notifies (`g_object_notify_by_pspec`)
only when the value changed; observers are `notify::value` handlers. A
derived value is another object kept by a `GBinding` with a transform
function (`g_object_bind_property_full`), so one-source chains port
naturally: avoidablePropagation, broadPropagation and deepPropagation (the
50-deep chain). The other kairo cases, cellx, the dynamic graphs and the
S.js cases need values computed from several inputs, recomputed once per
batch without glitches, lazily, or effects that re-run on whatever they
read; GObject has none of these (`g_object_freeze_notify` is per object, not
a transaction), so they are not run. set+notify is also measured through the
generic `g_object_set` (see the notes). Cross-thread: the object lives in a
thread running a `GMainLoop`; the writer hands each write over with
`g_main_context_invoke_full` (the GLib idiom; no coalescing).

**Qt 6** (`benchmarks/qt/bench_qt.cpp`, `QProperty`). A state is a
`QProperty<qint64>` (`double` for the dynamic graphs), a computed a
`QProperty` with `setBinding`, an effect `subscribe()`/`QPropertyNotifier`
on the one node it reads, a batch of several writes
`Qt::beginPropertyUpdateGroup`/`endPropertyUpdateGroup` (a batch of one
write is written as the plain write). Qt 6 evaluates bindings **eagerly**
when a dependency changes, depth-first and **without topological order**: a
node with several inputs is re-evaluated once per changed input and passes
intermediate (glitch) values on. Every kairo case ports and passes its
checks (molBench's effects run in another order, see the notes). In cellx
and the dynamic graphs the eager, unordered propagation re-evaluates
exponentially often in the depth of the graph, so those runs are stopped
(DNF) or crash inside Qt; the one dynamic graph that finishes does more
work than the lazy, glitch-free systems (its evaluation count is in the
notes). The S.js cases use a binding as the effect. Cross-thread: the
property lives in a `QThread` running its event loop, and the writer posts
each write with `QMetaObject::invokeMethod(..., Qt::QueuedConnection)`.

**Swift Observation** (`benchmarks/swift-observation/`, its own SwiftPM
package, release build). An `@Observable` class with one `Int` property;
`withObservationTracking(_:onChange:)` fires once, in `willSet` on the
writing thread (before the new value is stored), and is re-armed in
`onChange`. It has no derived values: the 50-deep chain is 51 objects, and
since `onChange` cannot compute the next value before it is stored, it
queues the node; the writer drains the queue after each write (what SwiftUI
does with the views it invalidates), re-arming the tracking and writing the
next object. Graph workloads and cross-thread delivery have no Observation
counterpart (see the notes).

Figures are wall-clock time (`CLOCK_MONOTONIC`) on a 2-core machine; a busy
machine makes every figure slower, Tether's and the anchors' alike, which
is why they run in the same `make bench`, one after another.
"""


# ---------------------------------------------------------------------------
# tetherd beside Redis (benchmarks/daemon/bench_tetherd.c, issue 14)

DAEMON_BEGIN = "<!-- daemon: begin"
RESULTS_DIR = [".build-bench/results"]  # set by main()
DAEMON_END = "<!-- daemon: end -->"

# (label, tetherd's figure, Redis's figure with its own client, Redis's with
# bench_tetherd's client, kind, goal). For the fan-out the two Redis figures
# are keyspace notifications (a SET reaching subscribers) and pub/sub
# (PUBLISH), both with bench_tetherd's subscribers. kind "rate": ops/s, higher is better;
# "latency": µs, lower is better. goal: "redis" (at or above Redis's rate,
# at or under its latency), an absolute bound in µs ("lt:200"), or both.
DAEMON_ROWS = [
    ("Set, 1 client, no pipelining", "set, 1 client", "set, 1 client",
     "set, 1 client [bench client]", "rate", ["redis"]),
    ("Get, 1 client, no pipelining", "get, 1 client", "get, 1 client",
     "get, 1 client [bench client]", "rate", ["redis"]),
    ("Set, 1 client, client and server on one CPU", "set, 1 client, one CPU",
     "set, 1 client, one CPU", "set, 1 client, one CPU [bench client]", "rate", ["redis"]),
    ("Get, 1 client, client and server on one CPU", "get, 1 client, one CPU",
     "get, 1 client, one CPU", "get, 1 client, one CPU [bench client]", "rate", ["redis"]),
    ("Set, pipelined 16 (1 client)", "set, pipelined 16", "set, pipelined 16",
     "set, pipelined 16 [bench client]", "rate", ["redis"]),
    ("Get, pipelined 16 (1 client)", "get, pipelined 16", "get, pipelined 16",
     "get, pipelined 16 [bench client]", "rate", ["redis"]),
    ("Set, 50 clients", "set, 50 clients", "set, 50 clients", "set, 50 clients [bench client]",
     "rate", ["redis"]),
    ("Get, 50 clients", "get, 50 clients", "get, 50 clients", "get, 50 clients [bench client]",
     "rate", ["redis"]),
    ("Watch fan-out, 1 write to 100 watchers: p50", "watch fan-out p50", "watch fan-out p50",
     "pubsub fan-out p50", "latency", ["redis"]),
    ("Watch fan-out, 1 write to 100 watchers: p99", "watch fan-out p99", "watch fan-out p99",
     "pubsub fan-out p99", "latency", ["redis", "lt:200"]),
    ("Set in one process to observer in another (libtether): p50", "e2e set to observer p50",
     None, None, "latency", []),
    ("Set in one process to observer in another (libtether): p99", "e2e set to observer p99",
     None, None, "latency", ["lt:1000"]),
]


def _fig(figures, sys_, name):
    if name is None:
        return None
    r = figures.get((sys_, "daemon", name))
    return r


def _val(r):
    if r is None or not r.get("ok") or "value" not in r:
        return None
    return r["value"]


def _cell(r, kind):
    if r is None:
        return "n/r"
    if r.get("skip"):
        return "—"
    if not r.get("ok"):
        return "failed"
    v = r["value"]
    if kind == "rate":
        text = fmt(v) + "/s"
        if r.get("p50_us") is not None:
            text += " (p50 %s µs, p99 %s µs)" % (fmt(r["p50_us"]), fmt(r["p99_us"]))
        return text
    return "%s µs" % fmt(v)


def _ratio_cell(t, o, kind):
    """tetherd ÷ Redis, with which way is better."""
    if t is None or o is None or o == 0:
        return ""
    q = t / o
    if kind == "rate":
        word = "at or above" if q >= 1 else "below"
    else:
        word = "at or under" if q <= 1 else "above"
    return "%s× (%s)" % ("%.3g" % q if q < 10 else "%.0f" % q, word)


def daemon_rows(figures):
    """Every row: (label, cells, met or None, why)."""
    out = []
    for label, tname, rname, oname, kind, goals in DAEMON_ROWS:
        t = _fig(figures, "tetherd", tname)
        rb = _fig(figures, "redis", rname)
        ro = _fig(figures, "redis", oname)
        tv, rv, ov = _val(t), _val(rb), _val(ro)
        misses, judged = [], False
        for g in goals:
            if g == "redis":
                anchors = [v for v in (rv, ov) if v is not None]
                if not anchors:
                    continue
                judged = True
                if tv is None:
                    misses.append("no tetherd figure")
                elif kind == "rate" and tv < max(anchors):
                    misses.append("%.3g× Redis's best rate" % (tv / max(anchors)))
                elif kind == "latency" and tv > min(anchors):
                    misses.append("%.3g× Redis's best latency" % (tv / min(anchors)))
            elif g.startswith("lt:"):
                bound = float(g[3:])
                judged = True
                if tv is None:
                    misses.append("no tetherd figure")
                elif tv >= bound:
                    misses.append("%s µs, not under %s µs" % (fmt(tv), fmt(bound)))
        met = None if not judged else not misses
        why = "" if met is None else ("met" if met else "missed: " + "; ".join(misses))
        goal_text = []
        for g in goals:
            goal_text.append("at or above Redis" if g == "redis" and kind == "rate" else
                             "at or under Redis" if g == "redis" else "under %s µs" % g[3:])
        cells = [label, _cell(t, kind), _cell(rb, kind) if rname else "",
                 _ratio_cell(tv, rv, kind), _cell(ro, kind) if oname else "",
                 _ratio_cell(tv, ov, kind),
                 ("✅ " if met else "❌ ") + why + " (" + ", ".join(goal_text) + ")"
                 if met is not None else ""]
        out.append((label, cells, met, why))
    return out


def daemon_analysis(path):
    """The hand-written analysis of tetherd's costs, kept in
    docs/daemon-performance.md between its summary markers."""
    doc = os.path.join(os.path.dirname(os.path.abspath(path)), "daemon-performance.md")
    try:
        text = open(doc, encoding="utf-8").read()
    except OSError:
        return []
    begin, end = "<!-- summary: begin", "<!-- summary: end -->"
    if begin not in text or end not in text:
        return []
    section = text.split(begin, 1)[1].split("\n", 1)[1].split(end, 1)[0].strip()
    return ["### Where tetherd's time goes", "",
            "From [`docs/daemon-performance.md`](daemon-performance.md) (profiles of tetherd "
            "under this driver's load; the method, the measurements and the suggestions are "
            "there).", "", section, ""]


# ---------------------------------------------------------------------------
# Durable commits (bench_tetherd.c, section "durable", issue 15)

DURABLE_BEGIN = "<!-- durable: begin"
DURABLE_END = "<!-- durable: end -->"
DURABLE_CLIENTS = [1, 16, 64]
# Goals of issue 15: --durability full at or above Redis appendfsync always
# at every concurrency, and at least these rates; --durability normal within
# 1.5x of Redis everysec at 64 clients.
DURABLE_FLOOR = {1: 5000, 64: 50000}


def _dname(n, what="client"):
    return "%d %s%s" % (n, what, "" if n == 1 else "s")


def _flush_cell(r):
    if r is None or not r.get("ok") or r.get("flushes_per_s") is None or r["flushes_per_s"] < 0:
        return ""
    cpf = r.get("commits_per_flush")
    if cpf is None and r.get("flushes") and r.get("samples"):
        cpf = r["samples"] / r["flushes"]
    return "%s/s%s" % (fmt(r["flushes_per_s"]), " (%.3g per flush)" % cpf if cpf and cpf > 0 else "")


def durable_rows(figures):
    """(cells, met or None) per row of the durable sub-table."""
    out = []
    for mode in ("full", "normal"):
        for n in DURABLE_CLIENTS:
            t = _fig(figures, "tetherd", "durable set, %s, %s" % (_dname(n), mode))
            ra = _fig(figures, "redis", "durable set, %s, always" % _dname(n))
            re_ = _fig(figures, "redis", "durable set, %s, everysec" % _dname(n))
            sq = _fig(figures, "sqlite", "durable commits, %s" % _dname(n, "thread"))
            tv, av, ev, sv = _val(t), _val(ra), _val(re_), _val(sq)
            misses, goals, judged = [], [], False
            if mode == "full":
                goals.append("≥ Redis always")
                if av is not None:
                    judged = True
                    if tv is None or tv < av:
                        misses.append("%.3g× Redis always" % (tv / av) if tv else "no figure")
                if n in DURABLE_FLOOR:
                    goals.append("≥ %s/s" % fmt(DURABLE_FLOOR[n]))
                    judged = True
                    if tv is None or tv < DURABLE_FLOOR[n]:
                        misses.append("%s/s" % fmt(tv) if tv else "no figure")
            elif n == 64:
                goals.append("≥ Redis everysec ÷ 1.5")
                if ev is not None:
                    judged = True
                    if tv is None or tv * 1.5 < ev:
                        misses.append("%.3g× Redis everysec" % (tv / ev) if tv else "no figure")
            met = (not misses) if judged else None
            goal = ""
            if met is not None:
                goal = ("✅ met" if met else "❌ missed: " + "; ".join(misses)) + " (" + ", ".join(goals) + ")"
            cells = ["Set, %s, `--durability %s`" % (_dname(n), mode), _cell(t, "rate"), _flush_cell(t),
                     _cell(ra, "rate"), _ratio_cell(tv, av, "rate"),
                     _cell(re_, "rate"), _ratio_cell(tv, ev, "rate"),
                     _cell(sq, "rate") if mode == "full" else "",
                     _ratio_cell(tv, sv, "rate") if mode == "full" else "", goal]
            out.append((cells, met))
    return out


def durable_section(figures):
    """The sub-table "Durable commits", between its markers; [] without
    durable figures."""
    if not any(k[1] == "daemon" and k[2].startswith("durable ") and k[0] != "run" for k in figures):
        return []
    setup = figures.get(("run", "daemon", "durable setup")) or {}
    stamps = [os.path.getmtime(p) for p in glob.glob(os.path.join(RESULTS_DIR[0], "daemon.r*.jsonl"))]
    when = datetime.datetime.fromtimestamp(max(stamps), datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC") if stamps else "?"
    rows = durable_rows(figures)
    judged = [r for r in rows if r[1] is not None]
    L = [DURABLE_BEGIN + " (generated by benchmarks/report.py; `BENCH_SYSTEMS=daemon BENCH_ONLY=durable "
         "bash benchmarks/run.sh` rewrites just this sub-table) -->",
         "### Durable commits", "",
         "Issue 15: acknowledged durable commits per second (%s, `%s`). Each client is one "
         "connection Setting its own state (Redis: `SET` of its own key) with one call in flight, "
         "all driven by one epoll thread; a commit counts when its reply is read. tetherd runs with "
         "a store (`--data-dir` in the driver's temporary directory, `--durability full`, then "
         "`normal`); Redis with `--appendonly yes` and `--appendfsync always`, then `everysec`, running "
         "beside it, each concurrency's tetherd row followed by Redis's (this VM's fsync rate drifts "
         "from minute to minute: a slow spell falls on both rows of a pair); "
         "SQLite alone is `benchmarks/daemon/bench_sqlite.c` (WAL, `synchronous=FULL`, one "
         "`INSERT OR REPLACE` per transaction, N threads each with its own connection, taking "
         "turns). Every server's data is under `%s`: %s on `/dev/%s`. %s s measured after %s s "
         "of warm-up per row; each figure the better of its rounds. \"Device flushes\" are the "
         "flush requests `/dev/%s` completed in the row's window (`/proc/diskstats`), with the "
         "commits acknowledged per flush: one flush per commit means no grouping." % (
             when, "BENCH_SYSTEMS=daemon BENCH_ONLY=durable bash benchmarks/run.sh",
             re.sub(r"\.[A-Za-z0-9]{6}/", ".XXXXXX/", setup.get("dir", "/tmp/bench-tetherd.XXXXXX/durable")),
             setup.get("fs", "?"), setup.get("device", "?"), fmt(setup.get("seconds", 0)),
             fmt(setup.get("warm", 0)), setup.get("device", "?")),
         "",
         "Goals: `--durability full` at or above Redis `appendfsync always` at every concurrency, "
         "at least 5,000/s from one client and 50,000/s from 64; `--durability normal` within 1.5× "
         "of Redis `everysec` at 64 clients. **%d of %d met.**" % (
             sum(1 for r in judged if r[1]), len(judged)), ""]
    hdr = ["workload", "tetherd", "tetherd device flushes", "Redis always", "tetherd ÷ always",
           "Redis everysec", "tetherd ÷ everysec", "SQLite alone (same number of threads)",
           "tetherd ÷ SQLite", "goal"]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" * len(hdr))
    for cells, met in rows:
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    fl = []
    for sys_, name, label in (("redis", "always", "Redis always"), ("sqlite", None, "SQLite")):
        parts = []
        for n in DURABLE_CLIENTS:
            key = "durable set, %s, always" % _dname(n) if sys_ == "redis" else \
                "durable commits, %s" % _dname(n, "thread")
            c = _flush_cell(_fig(figures, sys_, key))
            if c:
                parts.append("%d: %s" % (n, c))
        if parts:
            fl.append("%s device flushes (by clients): %s" % (label, "; ".join(parts)))
    fl.append("Where the time goes (pages per commit, grouping, CPU, suggestions): "
              "[`docs/daemon-performance.md`](daemon-performance.md#durable-commits-issue-15), "
              "\"Durable commits\"")
    L.append("- " + ".\n- ".join(fl) + ".")
    L.append("")
    L.append(DURABLE_END)
    L.append("")
    return L


def _replace_block(text, begin, end, block):
    before = text.split(begin, 1)[0]
    after = text.split(end, 1)[1].lstrip("\n")
    return before + block + ("\n" + after if after else "")


def daemon_section(path, figures, status, versions, command):
    """The section "tetherd beside Redis", between its markers; [] when the
    daemon driver did not run."""
    if not any(k[1] == "daemon" for k in figures):
        return []
    now = datetime.datetime.now(datetime.timezone.utc)
    # The run's date: when its last result file was written (the section may
    # be regenerated later from the same results).
    stamps = [os.path.getmtime(p) for p in glob.glob(os.path.join(RESULTS_DIR[0], "daemon.r*.jsonl"))]
    if stamps:
        now = datetime.datetime.fromtimestamp(max(stamps), datetime.timezone.utc)
    now = now.strftime("%Y-%m-%d %H:%M UTC")
    setup = figures.get(("run", "daemon", "setup")) or {}
    quick = any(r.get("quick") for k, r in figures.items() if k[1] == "daemon") or \
        os.environ.get("BENCH_QUICK") == "1"
    rows = daemon_rows(figures)
    judged = [r for r in rows if r[2] is not None]
    met_n = sum(1 for r in judged if r[2])
    L = []
    L.append(DAEMON_BEGIN + " (generated by benchmarks/report.py from "
             "benchmarks/daemon/bench_tetherd.c's results; `BENCH_SYSTEMS=daemon bash "
             "benchmarks/run.sh` rewrites just this section) -->")
    L.append("## tetherd beside Redis")
    L.append("")
    if quick:
        L.append("**BENCH_QUICK=1: small sizes, a smoke test. These figures mean nothing.**")
        L.append("")
    m = machine()
    cpus = ("clients (this driver, redis-benchmark, the e2e processes) pinned to CPU %s, "
            "tetherd and redis-server to CPU %s" % (setup.get("client_cpu"), setup.get("server_cpu"))
            if setup.get("client_cpu", -1) is not None and setup.get("client_cpu", -1) >= 0
            else "nothing pinned")
    L.append("| | |")
    L.append("|---|---|")
    L.append("| command | `%s` |" % command)
    L.append("| date | %s |" % now)
    L.append("| commit | `%s` |" % (versions.get("commit") or git_commit()))
    L.append("| machine | %s, %s CPUs, %s, kernel %s |" % (m["cpu"], m["cores"], m["os"], m["kernel"]))
    L.append("| tetherd | %s, `--memory`, release build |" % versions.get("tether", "?"))
    L.append("| Redis | %s (Debian's `redis-server` and `redis-benchmark`; `--port 0 --unixsocket "
             "--save '' --appendonly no`) |" % (setup.get("redis_version") or versions.get("redis", "?")))
    L.append("| placement | %s |" % cpus)
    L.append("| driver | %s |" % status.get("daemon", "?"))
    L.append("")
    L.append("Goals of issue 14: at or above Redis's rate on each row (at or under its latency "
             "for the fan-out), the fan-out p99 under 200 µs, and a set in one process reaching "
             "an observer in another with p99 under 1 ms. **%d of %d met.**" % (met_n, len(judged)))
    L.append("")
    L.append("Each figure is the better of its rounds (for a p99, the lowest). The p99s are at the "
             "mercy of the machine's other load: this VM's two CPUs are shared, and a stall of a "
             "few milliseconds in a round shows as a p99 of 2 to 9 ms for whichever system ran "
             "then (the per-round figures are in `.build-bench/results/daemon.r*.jsonl`).")
    L.append("")
    L.append("Both servers run in the same run, section by section (tetherd, then Redis right "
             "after it), over Unix sockets in a temporary directory. Redis is measured twice: "
             "with `redis-benchmark` (`-t set,get`, `--csv`) and with this driver's own RESP "
             "client, the very loop that measures tetherd. A rate goal is met only at or above "
             "the better of the two Redis figures: where `redis-benchmark`'s client is slower "
             "than Redis, it understates Redis. Ratios are tetherd's figure ÷ Redis's: for rates "
             "above 1× is better, for latencies below 1×.")
    L.append("")
    hdr = ["workload", "tetherd", "Redis (redis-benchmark; fan-out: keyspace notifications)",
           "tetherd ÷ Redis", "Redis (this driver's client; fan-out: pub/sub)", "tetherd ÷ Redis",
           "goal"]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" * len(hdr))
    for label, cells, met, why in rows:
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    notes = []
    raw = figures.get(("raw", "daemon", "unix ping-pong"))
    raw1 = figures.get(("raw", "daemon", "unix ping-pong, one CPU"))
    if raw and raw.get("ok"):
        t = "- The floor: a raw Unix-socket ping-pong between two processes (64 bytes echoed) " \
            "runs at %s/s, p50 %s µs, p99 %s µs across the two CPUs" % (
                fmt(raw["value"]), fmt(raw["p50_us"]), fmt(raw["p99_us"]))
        if raw1 and raw1.get("ok"):
            t += ", and %s/s, p50 %s µs on one CPU" % (fmt(raw1["value"]), fmt(raw1["p50_us"]))
        t += (". On this VM waking a process on the other CPU costs most of a one-client round "
              "trip, so the one-client rows measure the wake-up as much as the server; the "
              "one-CPU rows show the servers' own cost per call.")
        notes.append(t)
    ks = figures.get(("redis", "daemon", "watch fan-out p99"))
    if ks and ks.get("ok"):
        t = ("- Fan-out, Redis: keyspace notifications (`notify-keyspace-events K$`, 100 "
             "connections on `SUBSCRIBE __keyspace@0__:fan`, the writer's `SET fan v`): like "
             "tetherd's Set and Watch, a stored write reaches the watchers (Redis sends the "
             "event name, tetherd the value).")
        t += (" Plain pub/sub (`PUBLISH fan v`, nothing stored) is the other Redis column; the "
              "goal is judged against the better of the two.")
        t += (" Every system's fan-out latency includes the measuring client reading 100 "
              "sockets one after the other on its one CPU.")
        f50 = figures.get(("raw", "daemon", "unix fan-out 100 p50"))
        f99 = figures.get(("raw", "daemon", "unix fan-out 100 p99"))
        if f50 and f99 and f50.get("ok") and f99.get("ok"):
            t += (" The floor of this measurement: a process that only writes 64 bytes to each of "
                  "100 sockets, read by the same client, gives p50 %s µs, p99 %s µs; a fan-out "
                  "p99 under 200 µs is at that floor on this machine." % (
                      fmt(f50["value"]), fmt(f99["value"])))
        notes.append(t)
    e2 = figures.get(("tetherd", "daemon", "e2e set call p50"))
    e299 = figures.get(("tetherd", "daemon", "e2e set call p99"))
    if e2 and e2.get("ok") and e299 and e299.get("ok"):
        notes.append("- Across processes, `tether_state_set_int` on a remote state returned in "
                     "p50 %s µs, p99 %s µs (it waits for the daemon's commit and for the writer's "
                     "own mirror); the other process's observer ran before that, or about then "
                     "(rows above)." % (fmt(e2["value"]), fmt(e299["value"])))
    rb = figures.get(("redis", "daemon", "set, pipelined 16"))
    if rb and rb.get("ok"):
        notes.append("- The pipelined rows are one connection (`redis-benchmark -P 16 -c 1`), as "
                     "the issue asks. The 2.1M/s it quotes for Redis with `-P 16` is "
                     "redis-benchmark's default of 50 connections, each pipelining 16 (about "
                     "1.1M SETs/s on this machine on 2026-11-25, unpinned): a different load.")
    if notes:
        L.append("Notes:")
        L.append("")
        L += notes
        L.append("")
    L += durable_section(figures)
    L.append("Protocols, as the driver states them:")
    L.append("")
    seen = set()
    for label, tname, rname, oname, kind, goals in DAEMON_ROWS:
        for sys_, name in (("tetherd", tname), ("redis", rname)):
            r = _fig(figures, sys_, name)
            if r and r.get("protocol") and (sys_, r["protocol"]) not in seen:
                seen.add((sys_, r["protocol"]))
                note = (" (%s)" % r["note"]) if r.get("note") else ""
                L.append("- %s, %s: %s%s." % (sys_, name, r["protocol"], note))
    L.append("")
    L += daemon_analysis(path)
    L.append(DAEMON_END)
    L.append("")
    return L


def write_daemon_section(path, figures, status, versions, command):
    """Rewrites only the section "tetherd beside Redis" of an existing
    report (inserted before "Where the time goes" when it has none)."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        text = ""
    main_figs = any(_fig(figures, "tetherd", t) for _, t, _, _, _, _ in DAEMON_ROWS)
    durable = durable_section(figures)
    if not main_figs and durable and DAEMON_BEGIN in text and DAEMON_END in text:
        # Only the durable section ran: rewrite its sub-table, keep the rest.
        dblock = "\n".join(durable).rstrip() + "\n"
        if DURABLE_BEGIN in text and DURABLE_END in text:
            text = _replace_block(text, DURABLE_BEGIN, DURABLE_END, dblock)
        else:
            head, tail = text.split("Protocols, as the driver states them:", 1) \
                if "Protocols, as the driver states them:" in text else text.split(DAEMON_END, 1)
            sep = "Protocols, as the driver states them:" if "Protocols, as the driver states them:" in text \
                else DAEMON_END
            text = head + dblock + "\n" + sep + tail
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        for cells, met in durable_rows(figures):
            print("  %-44s %-34s %s" % (cells[0][:44], cells[1][:34], cells[-1]))
        print("report.py: wrote the durable sub-table of %s" % path)
        return 0
    section = daemon_section(path, figures, status, versions, command)
    if not section:
        print("report.py: no daemon results", file=sys.stderr)
        return 1
    block = "\n".join(section).rstrip() + "\n"
    if not durable and DURABLE_BEGIN in text and DURABLE_END in text:
        # Keep the last durable sub-table when this run did not measure it.
        old = DURABLE_BEGIN + text.split(DURABLE_BEGIN, 1)[1].split(DURABLE_END, 1)[0] + DURABLE_END + "\n"
        block = block.replace("Protocols, as the driver states them:",
                              old + "\nProtocols, as the driver states them:", 1)
    if DAEMON_BEGIN in text and DAEMON_END in text:
        before = text.split(DAEMON_BEGIN, 1)[0]
        after = text.split(DAEMON_END, 1)[1].lstrip("\n")
        text = before + block + ("\n" + after if after else "")
    else:
        for anchor in ("## Where the time goes", "## How each system expresses"):
            if anchor in text:
                before, after = text.split(anchor, 1)
                text = before + block + "\n" + anchor + after
                break
        else:
            text = text.rstrip() + ("\n\n" if text else "") + block
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    for label, cells, met, why in daemon_rows(figures):
        print("  %-62s %-34s %s" % (label[:62], cells[1][:34], why))
    print("report.py: wrote the daemon section of %s" % path)
    return 0


def top_costs(path):
    """The profile's before/after table, kept in docs/performance.md (one
    source), between its top-costs markers."""
    perf = os.path.join(os.path.dirname(os.path.abspath(path)), "performance.md")
    try:
        text = open(perf, encoding="utf-8").read()
    except OSError:
        return []
    begin, end = "<!-- top-costs: begin", "<!-- top-costs: end -->"
    if begin not in text or end not in text:
        return []
    section = text.split(begin, 1)[1].split("\n", 1)[1].split(end, 1)[0].strip()
    return ["## Where the time goes: top costs before and after", "",
            "From `docs/performance.md` (callgrind instruction counts, which repeat exactly "
            "on a busy machine; the method and every profile-driven change are there).", "",
            section, ""]


def kept_sections(path):
    """The sections measured by their own commands, not by this run (tetherd
    on etcd, tetherd at scale): docs/benchmarks.d/*.md, in name order,
    copied whole, so a `make bench` keeps them instead of dropping them."""
    folder = os.path.join(os.path.dirname(os.path.abspath(path)), "benchmarks.d")
    if not os.path.isdir(folder):
        return []
    lines = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".md"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                lines += f.read().rstrip("\n").split("\n") + [""]
    return lines


def write_markdown(path, chart_path, figures, status, versions, command):
    lines = []
    m = machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    quick = any(r.get("quick") for r in figures.values()) or os.environ.get("BENCH_QUICK") == "1"
    lines.append("# Benchmarks: Tether beside GObject, Qt 6 and Swift Observation")
    lines.append("")
    lines.append("Generated by `%s` (benchmarks/run.sh, benchmarks/report.py); do not edit by "
                 "hand." % command)
    if quick:
        lines.append("")
        lines.append("**BENCH_QUICK=1: small sizes, a smoke test. These figures mean nothing.**")
    lines.append("")
    lines.append("| | |")
    lines.append("|---|---|")
    lines.append("| command | `%s` |" % command)
    lines.append("| date | %s |" % now)
    lines.append("| commit | `%s` |" % git_commit())
    lines.append("| machine | %s, %s CPUs, %s RAM |" % (m["cpu"], m["cores"], m["memory"]))
    lines.append("| system | %s, kernel %s |" % (m["os"], m["kernel"]))
    lines.append("| Tether | %s (release build, static Swift stdlib) |" % versions.get("tether", "?"))
    lines.append("| GLib | %s |" % versions.get("glib", "?"))
    lines.append("| Qt | %s |" % versions.get("qt", "?"))
    lines.append("| Swift | %s |" % versions.get("swift", "?"))
    lines.append("| C / C++ | %s / %s, `-O2` |" % (versions.get("cc", "?"), versions.get("cxx", "?")))
    if versions.get("seconds"):
        lines.append("| run time | %s s (build and run, all systems) |" % versions["seconds"])
    lines.append("")
    lines.append("Drivers: " + "; ".join("%s: %s" % (LABEL[s], status.get(s, "?"))
                                         for s in DRIVERS) + ".")
    lines.append("")
    if "rounds" in " ".join(status.values()):
        lines.append("Every driver ran in each round, in alternating order (Tether first in odd "
                     "rounds, last in even ones); each figure is the better of its rounds, and a "
                     "failed check in any round is reported. This machine's speed drifts by tens "
                     "of percent over minutes, for every system alike: two windows per system, at "
                     "opposite ends of the run, keep one slow spell from deciding a ratio.")
        lines.append("")
    lines.append("Ratios are Tether's cost divided by the other system's (for writes per second, "
                 "the other's rate divided by Tether's), so **below 1× Tether is faster "
                 "(or smaller)**. alien-signals figures are BENCHMARKS.md's (V8, this machine "
                 "class); every other figure comes from this run. `—`: the system does not "
                 "express the workload; `DNF`: did not finish; `crash`: crashed; `‡`: ran, but a "
                 "count check did not hold (see the notes); `n/r`: not run.")
    lines.append("")

    summary = []
    body = []
    chart_rows = []
    console = []
    for gid, title, protocol, rows in GROUPS:
        body.append("## " + title)
        body.append("")
        body.append("Protocol: " + protocol + ".")
        body.append("")
        is_mem = gid == "memory"
        # An anchor that expresses none of the group's workloads gets no
        # column (the notes say why).
        shown = [a for a in ANCHORS
                 if any((lambda r: r is not None and not r.get("skip"))(
                     figures.get((a,) + rw["names"][a])) for rw in rows)]
        absent = [a for a in ANCHORS if a not in shown]
        hdr = ["workload", "Tether"]
        if gid in ("kairo", "cellx", "dynamic"):
            hdr.append("alien-signals")
        hdr += [LABEL[a] for a in shown]
        if gid in ("kairo", "cellx", "dynamic"):
            hdr.append("vs alien-signals")
        hdr += ["vs " + LABEL[a] for a in shown]
        hdr.append("target")
        body.append("| " + " | ".join(hdr) + " |")
        body.append("|" + "---|" * len(hdr))
        notes = {}
        for rw in rows:
            raw = {s: figures.get((s,) + rw["names"][s]) for s in SYSTEMS}
            vals, texts = {}, {}
            for s in SYSTEMS:
                vals[s], texts[s] = cell_value(raw[s])
                r = raw[s]
                if r is not None and r.get("note") and (
                        r.get("skip") or r.get("dnf") or r.get("crashed") or
                        r.get("check_failed") or not r.get("ok") or r.get("notable")):
                    notes.setdefault((s, r["note"]), []).append(rw["label"])
            unit = rw["unit"]
            cells = [rw["label"], texts["tether"]]
            if gid in ("kairo", "cellx", "dynamic"):
                cells.append(fmt(rw["alien"]) if rw["alien"] is not None else "")
            cells += [texts[a] for a in shown]
            ratios = {}
            if gid in ("kairo", "cellx", "dynamic"):
                ratios["alien"] = ratio(vals["tether"], rw["alien"], True)
                cells.append(ratio_text(ratios["alien"]))
            for a in ANCHORS:
                ratios[a] = ratio(vals["tether"], vals[a], rw["lower"])
                if a in shown:
                    cells.append(ratio_text(ratios[a], is_mem))
            met, why = judge(rw, vals, raw)
            cells.append(("✅ " if met else "❌ ") + why if met is not None else "")
            body.append("| " + " | ".join(cells) + " |")
            console.append((title, rw, texts, ratios, met, why))
            if met is not None:
                summary.append((title, rw["label"], TARGET_TEXT[rw["target"]], met, why))
            marks = ["%s: %s" % (LABEL[a], texts[a]) for a in ANCHORS
                     if texts[a] in ("DNF", "crash")]
            chart_rows.append((gid, rw["label"], ratios, marks))
        body.append("")
        unbuilt = [a for a in absent if not status.get(a, "").startswith("ran")]
        unexpressed = [a for a in absent if a not in unbuilt]
        if gid == "paths":
            body.append("Tether only: no peer driver runs this workload.")
            body.append("")
        elif unexpressed:
            body.append("Not expressed by %s (see the notes)." % " or ".join(
                LABEL[a] for a in unexpressed))
            body.append("")
        for a in unbuilt if gid != "paths" else []:
            body.append("%s: %s." % (LABEL[a], status.get(a, "not run")))
            body.append("")
        # extra detail: cross-thread percentiles and coalescing
        if gid == "crossthread":
            for s in SYSTEMS:
                r = figures.get((s, "crossthread", "latency p99"))
                if r and r.get("ok"):
                    body.append("- %s latency: p50 %.1f us, p90 %.1f us, p99 %.1f us, p99.9 "
                                "%.1f us, max %.0f us over %d writes." % (
                                    LABEL[s], r["p50_us"], r["p90_us"], r["p99_us"],
                                    r["p999_us"], r["max_us"], r["samples"]))
                r = figures.get((s, "crossthread", "sustained writes/s"))
                if r and r.get("ok"):
                    body.append("- %s sustained: %d writes, %d observer calls (%.4g per write); "
                                "writes/s until the last was delivered: %.3g." % (
                                    LABEL[s], r["writes"], r["observer_calls"],
                                    r["calls_per_write"], r["delivered_writes_per_s"]))
            r = figures.get(("tether", "crossthread", "latency p50"))
            if r:
                body.append("- Tether's pacing: " + r.get("protocol", "") + ".")
            body.append("")
        if gid == "memory":
            for s in SYSTEMS:
                for rw in rows:
                    r = figures.get((s,) + rw["names"][s])
                    if r and r.get("ok") and r.get("protocol"):
                        body.append("- %s, %s: %s (RSS: %s bytes each)." % (
                            LABEL[s], rw["label"], r["protocol"],
                            fmt(r.get("rss_per")) if r.get("rss_per") is not None else "?"))
            body.append("")
        if gid == "micro":
            ref = BENCHMARKS_ANCHORS
            body.append("- For reference, BENCHMARKS.md's figures for the anchors (another run, "
                        "median of 3): set+notify Qt %s ns, GObject %s ns, Swift %s ns; chain Qt "
                        "%s ms, GObject %s ms, Swift %s ms; fan-out Qt %s ns, GObject %s ns, "
                        "Swift %s ns. The targets use this run's figures." % (
                            ref["set+notify"]["qt"], ref["set+notify"]["gobject"],
                            ref["set+notify"]["swift"], ref["chain"]["qt"],
                            ref["chain"]["gobject"], ref["chain"]["swift"],
                            ref["fanout"]["qt"], ref["fanout"]["gobject"],
                            ref["fanout"]["swift"]))
            r = figures.get(("gobject", "micro", "set+notify [g_object_set]"))
            if r and r.get("ok"):
                body.append("- GObject set+notify through the generic `g_object_set(obj, "
                            "\"value\", v, NULL)`: %s ns per write (the table uses the class's "
                            "own setter)." % fmt(r["value"]))
            body.append("")
        if gid == "paths":
            p = figures.get(("tether", "paths", "path tracking"))
            w = figures.get(("tether", "paths", "whole-state tracking"))
            for r in (p, w):
                if r and r.get("ok") and r.get("recomputes_per_write") is not None:
                    body.append("- Tether, %s: %g recompute(s) per write." % (
                        r["name"], r["recomputes_per_write"]))
            if p and w and p.get("ok") and w.get("ok") and p["value"] > 0:
                body.append("- Reading by path: %.3g× less time per write-and-read than reading "
                            "the whole state (docs/performance.md, \"Tracking by path\")."
                            % (w["value"] / p["value"]))
            body.append("")
        if gid == "creation":
            for s in SYSTEMS:
                parts = []
                for rw in rows:
                    r = figures.get((s,) + rw["names"][s])
                    if r and r.get("ok") and r.get("cases_ms"):
                        parts.append(", ".join("%s %s" % (k, fmt(v))
                                               for k, v in r["cases_ms"].items()))
                if parts:
                    body.append("- %s, per case (ms): %s." % (LABEL[s], "; ".join(parts)))
            body.append("")
        if notes:
            body.append("Notes:")
            body.append("")
            for (s, note), labels in notes.items():
                body.append("- **%s** (%s): %s" % (LABEL[s], ", ".join(labels), note))
            body.append("")

    met_n = sum(1 for x in summary if x[3])
    lines.append("## Targets: %d of %d met" % (met_n, len(summary)))
    lines.append("")
    lines.append("The targets of the benchmark issue: every kairo, cellx and dynamic workload at "
                 "or under alien-signals; set+notify, the 50-deep chain and fan-out at or under "
                 "Qt 6's bindable properties and 30× faster than Swift Observation; ahead of "
                 "every peer in the same run; at most 64 bytes per state and 48 per dependency "
                 "edge; cross-thread p99 at most 100 µs.")
    lines.append("")
    lines.append("| group | workload | target | result |")
    lines.append("|---|---|---|---|")
    for title, label, target, met, why in summary:
        lines.append("| %s | %s | %s | %s |" % (title, label, target,
                                                ("✅ " if met else "❌ ") + why))
    lines.append("")
    lines.append("![Tether's ratio to each system](%s)" % os.path.relpath(
        os.path.abspath(chart_path), os.path.dirname(os.path.abspath(path))))
    lines.append("")
    lines += body
    lines += report_icount.section(figures, RESULTS_DIR[0], command,
                                   versions.get("commit") or git_commit())
    lines += daemon_section(path, figures, status, versions, command)
    lines += kept_sections(path)
    lines += top_costs(path)
    lines.append(METHODS)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    print_console(console, met_n, len(summary))
    return chart_rows


def print_console(console, met_n, total):
    """Every figure and Tether's ratio to each system, on the terminal."""
    last = None
    for title, rw, texts, ratios, met, why in console:
        if title != last:
            print("\n%s" % title)
            print("  %-52s %10s %10s %10s %10s   %s" % ("workload", "Tether", "GObject", "Qt 6",
                                                    "Swift", "Tether / alien, GObject, Qt, Swift"))
            last = title
        rs = []
        for k in ("alien", "gobject", "qt", "swift"):
            q = ratios.get(k)
            rs.append("%.3g" % q if q is not None else "-")
        mark = "" if met is None else ("  [target met]" if met else "  [target missed]")
        print("  %-52s %10s %10s %10s %10s   %s%s" % (
            rw["label"][:52], texts["tether"], texts["gobject"], texts["qt"], texts["swift"],
            " ".join(rs), mark))
    print("\ntargets met: %d of %d" % (met_n, total))


# ---------------------------------------------------------------------------
# the chart

def write_chart(path, chart_rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib is not installed; no chart written", file=sys.stderr)
        return False
    series = [("alien", "vs alien-signals (BENCHMARKS.md's figures)", "#7f7f7f"),
              ("gobject", "vs GObject", "#2ca02c"),
              ("qt", "vs Qt 6", "#1f77b4"),
              ("swift", "vs Swift Observation", "#ff7f0e")]
    rows = [r for r in chart_rows
            if any(r[2].get(k) is not None for k, _, _ in series) or r[3]]
    if not rows:
        return False
    n = len(rows)
    fig_h = max(4.0, 0.42 * n + 2.2)
    fig, ax = plt.subplots(figsize=(12, fig_h))
    bar_h = 0.8 / len(series)
    for i, (key, name, color) in enumerate(series):
        xs, yy = [], []
        for j, row in enumerate(rows):
            q = row[2].get(key)
            if q is not None and q > 0:
                xs.append(q)
                yy.append(j - 0.4 + bar_h * (i + 0.5))
        if xs:
            ax.barh(yy, xs, height=bar_h, color=color, label=name)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=1.2)
    ax.set_yticks(list(range(n)))
    ax.set_yticklabels(["%s: %s" % (g, label) for g, label, _, _ in rows], fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)
    ax.grid(axis="x", which="major", alpha=0.4)
    ax.grid(axis="x", which="minor", alpha=0.12)
    for j in range(1, n):
        if rows[j][0] != rows[j - 1][0]:
            ax.axhline(j - 0.5, color="#999999", linewidth=0.6)
    for j, row in enumerate(rows):
        if row[3]:
            ax.annotate(", ".join(row[3]), xy=(1.01, j), xycoords=("axes fraction", "data"),
                        va="center", fontsize=7.5, color="#1f77b4", annotation_clip=False)
    ax.set_xlabel("Tether's cost ÷ the other system's (log scale).   "
                  "Left of 1: Tether faster (or smaller).   Right of 1: Tether slower.")
    ax.set_title("Tether relative to alien-signals and to the systems a C, C++ or Swift "
                 "programmer would pick instead", fontsize=11)
    fig.legend(loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.03, 0.87, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=".build-bench/results")
    ap.add_argument("--markdown", default="docs/benchmarks.md")
    ap.add_argument("--chart", default="docs/benchmarks.png")
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--section", choices=["daemon", "icount"],
                    help="rewrite only this section of an existing --markdown file")
    args = ap.parse_args()
    figures, status, versions = load(args.results)
    RESULTS_DIR[0] = args.results
    if args.section == "daemon":
        return write_daemon_section(args.markdown, figures, status, versions, args.command)
    if args.section == "icount":
        return report_icount.write_section(args.markdown, figures, args.results, args.command,
                                           versions.get("commit") or git_commit())
    if not figures:
        print("report.py: no results in %s" % args.results, file=sys.stderr)
        return 1
    os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
    chart_rows = write_markdown(args.markdown, args.chart, figures, status, versions, args.command)
    write_chart(args.chart, chart_rows)
    print("report.py: wrote %s%s" % (args.markdown, " and " + args.chart
                                     if os.path.exists(args.chart) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
