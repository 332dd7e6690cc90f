#!/usr/bin/env python3
"""robustness_etcd.py --tetherd PATH [--seconds N] [--seed S] — two tetherds
("hosts" A and B) on a 3-member etcd cluster under faults, with writers and
resuming watchers on both; then every guarantee is checked
(docs/daemon.md, "Several machines"; `make robustness-etcd`).

Faults, one at a time, every 2-4 s, chosen by the seed: SIGKILL of a tetherd
(restarted), SIGKILL of an etcd member and of the leader (restarted),
SIGSTOP of a member for 3 s, a member cut off the network for 5 s (each
member in a network namespace of its own, on a bridge: root only, else this
fault is left out and the run says so), and a compaction made through A
while B is SIGSTOPped (if B, resumed, finds its history compacted away, it
stops with exit 75 and is started again, loading the states afresh).

Checks, at the end, with every fault healed:
  acknowledged   every write acknowledged at revision R is in the history
                 at R, with its tag, whole (both ops of a Transaction)
  cross_host     watchers on A and on B saw the same commits under the same
                 revisions (where both saw them)
  watch_no_gaps  a watch (resumed across its host's restarts, or on the
                 other host) saw every commit of the history after the
                 revision it resumed from, in order, once, or was told to
                 resync
  final_state    both hosts hold the same states, and they are what the
                 history (replayed) leaves
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

import varlink

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from etcd_test import CLUSTER, Failed, Host, error_of, expect, wait_until  # noqa: E402

NAMES = ["r.%d" % i for i in range(12)]


class Writer(threading.Thread):
    def __init__(self, wid, hosts, stop, acks):
        super().__init__(daemon=True)
        self.wid, self.hosts, self.stop, self.acks = wid, hosts, stop, acks
        self.rng = random.Random(wid)

    def run(self):
        seq = 0
        conn = None
        while not self.stop.is_set():
            host = self.hosts[self.wid % 2]
            seq += 1
            tag = "w%d-%d" % (self.wid, seq)
            value = self.wid * 1_000_000 + seq  # never equal to another write's: every write changes its states
            if self.rng.random() < 0.3:
                a, b = self.rng.sample(NAMES, 2)
                call = ("Transaction", {"ops": [{"name": a, "op": "set", "value": value}, {"name": b, "op": "set", "value": -value}], "tag": tag})
            else:
                call = ("Set", {"name": self.rng.choice(NAMES), "value": value, "tag": tag})
            try:
                if conn is None:
                    conn = host.connect()
                reply = getattr(conn, call[0])(**call[1])
                if not reply["changed"]:
                    self.acks.append({"tag": tag, "error": "changed: false for a value never written before", "call": call})
                else:
                    self.acks.append({"tag": tag, "revision": reply["revision"], "call": call})
            except varlink.VarlinkError as error:
                if error.error() not in ("io.tether.TimedOut", "io.tether.Busy"):
                    self.acks.append({"tag": tag, "error": error.error(), "call": call})
            except Exception:  # noqa: BLE001 - the host died mid-call: the outcome is unknown
                conn = None
                time.sleep(0.05)


class Watcher(threading.Thread):
    """Watches `r.` on its host; when the host goes away, resumes from the
    last revision it saw (with the epoch) on the other host."""

    def __init__(self, index, hosts, stop):
        super().__init__(daemon=True)
        self.index, self.hosts, self.stop = index, hosts, stop
        self.done_at = None  # the revision after which it stops watching
        self.ready = threading.Event()  # its first snapshot is in: writers may start
        self.segments = []  # each: {"from": R or None, "host": name, "events": [...], "resync": bool}
        self.last = 0  # the newest revision any reply said (a change, a snapshot, a progress)

    def run(self):
        last = None
        epoch = None
        turn = self.index
        while self.done_at is None or self.last < self.done_at:
            host = self.hosts[turn % 2]
            turn += 1
            segment = {"from": last, "host": host.name, "events": [], "resync": False}
            self.segments.append(segment)
            try:
                conn = host.connect()
                kwargs = {"prefix": "r.", "_more": True}
                if last is not None:
                    kwargs.update(from_revision=last, epoch=epoch)
                for reply in conn.Watch(**kwargs):
                    if reply.get("resync"):
                        segment["resync"] = True
                    epoch = reply.get("epoch", epoch)
                    if reply["event"] == "change":
                        segment["events"].append({"revision": reply["revision"], "tag": reply.get("tag"),
                                                  "changes": reply["changes"]})
                    last = reply["revision"]
                    self.last = last
                    if reply["event"] == "progress":
                        self.ready.set()
                    if self.done_at is not None and last >= self.done_at:
                        break
            except Exception:  # noqa: BLE001 - the host went away: resume elsewhere
                time.sleep(0.05)


def member_pids(cluster):
    out = {}
    for name in ("m1", "m2", "m3"):
        with open(os.path.join(cluster, name + ".pid")) as f:
            out[name] = int(f.read())
    return out


def leader(endpoints):
    status = subprocess.run(["etcdctl", "--endpoints", endpoints, "endpoint", "status", "-w", "json"],
                            env=dict(os.environ, ETCDCTL_API="3"), capture_output=True, text=True, timeout=10)
    ports = os.environ.get("TETHER_ETCD_PORTS", "22379 22479 22579").split()
    for m in json.loads(status.stdout or "[]"):
        st = m.get("Status", {})
        if st.get("leader") and st.get("header", {}).get("member_id") == st["leader"]:
            return "m%d" % (ports.index(m["Endpoint"].rsplit(":", 1)[1]) + 1)
    return None


def nemesis(rng, hosts, ctx, log):
    kinds = ["kill-host", "kill-member", "kill-leader", "stop-member", "compact-while-stopped"]
    if ctx["netns"]:
        kinds.append("cut-member")
    kind = rng.choice([k for k in kinds if not ctx["faults"] or k in ctx["faults"]] or kinds)
    env = dict(os.environ)
    if kind == "cut-member":
        name = rng.choice(["m1", "m2", "m3"])
        subprocess.run([CLUSTER, "cut", name, ctx["cluster"]], check=True)
        log.append(("cut-member", name))
        time.sleep(5)
        subprocess.run([CLUSTER, "heal", name, ctx["cluster"]], check=True)
    elif kind == "kill-host":
        h = rng.choice(hosts)
        h.kill()
        log.append(("kill-host", h.name))
        h.start()
    elif kind in ("kill-member", "kill-leader"):
        name = leader(ctx["endpoints"]) if kind == "kill-leader" else rng.choice(["m1", "m2", "m3"])
        if name:
            os.kill(member_pids(ctx["cluster"])[name], signal.SIGKILL)
            log.append((kind, name))
            time.sleep(1)
            subprocess.run([CLUSTER, "up", ctx["cluster"]], capture_output=True, env=env, timeout=60)
    elif kind == "stop-member":
        name = rng.choice(["m1", "m2", "m3"])
        pid = member_pids(ctx["cluster"])[name]
        os.kill(pid, signal.SIGSTOP)
        log.append(("stop-member", name))
        time.sleep(3)
        os.kill(pid, signal.SIGCONT)
    else:
        a, b = hosts
        b.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.5)
        try:
            rev = a.call("Stats")["revision"]
            a.call("Compact", revision=rev)
            log.append(("compact-while-stopped", rev))
        except Exception as error:  # noqa: BLE001
            log.append(("compact-failed", str(error)))
        b.proc.send_signal(signal.SIGCONT)
        # B cannot know what it missed: it stops (exit 75) and is started again.
        try:
            b.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if b.proc.poll() is not None:
            log.append(("host-restarted-after-compaction", b.proc.returncode))
            b.start()


def history_of(watchers):
    """revision -> (tag, changes), from every watcher; conflicts listed."""
    seen = {}
    conflicts = []
    for w in watchers:
        for segment in w.segments:
            for e in segment["events"]:
                key = e["revision"]
                value = (e["tag"], json.dumps(e["changes"], sort_keys=True))
                if key in seen and seen[key] != value:
                    conflicts.append((key, seen[key], value, segment["host"]))
                seen.setdefault(key, value)
    return seen, conflicts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tetherd", required=True)
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--faults", nargs="*", help="only these faults (kill-host kill-member kill-leader stop-member cut-member compact-while-stopped)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    netns = os.geteuid() == 0
    if netns:
        os.environ["TETHER_ETCD_NETNS"] = "1"  # every etcd-cluster.sh call below
    else:
        print("not root: no network namespaces, so no member is cut off the network in this run")
    directory = tempfile.mkdtemp(prefix="tether-etcd-robust-")
    cluster = os.path.join(directory, "cluster")
    up = subprocess.run([CLUSTER, "up", cluster], capture_output=True, text=True)
    if up.returncode != 0:
        sys.exit("the cluster did not start: " + up.stderr)
    endpoints = up.stdout.strip().splitlines()[-1]
    members = endpoints.split(",")
    ctx = {"cluster": cluster, "endpoints": endpoints, "netns": netns, "faults": args.faults}
    hosts = [Host(n, args.tetherd, ",".join(members[i:] + members[:i]), directory) for i, n in enumerate("ab")]
    problems = []
    faults = []
    try:
        for h in hosts:
            h.start()
        stop = threading.Event()
        acks = []
        writers = [Writer(i, hosts, stop, acks) for i in range(4)]
        watchers = [Watcher(i, hosts, stop) for i in range(2)]
        for t in watchers:
            t.start()
        for w in watchers:
            expect(w.ready.wait(20), "a watcher's snapshot did not come")
        for t in writers:
            t.start()
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            time.sleep(rng.uniform(2, 4))
            nemesis(rng, hosts, ctx, faults)
            print("  %.1f s: %s %s" % (args.seconds - (end - time.monotonic()), *faults[-1]), flush=True)
        time.sleep(1)
        stop.set()
        for t in writers:
            t.join(timeout=15)
        # Healed: both hosts reach one revision.
        for h in hosts:
            if h.proc.poll() is not None:
                h.start()
        wait_until(lambda: hosts[0].call("Stats")["revision"] == hosts[1].call("Stats")["revision"], "both hosts reach one revision", 60)
        # One last write, so every watcher's stream ends at a known revision.
        final = hosts[0].call("Set", name="r.end", value=1)["revision"]
        for w in watchers:
            w.done_at = final
        wait_until(lambda: all(w.last >= final for w in watchers), "every watcher reaches the last write", 60)
        history, conflicts = history_of(watchers)
        for c in conflicts:
            problems.append("cross_host: revision %d differs: %r vs %r (host %s)" % c)
        acked = [a for a in acks if "revision" in a]
        resynced = any(s["resync"] for w in watchers for s in w.segments)
        for a in acked:
            if a["revision"] in history:
                tag, changes = history[a["revision"]]
                if tag != a["tag"]:
                    problems.append("acknowledged: %s at %d, but the history has %s there" % (a["tag"], a["revision"], tag))
                elif a["call"][0] == "Transaction" and len(json.loads(changes)) != 2:
                    problems.append("acknowledged: transaction %s at %d is not whole: %s" % (a["tag"], a["revision"], changes))
            elif not resynced:
                problems.append("acknowledged: %s at %d is in no watcher's history" % (a["tag"], a["revision"]))
        refused = [a for a in acks if "error" in a]
        for r in refused:
            problems.append("a write got %s (%s)" % (r["error"], r["tag"]))
        # watch_no_gaps: within a segment that did not resync, every revision
        # of the history after its start is there, in order, once.
        all_revisions = sorted(history)
        for w in watchers:
            for s in w.segments:
                if s["resync"] or not s["events"]:
                    continue
                got = [e["revision"] for e in s["events"]]
                if got != sorted(set(got)):
                    problems.append("watch_no_gaps: a watch on %s saw revisions out of order or twice: %r" % (s["host"], got[:20]))
                start = s["from"] or got[0] - 1
                want = [r for r in all_revisions if start < r <= got[-1]]
                missing = sorted(set(want) - set(got))
                if missing:
                    problems.append("watch_no_gaps: a watch on %s resumed from %s missed %r" % (s["host"], s["from"], missing[:10]))
        # final_state: both hosts equal, and equal to the history replayed.
        states = []
        for h in hosts:
            states.append({n: h.call("Get", name=n)["value"] for n in NAMES + ["r.end"] if not error_of(lambda: h.call("Get", name=n))})
        if states[0] != states[1]:
            problems.append("final_state: the hosts differ: %r vs %r" % (states[0], states[1]))
        if not resynced:
            model = {}
            for r in all_revisions:
                for c in json.loads(history[r][1]):
                    if c["op"] == "set" and c.get("path", "") == "":
                        model[c["name"]] = c.get("value")
            if model != states[0]:
                problems.append("final_state: the history replayed gives %r, the hosts hold %r" % (model, states[0]))
        print("faults: %s" % ", ".join("%s %s" % f for f in faults))
        print("writes acknowledged %d, revisions in the history %d, watch segments %d, resynced %s" % (
            len(acked), len(history), sum(len(w.segments) for w in watchers), resynced))
    except Failed as error:
        problems.append(str(error))
    finally:
        for h in hosts:
            if h.proc and h.proc.poll() is None:
                try:
                    h.proc.send_signal(signal.SIGCONT)
                except OSError:
                    pass
            h.stop()
        if problems:
            subprocess.run("for f in %s/*.log; do cp $f %s/etcd-$(basename $f); done" % (cluster, directory), shell=True)
        subprocess.run([CLUSTER, "down", cluster])
    for p in problems[:30]:
        print("FAIL " + p)
    print("robustness-etcd: %s (%d problems)" % ("PASS" if not problems else "FAIL", len(problems)))
    if not problems:
        subprocess.run(["rm", "-rf", directory])
    else:
        print("logs kept in %s" % directory)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
