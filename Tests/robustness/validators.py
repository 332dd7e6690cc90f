"""validators.py — the guarantees a robustness run is checked against, one
function per guarantee (as etcd's tests/robustness does). Each takes the
loaded run and returns (what it checked, how many, [violations]).

The history is the daemon's commit sequence: a Watch from revision 0 once
the run is over (the log holds every commit of a run), or, when the log no
longer holds it, the stream of a watcher of every state. Everything a
client saw is compared with it.

    python3 Tests/robustness/validators.py RUN_DIR    re-checks a kept run
"""

import heapq
import json
import os
import sys

from model import ABSENT, History, ModelError, apply_change, net_changes, same_changes

MAX_SHOWN = 8  # violations printed per check (all are counted)


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def covers_for(prefix):
    return lambda name: name.startswith(prefix)


class Run:
    def __init__(self, directory):
        self.directory = directory
        with open(os.path.join(directory, "final.json"), encoding="utf-8") as f:
            self.final = json.load(f)
        with open(os.path.join(directory, "supervisor.json"), encoding="utf-8") as f:
            self.supervisor = json.load(f)
        self.history = History(load_jsonl(os.path.join(directory, "history.jsonl")))
        self.writes, self.reads, self.client_problems = [], [], []
        self.watchers = []  # (id, prefix, records)
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if name.startswith("writer-") and name.endswith(".jsonl"):
                for r in load_jsonl(path):
                    if r["k"] == "write":
                        self.writes.append(r)
                    elif r["k"] == "read":
                        self.reads.append(r)
                    elif r["k"] in ("hang", "refused"):
                        self.client_problems.append("%s: %r" % (name, r))
            elif name.startswith("watcher-") and name.endswith(".jsonl"):
                records = load_jsonl(path)
                prefix = records[0]["prefix"] if records and records[0]["k"] == "start" else ""
                self.watchers.append((name[:-6], prefix, records))
        self.attempts = {w["tag"]: w for w in self.writes}
        self.tag_revision = {c["tag"]: c["rev"] for c in self.history.commits if c.get("tag")}


def segments(records):
    """A watcher's records as its watches: one per (re)connection, each with
    the revision it resumed from (None: from now) and its events."""
    result = []
    for r in records:
        if r["k"] == "watch":
            result.append({"from": r["from"], "epoch": r["epoch"], "events": [], "end": None})
        elif r["k"] == "event" and result:
            result[-1]["events"].append(r)
        elif r["k"] in ("lost", "drop", "error") and result:
            result[-1]["end"] = r["k"]
    return result


def merged_events(events):
    """A watch's events with the parts of a split change reply joined into
    one (docs/protocol.md, "Long commits": change replies of one revision
    in a row, each holding all the changes to other states)."""
    out = []
    for e in events:
        if (e["e"] == "change" and out and out[-1]["e"] == "change" and out[-1]["rev"] == e["rev"]
                and not ({c["name"] for c in out[-1]["changes"]} & {c["name"] for c in e["changes"]})):
            joined = dict(out[-1])
            joined["changes"] = out[-1]["changes"] + e["changes"]
            out[-1] = joined
        else:
            out.append(e)
    return out


def per_state(changes):
    by = {}
    for c in changes:
        by.setdefault(c["name"], []).append(c)
    return by


def same_per_state(a, b):
    """The same changes to each state, in order (a split reply groups them
    by state: the order across states is not kept, nor needed)."""
    x, y = per_state(a), per_state(b)
    return x.keys() == y.keys() and all(same_changes(x[k], y[k]) for k in x)


def sent_before(name, last):
    """Whether a snapshot streamed in byte order of names has sent `name`
    once its last snapshot reply was `last`."""
    return last is not None and name.encode() <= last.encode()


def expected_changes(run, revision, ops):
    """What the commit of `ops` at `revision` must hold (model.net_changes),
    or a string saying why the ops cannot have been applied there."""
    try:
        return net_changes(run.history, revision, ops)
    except ModelError as e:
        return "the write cannot apply at revision %d: %s" % (revision, e)


def mismatch(run, revision, ops, changes):
    """None when `changes` are what committing `ops` at `revision` gives,
    else why not."""
    wanted = expected_changes(run, revision, ops)
    if isinstance(wanted, str):
        return wanted
    if not same_changes(changes, wanted):
        return "it holds %s; the write changes %s (of the ops %s)" % (describe(changes), describe(wanted), describe(ops))
    return None


def describe(value):
    text = json.dumps(value, sort_keys=True) if value is not ABSENT else "(absent)"
    return text if len(text) < 200 else text[:200] + "…"


# ---------------------------------------------------------------------------
# The history itself


def check_history_complete(run):
    """The history has every revision from 1 to the daemon's last, each a
    commit of exactly one write attempt of the run (tags are unique: no
    write applied twice), and its changes apply in order."""
    h, v = run.history, []
    expected = run.final["revision"]
    if h.revs != list(range(1, expected + 1)):
        have = set(h.revs)
        missing = [r for r in range(1, expected + 1) if r not in have]
        extra = [r for r in h.revs if r < 1 or r > expected]
        v.append("the history does not hold exactly revisions 1..%d: missing %s, extra %s"
                 % (expected, missing[:10], extra[:10]))
    seen = {}
    for c in h.commits:
        tag = c.get("tag")
        if tag is None:
            v.append("revision %d has no tag (every write of the run has one)" % c["rev"])
        elif tag not in run.attempts:
            v.append("revision %d carries the tag %r, which no client sent" % (c["rev"], tag))
        elif tag in seen:
            v.append("the write %s was applied twice: revisions %d and %d" % (tag, seen[tag], c["rev"]))
        else:
            seen[tag] = c["rev"]
            attempt = run.attempts[tag]
            if c.get("origin") != attempt["c"]:
                v.append("revision %d (%s) has origin %r; the writer sent %d" % (c["rev"], tag, c.get("origin"), attempt["c"]))
    v.extend("the history does not apply: %s" % e for e in h.errors)
    return "history complete (revisions 1..N, one commit per write)", len(h.commits), v


# ---------------------------------------------------------------------------
# Writes


def check_acknowledged_writes_durable(run):
    """Every acknowledged write is in the final history at the revision its
    reply gave, with exactly its changes, across every SIGKILL."""
    v, n = [], 0
    for w in run.writes:
        if w["out"] != "ok":
            continue
        n += 1
        if not w["changed"]:
            if w["tag"] in run.tag_revision:
                v.append("%s was acknowledged with changed=false, yet revision %d carries it"
                         % (w["tag"], run.tag_revision[w["tag"]]))
            continue
        c = run.history.by_rev.get(w["rev"])
        if c is None:
            v.append("%s was acknowledged at revision %d, which the history does not hold (lost after a kill?)"
                     % (w["tag"], w["rev"]))
        elif c.get("tag") != w["tag"]:
            v.append("%s was acknowledged at revision %d, but revision %d is %s in the history"
                     % (w["tag"], w["rev"], w["rev"], c.get("tag")))
        else:
            why = mismatch(run, w["rev"], w["ops"], c["changes"])
            if why:
                v.append("revision %d (%s): %s" % (w["rev"], w["tag"], why))
    return "acknowledged writes durable at their revision", n, v


def check_refused_writes_absent(run):
    """A write the daemon refused (an error reply), or that was never sent,
    is nowhere in the history."""
    v, n = [], 0
    for w in run.writes:
        if w["out"] in ("error", "unsent"):
            n += 1
            if w["tag"] in run.tag_revision:
                v.append("%s was %s (%s) but revision %d applied it"
                         % (w["tag"], "refused" if w["out"] == "error" else "never sent", w.get("err", ""),
                            run.tag_revision[w["tag"]]))
    return "refused writes absent", n, v


def check_unknown_writes_all_or_nothing(run):
    """A write whose connection was lost before the reply is in the history
    once and whole, or not at all."""
    v, n = [], 0
    for w in run.writes:
        if w["out"] != "unknown":
            continue
        n += 1
        rev = run.tag_revision.get(w["tag"])
        if rev is not None:
            why = mismatch(run, rev, w["ops"], run.history.by_rev[rev]["changes"])
            if why:
                v.append("%s (outcome unknown) is at revision %d: %s" % (w["tag"], rev, why))
    return "unknown-outcome writes all or nothing", n, v


def check_no_half_transactions(run):
    """Every op of a transaction is in one commit with one revision, or
    none is: in the history, and in every watch stream (restricted to the
    states it watches). Exactly: the commit holds, in order, every op on
    each state whose value the transaction changed (model.net_changes; a
    state it left as it found it changed nothing and is not in it)."""
    v, n = [], 0
    for c in run.history.commits:
        attempt = run.attempts.get(c.get("tag"))
        if attempt is None or attempt["kind"] != "transaction":
            continue
        n += 1
        why = mismatch(run, c["rev"], attempt["ops"], c["changes"])
        if why:
            v.append("revision %d applies transaction %s in part: %s" % (c["rev"], c["tag"], why))
    for name, prefix, records in run.watchers:
        for seg in segments(records):
            # While a snapshot streams, a watch is sent the changes to the
            # states it has sent only (docs/protocol.md).
            streaming, last_sent = False, None
            for r in merged_events(seg["events"]):
                if r["e"] == "snapshot":
                    streaming = True
                    if last_sent is None or r["state"]["name"].encode() > last_sent.encode():
                        last_sent = r["state"]["name"]
                    continue
                if r["e"] == "progress":
                    streaming = False
                    continue
                attempt = run.attempts.get(r.get("tag"))
                if attempt is None or attempt["kind"] != "transaction":
                    continue
                n += 1
                covers = covers_for(prefix)
                if streaming:
                    covers = (lambda c, last: lambda state: c(state) and sent_before(state, last))(covers, last_sent)
                check_watched_transaction(run, name, r, attempt, covers, v)
    return "no half transactions", n, v


def check_watched_transaction(run, name, r, attempt, covers, v):
    """One change reply (its parts joined) of a transaction, as a watch
    covering `covers` must see it."""
    wanted = expected_changes(run, r["rev"], attempt["ops"])
    if isinstance(wanted, str):
        v.append("%s saw transaction %s: %s" % (name, r["tag"], wanted))
    elif not same_per_state(r["changes"], [op for op in wanted if covers(op["name"])]):
        v.append("%s saw transaction %s at revision %d as %s; its changes to watched states are %s"
                 % (name, r["tag"], r["rev"], describe(r["changes"]),
                    describe([op for op in wanted if covers(op["name"])])))
    if run.tag_revision.get(r["tag"]) != r["rev"]:
        v.append("%s saw transaction %s at revision %d; the history has it at %s"
                 % (name, r["tag"], r["rev"], run.tag_revision.get(r["tag"])))


def check_real_time_order(run):
    """Revisions follow real time: an operation that began after another
    was answered has a later revision (a write) or at least as late (a
    read). Intervals are CLOCK_MONOTONIC, shared by every process."""
    ops = []
    for w in run.writes:
        if w["out"] == "ok" and w["changed"]:
            ops.append((w["t0"], w["t1"], w["rev"], True, w["tag"]))
    for r in run.reads:
        if r["out"] == "ok":
            ops.append((r["t0"], r["t1"], r["rev"], False, "read of %s by writer %d" % (r["name"], r["c"])))
    ops.sort(key=lambda o: o[0])
    ended = sorted(ops, key=lambda o: o[1])
    v, i, best = [], 0, None
    for op in ops:
        while i < len(ended) and ended[i][1] < op[0]:
            if best is None or ended[i][2] > best[2]:
                best = ended[i]
            i += 1
        if best is None:
            continue
        if (op[3] and op[2] <= best[2]) or (not op[3] and op[2] < best[2]):
            v.append("%s got revision %d, but %s had already been answered with revision %d before it began"
                     % (op[4], op[2], best[4], best[2]))
    return "real-time order of revisions", len(ops), v


def check_reads(run):
    """A Get at revision R returns the value and modified revision the
    history gives the state after R."""
    v, n = [], 0
    for r in run.reads:
        if r["out"] != "ok":
            continue
        n += 1
        value, modified = run.history.value_at(r["name"], r["rev"])
        if value is ABSENT or value != r["value"] or modified != r["mod"]:
            v.append("Get %s at revision %d returned %s (modified %d); the history has %s (modified %d)"
                     % (r["name"], r["rev"], describe(r["value"]), r["mod"], describe(value), modified))
    return "reads match the history", n, v


# ---------------------------------------------------------------------------
# Watches


def check_watch_order(run):
    """Every watch stream, across its reconnections, is strictly increasing
    in revision: no change twice, none out of order, progress never behind."""
    v, n = [], 0
    for name, prefix, records in run.watchers:
        last = None
        for seg in segments(records):
            for e in merged_events(seg["events"]):
                n += 1
                rev = e["rev"]
                if e["e"] == "change":
                    if last is not None and rev <= last:
                        v.append("%s: change at revision %d after revision %d (%s)"
                                 % (name, rev, last, "a duplicate" if rev == last else "out of order"))
                    last = rev
                elif last is not None and rev < last:
                    v.append("%s: %s at revision %d after revision %d" % (name, e["e"], rev, last))
                elif e["e"] == "progress":
                    last = rev
    return "watch streams strictly increasing", n, v


def check_watch_no_gaps(run):
    """Each watcher's merged stream is the history restricted to the states
    it watches: from its first snapshot on, every commit touching them, in
    order, with the same changes and tag, and nothing else; a progress
    reply at R means every such commit up to R was sent."""
    h, v, n = run.history, [], 0
    for name, prefix, records in run.watchers:
        covers = covers_for(prefix)
        pos = None  # the revision up to which this watcher has all
        for seg in segments(records):
            snapshot_at, before, last_sent = None, pos, None
            for e in merged_events(seg["events"]):
                rev = e["rev"]
                if e["e"] == "snapshot":
                    if snapshot_at is None or pos is not None:
                        before, last_sent = pos, None
                    pos, snapshot_at = None, rev
                    if last_sent is None or e["state"]["name"].encode() > last_sent.encode():
                        last_sent = e["state"]["name"]
                elif e["e"] == "progress":
                    if pos is None:
                        if snapshot_at is None and seg["from"] is None:
                            pos = rev  # a fresh watch of states that do not exist yet
                        elif snapshot_at is not None:
                            if rev < snapshot_at:
                                v.append("%s: snapshot at %d, then progress at %d" % (name, snapshot_at, rev))
                            pos = rev
                        continue
                    missed = h.touching(covers, pos, rev)
                    if missed:
                        v.append("%s: progress at %d, but revisions %s after %d were never sent"
                                 % (name, rev, missed[:10], pos))
                    pos = max(pos, rev)
                elif e["e"] == "change":
                    n += 1
                    if pos is None:
                        # A snapshot streams (docs/protocol.md): a change
                        # may come for states it has sent, never for one
                        # still to come.
                        ahead = [c["name"] for c in e["changes"] if not sent_before(c["name"], last_sent)]
                        if snapshot_at is None or ahead:
                            v.append("%s: a change at %d before its snapshot was complete (%s)"
                                     % (name, rev, ", ".join(ahead) or "no snapshot reply yet"))
                        continue
                    if rev <= pos:
                        pos = max(pos, rev)
                        continue  # out of order: check_watch_order says so
                    expected = h.touching(covers, pos, rev)
                    if expected[:-1]:
                        v.append("%s: a gap: revisions %s were not sent between %d and %d"
                                 % (name, expected[:-1][:10], pos, rev))
                    c = h.by_rev.get(rev)
                    if c is None:
                        v.append("%s: a change at revision %d, which the history does not hold" % (name, rev))
                    else:
                        wanted = [ch for ch in c["changes"] if covers(ch["name"])]
                        if not wanted:
                            v.append("%s: a change at %d, which touches no watched state" % (name, rev))
                        elif not same_per_state(e["changes"], wanted) or e.get("tag") != c.get("tag"):
                            v.append("%s: revision %d sent as %s (%s); the history has %s (%s)"
                                     % (name, rev, describe(e["changes"]), e.get("tag"), describe(wanted), c.get("tag")))
                    pos = rev
            if snapshot_at is not None and pos is None:
                # Cut off inside a snapshot: the client keeps what it had
                # and resumes from its last revision (or starts afresh).
                pos = before
        if pos is None or pos < run.final["revision"]:
            v.append("%s ended at revision %s, before the run's last, %d" % (name, pos, run.final["revision"]))
    return "watch streams without gaps (= the history restricted to the watched states)", n, v


def check_watch_resume(run):
    """A watch resumed with from_revision N and N's epoch continues exactly
    after N: its first reply is the first commit after N touching a watched
    state, or a progress reply when there is none, or a resync flagged as
    such; and a fresh watch starts with a snapshot (never flagged resync)."""
    h, v, n = run.history, [], 0
    for name, prefix, records in run.watchers:
        covers = covers_for(prefix)
        for seg in segments(records):
            if not seg["events"]:
                continue
            first = seg["events"][0]
            n += 1
            if seg["from"] is None:
                if first["e"] == "change" or (first["e"] == "snapshot" and first.get("resync")
                                              and not during_disk_full(run, first)):
                    v.append("%s: a fresh watch began with %r" % (name, first))
                continue
            if first.get("epoch") != seg["epoch"]:
                v.append("%s: resumed in epoch %s, the reply says %s" % (name, seg["epoch"], first.get("epoch")))
            if first["e"] == "snapshot":
                if not first.get("resync"):
                    v.append("%s: resumed from %d with a snapshot not flagged resync" % (name, seg["from"]))
                continue
            if first["e"] == "progress" and first.get("resync"):
                continue  # a resync that found no watched state
            upcoming = h.touching(covers, seg["from"], first["rev"])
            if first["e"] == "change":
                if upcoming[:1] != [first["rev"]]:
                    v.append("%s: resumed from %d with revision %d; the next watched commit is %s"
                             % (name, seg["from"], first["rev"], upcoming[:1]))
            elif upcoming:
                v.append("%s: resumed from %d with progress at %d, skipping %s"
                         % (name, seg["from"], first["rev"], upcoming[:10]))
    return "watches resume exactly where they left off", n, v


def check_watch_snapshots(run):
    """Each snapshot reply at revision R holds the state as the history has
    it after R (a snapshot streams: its replies may be at several
    revisions, docs/protocol.md); and the copy the snapshot and the changes
    sent with it make holds, at the progress reply P that ends it, exactly
    the watched states that exist after P, with their values."""
    h, v, n = run.history, [], 0
    for name, prefix, records in run.watchers:
        covers = covers_for(prefix)
        for seg in segments(records):
            events = merged_events(seg["events"])
            first = _first(events, lambda e: e["e"] == "snapshot")
            if first is None:
                continue
            n += 1
            copy_, broken, end = {}, False, None
            for e in events[first:]:
                if e["e"] == "snapshot":
                    s = e["state"]
                    value, modified = h.value_at(s["name"], e["rev"])
                    got = (s.get("value"), s["modified"]) if s["exists"] else (ABSENT, 0)
                    if got != (value, modified):
                        v.append("%s: snapshot at %d has %s = %s (modified %d); the history has %s (modified %d)"
                                 % (name, e["rev"], s["name"], describe(got[0]), got[1], describe(value), modified))
                    if s["exists"]:
                        copy_[s["name"]] = s.get("value")
                    else:
                        copy_.pop(s["name"], None)
                elif e["e"] == "change":
                    try:
                        for c in e["changes"]:
                            apply_change(copy_, c)
                    except ModelError as err:
                        v.append("%s: the change at %d does not apply to the snapshot: %s" % (name, e["rev"], err))
                        broken = True
                        break
                elif e["e"] == "progress":
                    end = e["rev"]
                    break
            if end is None or broken:
                continue  # cut off inside the snapshot: nothing complete to compare
            expected = h.states_at(end, covers)
            for state in sorted(set(expected) | set(copy_)):
                if state not in copy_:
                    v.append("%s: the snapshot ended at %d lacks %s, which exists" % (name, end, state))
                elif state not in expected:
                    v.append("%s: the snapshot ended at %d holds %s, which the history does not" % (name, end, state))
                elif copy_[state] != expected[state][0]:
                    v.append("%s: the snapshot ended at %d has %s = %s; the history has %s"
                             % (name, end, state, describe(copy_[state]), describe(expected[state][0])))
    return "watch snapshots match the history", n, v


# A watch's snapshot sent in a turn whose group the full disk refused is
# dropped and sent again, flagged resync (docs/robustness.md, "Issue 30
# §2"): a resync seen this long after a disk-full stretch began, up to this
# long after it ended, is that one, not a needless one.
DISK_FULL_SLACK = 2.0


def during_disk_full(run, record):
    """Whether `record` (a watch event with its time) came while the disk
    was full, or just after: a resync then is the refused turn's."""
    t = record.get("t")
    return t is not None and any(began <= t <= freed + DISK_FULL_SLACK
                                 for began, freed in run.supervisor.get("disk_full_windows", []))


def check_resyncs(run):
    """A resync only when the daemon no longer has the history asked for:
    with a log longer than the run, never (and the epoch never changes
    with a durable store) — but for a snapshot the full disk made the
    daemon send again (during a disk-full stretch)."""
    v, n = [], 0
    capacity = run.final["log_capacity"]
    epochs = {run.final["epoch"]}
    for name, prefix, records in run.watchers:
        for r in records:
            if r["k"] == "event":
                epochs.add(r["epoch"])
                # Counted once, at the progress that ends it (a resync may
                # have no snapshot reply).
                if r["e"] == "progress" and r.get("resync"):
                    n += 1
                    if run.final["revision"] < capacity and not during_disk_full(run, r):
                        v.append("%s: a resync at revision %d although the log (%d commits) held the whole run"
                                 % (name, r["rev"], capacity))
    if len(epochs) != 1:
        v.append("several epochs in one durable run: %s" % sorted(e for e in epochs if e))
    return "no needless resync, one epoch", n, v


# ---------------------------------------------------------------------------
# The store


def check_final_state(run):
    """The daemon's states at the end are the history applied in order:
    same names, values and modified revisions."""
    h, v = run.history, []
    states = run.final["states"]
    for name in sorted(set(states) | set(h.final)):
        if name not in h.final:
            v.append("the daemon holds %s, which the history removed or never made" % name)
        elif name not in states:
            v.append("the history has %s = %s, which the daemon lacks" % (name, describe(h.final[name])))
        else:
            value, modified = h.value_at(name, run.final["revision"])
            if states[name]["value"] != value or states[name]["modified"] != modified:
                v.append("%s: the daemon has %s (modified %d); the history gives %s (modified %d)"
                         % (name, describe(states[name]["value"]), states[name]["modified"], describe(value), modified))
    return "final states = the history applied", len(states), v


def check_restart_preserves(run):
    """After a last SIGKILL, the restarted daemon holds the same revision,
    epoch and states."""
    v = []
    after = run.final.get("after_restart")
    if after is None:
        return "a last restart keeps everything", 0, ["no restart after the run was recorded"]
    for key in ("revision", "epoch"):
        if after[key] != run.final[key]:
            v.append("after the last restart the %s is %r, before it %r" % (key, after[key], run.final[key]))
    if after["states"] != run.final["states"]:
        names = sorted(set(after["states"]) ^ set(run.final["states"]))
        changed = [k for k in after["states"] if k in run.final["states"] and after["states"][k] != run.final["states"][k]]
        v.append("after the last restart the states differ: names %s, values of %s" % (names, changed))
    return "a last restart keeps everything", len(after["states"]), v


def check_processes(run):
    """tetherd never died but by the supervisor's SIGKILL, stopped cleanly
    on SIGTERM at the end; no client hung, was refused or failed."""
    v = list(run.supervisor.get("problems", []))
    v.extend(run.client_problems)
    for name, prefix, records in run.watchers:
        for r in records:
            if r["k"] in ("error", "hang", "gave-up"):
                v.append("%s: %r" % (name, r))
    return "daemon and clients healthy", run.supervisor.get("starts", 0), v


CHECKS = [
    check_history_complete,
    check_acknowledged_writes_durable,
    check_refused_writes_absent,
    check_unknown_writes_all_or_nothing,
    check_no_half_transactions,
    check_real_time_order,
    check_reads,
    check_watch_order,
    check_watch_no_gaps,
    check_watch_resume,
    check_watch_snapshots,
    check_resyncs,
    check_final_state,
    check_restart_preserves,
    check_processes,
]


# ---------------------------------------------------------------------------
# The validators themselves: faults injected into a passing run must be
# caught, each by the check meant for it (a validator that passes
# everything proves nothing).


def _first(items, test):
    for i, item in enumerate(items):
        if test(item):
            return i
    return None


def _watcher_changes(run, index):
    name, prefix, records = run.watchers[index]
    return records, [i for i, r in enumerate(records) if r["k"] == "event" and r["e"] == "change"]


def _watchers_with_changes(run, at_least):
    """(watcher name, records, indices of its change events) of the first
    watcher with `at_least` change events, or None."""
    for index, (name, _, _) in enumerate(run.watchers):
        records, changes = _watcher_changes(run, index)
        if len(changes) >= at_least:
            return name, records, changes
    return None


def mutations(run):
    """(what, the check that must catch it, apply) for each fault, one per
    check; apply mutates `run` and returns (undo, caught) — `caught` tells
    a violation that is this fault's from any other — or None when the run
    gives the fault nothing to act on (the self-check then fails: a fault
    not injected proves nothing)."""
    def lose_acknowledged_commit():
        w = next((w for w in run.writes if w["out"] == "ok" and w["changed"]), None)
        if w is None:
            return None
        old = run.history
        run.history = History([c for c in old.commits if c["rev"] != w["rev"]])
        return (lambda: setattr(run, "history", old)), (lambda v: w["tag"] in v and "acknowledged at revision" in v)

    def apply_refused_write():
        w = next((w for w in run.writes if w["out"] == "ok" and w["changed"]), None)
        if w is None:
            return None
        w["out"] = "error"
        w["err"] = "io.tether.RevisionMismatch"
        return (lambda: w.update(out="ok")), (lambda v: v.startswith(w["tag"] + " was refused"))

    def apply_a_write_twice():
        commits = [c for c in run.history.commits if c.get("tag")]
        if len(commits) < 2:
            return None
        a, b = commits[0], commits[1]
        tag = b["tag"]
        b["tag"] = a["tag"]
        return (lambda: b.update(tag=tag)), (lambda v: "the write %s was applied twice" % a["tag"] in v)

    def apply_an_unknown_write_in_part():
        # A write whose reply was lost, and whose commit holds only part of
        # it: one more op, on a state the commit does not touch.
        w = next((w for w in run.writes if w["out"] == "ok" and w["changed"] and w["tag"] in run.tag_revision), None)
        if w is None:
            return None
        ops = w["ops"]
        w["out"] = "unknown"
        w["ops"] = ops + [{"op": "set", "name": "self-check.extra", "path": "", "value": {"self-check": True}}]
        return (lambda: w.update(out="ok", ops=ops)), (lambda v: v.startswith("%s (outcome unknown)" % w["tag"]))

    def duplicate_watch_event():
        found = _watchers_with_changes(run, 2)
        if found is None:
            return None
        name, records, changes = found
        i = changes[len(changes) // 2]
        rev = records[i]["rev"]
        records.insert(i + 1, dict(records[i]))
        return (lambda: records.pop(i + 1)), (lambda v: v.startswith("%s: change at revision %d after revision %d (a duplicate)"
                                                                     % (name, rev, rev)))

    def drop_watch_event():
        found = _watchers_with_changes(run, 3)
        if found is None:
            return None
        name, records, changes = found
        i = changes[len(changes) // 2]
        removed = records.pop(i)
        rev = removed["rev"]
        return (lambda: records.insert(i, removed)), (lambda v: v.startswith(name + ":") and str(rev) in v
                                                      and ("never sent" in v or "not sent" in v))

    def split_transaction_in_watch():
        for index, (name, _, _) in enumerate(run.watchers):
            records, changes = _watcher_changes(run, index)
            i = _first(changes, lambda k: len(records[k]["changes"]) > 1)
            if i is None:
                continue
            r = records[changes[i]]
            whole = r["changes"]
            r["changes"] = whole[:-1]
            return (lambda: r.update(changes=whole)), (lambda v: v.startswith("%s saw transaction %s" % (name, r["tag"])))
        return None

    def resume_one_too_late():
        for name, _, records in run.watchers:
            i = _first(range(len(records) - 1), lambda k: records[k]["k"] == "watch" and records[k]["from"] is not None
                       and records[k + 1]["k"] == "event" and records[k + 1]["e"] == "change")
            if i is None:
                continue
            removed = records.pop(i + 1)
            return (lambda: records.insert(i + 1, removed)), (lambda v: v.startswith("%s: resumed from %d" % (name, records[i]["from"])))
        return None

    def wrong_snapshot_value():
        # A snapshot reply with a value the history never had; a run whose
        # watches saw no snapshot reply gets one made up (at the revision
        # of a segment's first reply, for a state that does not exist).
        for name, _, records in run.watchers:
            i = _first(records, lambda r: r["k"] == "event" and r["e"] == "snapshot" and r["state"]["exists"])
            if i is not None:
                state = records[i]["state"]
                old = state.get("value")
                state["value"] = {"self-check": True}
                return (lambda: state.update(value=old)), (lambda v: v.startswith("%s: snapshot at %d has %s = "
                                                                                  % (name, records[i]["rev"], state["name"])))
        for name, _, records in run.watchers:
            i = _first(range(len(records) - 1), lambda k: records[k]["k"] == "watch" and records[k + 1]["k"] == "event")
            if i is None:
                continue
            first = records[i + 1]
            made = {"k": "event", "e": "snapshot", "rev": first["rev"], "epoch": first.get("epoch"),
                    "state": {"name": "self-check.state", "exists": True, "value": 1, "modified": first["rev"]}}
            records.insert(i + 1, made)
            return (lambda: records.pop(i + 1)), (lambda v: v.startswith("%s: snapshot at %d has self-check.state = "
                                                                         % (name, first["rev"])))
        return None

    def needless_resync():
        # With a log that held the whole run, a resync is a fault; else a
        # second epoch in one durable run is.
        for name, _, records in run.watchers:
            i = _first(records, lambda r: r["k"] == "event" and r["e"] == "progress" and not r.get("resync")
                       and not during_disk_full(run, r))
            if i is None:
                continue
            r = records[i]
            if run.final["revision"] < run.final["log_capacity"]:
                r["resync"] = True
                return (lambda: r.pop("resync")), (lambda v: v.startswith("%s: a resync at revision %d" % (name, r["rev"])))
            epoch = r.get("epoch")
            r["epoch"] = "self-check-epoch"
            return (lambda: r.update(epoch=epoch)), (lambda v: "self-check-epoch" in v)
        return None

    def stale_read():
        r = next((r for r in run.reads if r["out"] == "ok" and r["value"] is not None), None)
        if r is None:
            return None
        old = r["value"]
        r["value"] = {"stale": True}
        return (lambda: r.update(value=old)), (lambda v: v.startswith("Get %s at revision %d returned" % (r["name"], r["rev"])))

    def revisions_against_real_time():
        ok = sorted((w for w in run.writes if w["out"] == "ok" and w["changed"]), key=lambda w: w["t0"])
        pair = next(((a, b) for a, b in zip(ok, ok[1:]) if a["t1"] < b["t0"]), None)
        if pair is None:
            return None
        a, b = pair

        def swap():
            a["rev"], b["rev"] = b["rev"], a["rev"]
        swap()
        return swap, (lambda v: a["tag"] in v or b["tag"] in v)

    def lose_state_at_restart():
        after = run.final.get("after_restart")
        if not after or not after["states"]:
            return None
        name = sorted(after["states"])[0]
        kept = after["states"].pop(name)
        return (lambda: after["states"].__setitem__(name, kept)), (lambda v: "states differ" in v and repr(name) in v)

    def diverge_final_state():
        if not run.final["states"]:
            return None
        name = sorted(run.final["states"])[0]
        old = run.final["states"][name]
        run.final["states"][name] = {"value": {"diverged": True}, "modified": old["modified"]}
        return (lambda: run.final["states"].__setitem__(name, old)), (lambda v: v.startswith(name + ": the daemon has"))

    def a_watcher_that_hung():
        if not run.watchers:
            return None
        name, _, records = run.watchers[0]
        records.append({"k": "hang", "t": 0, "why": "self-check"})
        return (lambda: records.pop()), (lambda v: v.startswith(name + ":") and "self-check" in v)

    return [
        ("a write applied twice", check_history_complete, apply_a_write_twice),
        ("an acknowledged commit lost", check_acknowledged_writes_durable, lose_acknowledged_commit),
        ("a refused write applied", check_refused_writes_absent, apply_refused_write),
        ("a write of unknown outcome applied in part", check_unknown_writes_all_or_nothing, apply_an_unknown_write_in_part),
        ("a transaction split in a watch", check_no_half_transactions, split_transaction_in_watch),
        ("two revisions against real time", check_real_time_order, revisions_against_real_time),
        ("a read of a stale value", check_reads, stale_read),
        ("a watch event sent twice", check_watch_order, duplicate_watch_event),
        ("a watch event never sent", check_watch_no_gaps, drop_watch_event),
        ("a watch resumed one commit late", check_watch_resume, resume_one_too_late),
        ("a snapshot value the history never had", check_watch_snapshots, wrong_snapshot_value),
        ("a needless resync", check_resyncs, needless_resync),
        ("a final state that is not the history", check_final_state, diverge_final_state),
        ("a state lost at the last restart", check_restart_preserves, lose_state_at_restart),
        ("a watcher that hung", check_processes, a_watcher_that_hung),
    ]


def self_check(directory, out=sys.stdout):
    """Injects each fault of `mutations` into the (passing) run and runs
    the check meant to catch it; returns (caught, tried, [missed]). A fault
    is caught only by a new violation of its check that names it (not by
    any violation); a fault the run gives nothing to act on is missed; and
    every check must have a fault."""
    run = Run(directory)
    caught, tried, missed = 0, 0, []
    faults = mutations(run)
    for check in CHECKS:
        if not any(target is check for _, target, _ in faults):
            missed.append("%s has no fault injected" % check.__name__)
    for what, check, apply in faults:
        tried += 1
        before = set(check(run)[2])
        placed = apply()
        if placed is None:
            missed.append("%s (%s): the run gave it nothing to act on" % (what, check.__name__))
            continue
        undo, names_it = placed
        _, _, violations = check(run)
        undo()
        new = [v for v in violations if v not in before]
        if any(names_it(v) for v in new):
            caught += 1
        elif new:
            missed.append("%s (%s): only other violations: %s" % (what, check.__name__, new[:2]))
        else:
            missed.append("%s (%s)" % (what, check.__name__))
        if set(check(run)[2]) != before:
            missed.append("%s (%s): the undo left the run changed" % (what, check.__name__))
    for line in missed:
        print("    NOT CAUGHT: " + line, file=out)
    return caught, tried, missed


def summarize(run):
    outcomes = {}
    errors = {}
    for w in run.writes:
        outcomes[w["out"]] = outcomes.get(w["out"], 0) + 1
        if w["out"] == "error":
            errors[w["err"]] = errors.get(w["err"], 0) + 1
    committed_unknown = sum(1 for w in run.writes if w["out"] == "unknown" and w["tag"] in run.tag_revision)
    events = sum(1 for _, _, records in run.watchers for r in records if r["k"] == "event")
    changes = sum(1 for _, _, records in run.watchers for r in records if r["k"] == "event" and r["e"] == "change")
    watches = sum(1 for _, _, records in run.watchers for r in records if r["k"] == "watch")
    resyncs = sum(1 for _, _, records in run.watchers for r in records
                  if r["k"] == "event" and r["e"] == "snapshot" and r.get("resync"))
    disk_full_resyncs = sum(1 for _, _, records in run.watchers for r in records
                            if r["k"] == "event" and r["e"] == "progress" and r.get("resync") and during_disk_full(run, r))
    transactions = sum(1 for c in run.history.commits if run.attempts.get(c.get("tag"), {}).get("kind") == "transaction")
    return {
        "kills": run.supervisor.get("kills", 0),
        "starts": run.supervisor.get("starts", 0),
        "commits": len(run.history.commits),
        "transactions_committed": transactions,
        "writes": len(run.writes),
        "acknowledged": outcomes.get("ok", 0),
        "refused": outcomes.get("error", 0),
        "refusals": errors,
        "unknown": outcomes.get("unknown", 0),
        "unknown_committed": committed_unknown,
        "unsent": outcomes.get("unsent", 0),
        "reads": sum(1 for r in run.reads if r["out"] == "ok"),
        "watch_events": events,
        "watch_changes": changes,
        "watches": watches,
        "reconnects": watches - len(run.watchers),
        "resyncs": resyncs,
        "disk_full_resyncs": disk_full_resyncs,
        "history_source": run.final.get("history_source"),
    }


def validate(directory, out=sys.stdout):
    """Runs every check on a run directory; prints one line per check and
    each violation; returns (violations, checks, summary)."""
    run = Run(directory)
    total, checked = 0, 0
    for check in CHECKS:
        title, count, violations = check(run)
        checked += 1
        status = "ok" if not violations else "FAILED (%d violation%s)" % (len(violations), "" if len(violations) == 1 else "s")
        print("check %-32s %s: %s (%d checked)" % (check.__name__[6:], status, title, count), file=out)
        for line in violations[:MAX_SHOWN]:
            print("    VIOLATION: " + line, file=out)
        if len(violations) > MAX_SHOWN:
            print("    … and %d more" % (len(violations) - MAX_SHOWN), file=out)
        total += len(violations)
    return total, checked, summarize(run)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: validators.py RUN_DIR")
    violations, checks, summary = validate(sys.argv[1])
    print(json.dumps(summary, sort_keys=True))
    if not violations:
        caught, tried, missed = self_check(sys.argv[1])
        print("injected faults caught: %d of %d" % (caught, tried))
        if missed:
            sys.exit(1)
    sys.exit(1 if violations else 0)
