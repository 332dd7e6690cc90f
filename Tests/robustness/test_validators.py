#!/usr/bin/env python3
"""test_validators.py — the robustness validators on canned runs, without a
daemon (issue 36): a good run passes every check; for each of the 15
checks, its fault injected into the good run is caught by that check, by a
violation that names the fault (not any violation); a run that gives a
fault nothing to act on fails the self-check; and every check has a fault.

    python3 Tests/robustness/test_validators.py      (exit 0: all hold)

DaemonTests.RobustnessTests runs it (testValidatorsOnCannedRuns).
"""

import copy
import io
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validators  # noqa: E402

EPOCH = "e1"


def change(name, op, path="", value=None):
    c = {"name": name, "op": op, "path": path}
    if op == "set":
        c["value"] = value
    return c


# The daemon's commits: 4 revisions, one of them a transaction of two states.
HISTORY = [
    {"rev": 1, "tag": "w0-1", "origin": 0, "changes": [change("a.0", "set", "", {"n": 1})]},
    {"rev": 2, "tag": "w0-2", "origin": 0, "changes": [change("a.0", "set", "/n", 2), change("b.0", "set", "", 5)]},
    {"rev": 3, "tag": "w0-3", "origin": 0, "changes": [change("b.0", "set", "", 6)]},
    {"rev": 4, "tag": "w0-4", "origin": 0, "changes": [change("b.0", "set", "", 7)]},
]


def write(seq, kind, ops, out, t0, rev=None, changed=True, **extra):
    w = {"k": "write", "c": 0, "seq": seq, "tag": "w0-%d" % seq, "kind": kind, "ops": ops, "pre": [],
         "out": out, "t0": t0, "t1": t0 + 1}
    if out == "ok":
        w.update(rev=rev, changed=changed)
    w.update(extra)
    return w


WRITER = [
    {"k": "start", "c": 0, "t": 0},
    write(1, "set", [change("a.0", "set", "", {"n": 1})], "ok", 0, rev=1),
    write(2, "transaction", [change("a.0", "set", "/n", 2), change("b.0", "set", "", 5)], "ok", 2, rev=2),
    {"k": "read", "c": 0, "name": "a.0", "t0": 3.5, "t1": 3.6, "out": "ok", "rev": 2, "mod": 2, "value": {"n": 2}},
    write(3, "set", [change("b.0", "set", "", 6)], "ok", 4, rev=3),
    write(9, "set", [change("c.0", "set", "/x", 1)], "error", 5.5, err="io.tether.NotFound"),
    write(4, "set", [change("b.0", "set", "", 7)], "ok", 6, rev=4),
    {"k": "end", "c": 0, "t": 8},
]


def event(e, rev, **extra):
    r = {"k": "event", "e": e, "rev": rev, "epoch": EPOCH}
    r.update(extra)
    return r


def change_event(commit):
    return event("change", commit["rev"], changes=commit["changes"], tag=commit["tag"], origin=commit["origin"])


# A watcher of every state: a snapshot at 1, the transaction, a lost
# connection, a resume from 2, then 3 and 4.
WATCHER = [
    {"k": "start", "c": 0, "prefix": "", "t": 0},
    {"k": "watch", "t": 1.5, "from": None, "epoch": None},
    event("snapshot", 1, state={"name": "a.0", "exists": True, "value": {"n": 1}, "type": "object", "modified": 1},
          resync=False),
    event("progress", 1),
    change_event(HISTORY[1]),
    {"k": "lost", "t": 3.8, "why": "canned"},
    {"k": "watch", "t": 3.9, "from": 2, "epoch": EPOCH},
    change_event(HISTORY[2]),
    change_event(HISTORY[3]),
    event("progress", 4),
    {"k": "end", "t": 8, "last": 4},
]

STATES = {"a.0": {"value": {"n": 2}, "modified": 2}, "b.0": {"value": 7, "modified": 4}}
FINAL = {"revision": 4, "epoch": EPOCH, "oldest_revision": 0, "states": STATES, "history_source": "canned",
         "log_capacity": 100000, "after_restart": {"revision": 4, "epoch": EPOCH, "states": copy.deepcopy(STATES)}}
SUPERVISOR = {"seed": 0, "duration": 0, "kills": 0, "starts": 1, "kill_times": [], "problems": []}


def make_run(directory, writer=WRITER, watcher=WATCHER, final=FINAL, supervisor=SUPERVISOR):
    os.makedirs(directory, exist_ok=True)

    def lines(name, records):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    lines("history.jsonl", HISTORY)
    lines("writer-0.jsonl", writer)
    lines("watcher-0.jsonl", watcher)
    with open(os.path.join(directory, "final.json"), "w", encoding="utf-8") as f:
        json.dump(final, f)
    with open(os.path.join(directory, "supervisor.json"), "w", encoding="utf-8") as f:
        json.dump(supervisor, f)


failures = []


def expect(condition, what):
    print("%s %s" % ("ok  " if condition else "FAIL", what))
    if not condition:
        failures.append(what)


def main():
    top = tempfile.mkdtemp(prefix="tether-validators-")
    try:
        good = os.path.join(top, "good")
        make_run(good)
        out = io.StringIO()
        violations, checks, _ = validators.validate(good, out=out)
        expect(violations == 0 and checks == 15, "the good run passes all 15 checks (%d violations)" % violations)
        if violations:
            print(out.getvalue())

        # Each check's fault, one at a time, caught by that check by a
        # violation that names the fault.
        run = validators.Run(good)
        faults = validators.mutations(run)
        expect(sorted(c.__name__ for _, c, _ in faults) == sorted(c.__name__ for c in validators.CHECKS),
               "one fault for each of the 15 checks")
        for what, check, apply in faults:
            run = validators.Run(good)
            fault = next(f for f in validators.mutations(run) if f[0] == what)[2]
            placed = fault()
            if placed is None:
                expect(False, "%s: placed in the good run" % what)
                continue
            undo, names_it = placed
            _, _, found = check(run)
            expect(any(names_it(v) for v in found), "%s: caught by %s (%s)" % (what, check.__name__, found[:1]))
            undo()
            expect(not check(run)[2], "%s: undone, %s passes again" % (what, check.__name__))

        out = io.StringIO()
        caught, tried, missed = validators.self_check(good, out=out)
        expect((caught, tried, missed) == (15, 15, []), "the self-check catches 15 of 15: %s" % missed)

        # A violation of the check that is not the fault's is not a catch:
        # a run whose watcher already hung makes check_processes fail, and
        # the 'watcher that hung' fault must still be told apart from it.
        hung = os.path.join(top, "hung")
        make_run(hung, watcher=WATCHER + [{"k": "hang", "t": 9, "why": "already"}])
        caught, tried, missed = validators.self_check(hung, out=io.StringIO())
        expect(caught == 15 and not missed, "a fault is told apart from violations already there: %s" % missed)
        hung_other = os.path.join(top, "hung-other")
        # ... and a fault whose check only reports something else is missed:
        # here the hang record the fault appends is a duplicate of one the
        # run already has, so no new violation names it.
        make_run(hung_other, watcher=WATCHER + [{"k": "hang", "t": 0, "why": "self-check"}])
        caught, tried, missed = validators.self_check(hung_other, out=io.StringIO())
        expect(any("a watcher that hung" in m for m in missed), "a fault that makes no new violation is missed: %s" % missed)

        # The protocol's streamed snapshot (docs/protocol.md): snapshot
        # replies at several revisions, a commit during the snapshot sent
        # for the states already sent only (the transaction's change to
        # b.0 is in b.0's snapshot reply), then progress; and a change
        # reply split by state into parts of one revision, then progress.
        streamed = os.path.join(top, "streamed")
        a_only = dict(change_event(HISTORY[1]), changes=[HISTORY[1]["changes"][0]])
        b_snapshot = event("snapshot", 2, state={"name": "b.0", "exists": True, "value": 5, "type": "int", "modified": 2},
                           resync=False)
        make_run(streamed, watcher=WATCHER[:3] + [a_only, b_snapshot, event("progress", 2)] + WATCHER[5:])
        out = io.StringIO()
        violations, _, _ = validators.validate(streamed, out=out)
        expect(violations == 0, "a streamed snapshot with a change in between passes (%d violations)" % violations)
        if violations:
            print(out.getvalue())
        split = os.path.join(top, "split")
        parts = [dict(change_event(HISTORY[1]), changes=[c]) for c in HISTORY[1]["changes"]]
        make_run(split, watcher=WATCHER[:4] + parts + [event("progress", 2)] + WATCHER[5:])
        out = io.StringIO()
        violations, _, _ = validators.validate(split, out=out)
        expect(violations == 0, "a change reply split in two parts passes (%d violations)" % violations)
        if violations:
            print(out.getvalue())
        # ... but not a change to a state the snapshot has not sent yet,
        # nor a snapshot reply whose value is not its revision's.
        ahead = os.path.join(top, "ahead")
        make_run(ahead, watcher=WATCHER[:3] + [change_event(HISTORY[1]), b_snapshot, event("progress", 2)] + WATCHER[5:])
        _, _, found = validators.check_watch_no_gaps(validators.Run(ahead))
        expect(any("before its snapshot was complete (b.0)" in f for f in found),
               "a change to a state ahead of the snapshot is caught: %s" % found[:1])
        stale = os.path.join(top, "stale")
        old_b = dict(b_snapshot, state=dict(b_snapshot["state"], value=4))
        make_run(stale, watcher=WATCHER[:3] + [a_only, old_b, event("progress", 2)] + WATCHER[5:])
        _, _, found = validators.check_watch_snapshots(validators.Run(stale))
        expect(any(f.startswith("watcher-0: snapshot at 2 has b.0 = 4") for f in found),
               "a streamed snapshot reply with a value not of its revision is caught: %s" % found[:1])
        missing = os.path.join(top, "missing")
        make_run(missing, watcher=WATCHER[:3] + [a_only, event("progress", 2)] + WATCHER[5:])
        _, _, found = validators.check_watch_snapshots(validators.Run(missing))
        expect(any("lacks b.0" in f for f in found), "a streamed snapshot that never sent b.0 is caught: %s" % found[:1])

        # The disk-full stretch's own checks (robustness.check_faults): a
        # StorageFull refusal in the stretch, every watcher heard from the
        # daemon during it, a write acknowledged after it, no StorageFull
        # outside every stretch.
        import robustness
        full = write(10, "set", [change("b.0", "set", "", 8)], "error", 5.2, err="io.tether.StorageFull")
        heard = event("progress", 3, t=5.5)
        stretch = (5.0, 5.1, 5.9)  # began, filled, freed

        def fault_problems(name, writer, watcher, stretches):
            d = os.path.join(top, name)
            make_run(d, writer=writer, watcher=watcher)
            problems = []
            robustness.check_faults(d, stretches, problems)
            return problems
        found = fault_problems("full-good", WRITER + [full], WATCHER[:7] + [heard] + WATCHER[7:], [stretch])
        expect(found == [], "a disk-full stretch with a StorageFull refusal, watch replies and a write after passes: %s" % found)
        found = fault_problems("full-no-refusal", WRITER, WATCHER[:7] + [heard] + WATCHER[7:], [stretch])
        expect(any("no write was refused with io.tether.StorageFull" in f for f in found),
               "a disk-full stretch that refused nothing is caught: %s" % found[:1])
        found = fault_problems("full-silent", WRITER + [full], WATCHER, [stretch])
        expect(any("watcher-0 heard nothing" in f for f in found),
               "a watcher that heard nothing while the disk was full is caught: %s" % found[:1])
        found = fault_problems("full-no-write-after", WRITER + [full], WATCHER[:7] + [heard] + WATCHER[7:], [(5.0, 5.1, 6.5)])
        expect(any("no write was acknowledged once the filler was removed" in f for f in found),
               "no write acknowledged after a stretch is caught: %s" % found[:1])
        found = fault_problems("full-outside", WRITER + [full], WATCHER[:7] + [heard] + WATCHER[7:], [(1.0, 1.1, 1.9)])
        expect(any("outside every disk-full stretch" in f for f in found),
               "a StorageFull outside every stretch is caught: %s" % found[:1])

        # A fresh watch whose snapshot the full disk refused gets it again
        # flagged resync: allowed during a disk-full stretch (and just
        # after), a needless resync anywhere else.
        refused_snapshot = [{"k": "watch", "t": 5.2, "from": None, "epoch": None},
                            event("snapshot", 4, t=5.3, resync=True,
                                  state={"name": "a.0", "exists": True, "value": {"n": 2}, "type": "object", "modified": 2}),
                            event("snapshot", 4, t=5.3, resync=True,
                                  state={"name": "b.0", "exists": True, "value": 7, "type": "int", "modified": 4}),
                            event("progress", 4, t=5.4, resync=True)]
        watcher = WATCHER[:-1] + refused_snapshot + WATCHER[-1:]
        d = os.path.join(top, "full-resync")
        make_run(d, watcher=watcher, supervisor=dict(SUPERVISOR, disk_full_windows=[[5.0, 5.9]]))
        out = io.StringIO()
        violations, _, summary = validators.validate(d, out=out)
        expect(violations == 0 and summary["disk_full_resyncs"] == 1,
               "a resync of a snapshot sent during a disk-full stretch passes (%d violations)" % violations)
        if violations:
            print(out.getvalue())
        d = os.path.join(top, "needless-resync")
        make_run(d, watcher=watcher, supervisor=dict(SUPERVISOR, disk_full_windows=[[1.0, 1.9]]))
        run = validators.Run(d)
        found = validators.check_resyncs(run)[2] + validators.check_watch_resume(run)[2]
        expect(any("a resync at revision 4" in f for f in found) and any("a fresh watch began" in f for f in found),
               "the same resync outside every disk-full stretch is caught: %s" % found[:2])

        # A run with nothing to act on (no writes, no reads, no watch
        # events) fails the self-check instead of passing with fewer faults.
        empty = os.path.join(top, "empty")
        make_run(empty, writer=[{"k": "start", "c": 0, "t": 0}],
                 watcher=[{"k": "start", "c": 0, "prefix": "", "t": 0}])
        caught, tried, missed = validators.self_check(empty, out=io.StringIO())
        expect(tried == 15 and len(missed) > 0 and any("nothing to act on" in m for m in missed),
               "a fault with nothing to act on fails the self-check (%d missed)" % len(missed))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("test_validators: %d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
