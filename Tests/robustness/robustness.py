#!/usr/bin/env python3
"""robustness.py — a randomized robustness test of tetherd, in the manner of
etcd's tests/robustness: real client processes against a real daemon that
is killed with SIGKILL at random moments, then every guarantee checked
against what each client saw.

    python3 Tests/robustness/robustness.py [--seed N] [--duration S] [--tetherd PATH]
    python3 Tests/robustness/validators.py RUN_DIR      (re-check a kept run)

The run:

1. tetherd starts with a data directory and --durability full, and is
   waited for through NOTIFY_SOCKET (READY=1), as systemd does.
2. Client processes (clients.py) run for --duration seconds: writers doing
   Get, Set, Remove and multi-state Transactions with compare-on-revision
   preconditions, tagged "w<client>-<seq>"; watchers holding
   Watch(prefix=..., more=True) and resuming with from_revision + epoch
   whenever their connection is lost (or dropped on purpose).
3. Meanwhile the supervisor sleeps a random delay (--kill-min..--kill-max
   seconds, the only sleeping anyone does), kills tetherd with SIGKILL, and
   starts it again on the same socket and data directory, waiting for its
   READY=1. A daemon that dies by itself is a violation (and is restarted).
4. Once the writers stop, the daemon's last revision is handed to the
   watchers, which stop when they have seen it. The history is read back
   with Watch(from_revision=0) and the states with List and Get; the daemon
   is killed and started once more, and must hold exactly the same.
5. validators.py checks every guarantee; the summary and one line per
   check are printed. Then faults are injected into the run's records (a
   lost commit, a duplicate or missing watch event, a split transaction,
   a stale read, ...) and each must be caught by the check meant for it.
   Exit status 0 when every check passed, 1 on any violation (each printed
   precisely) or an injected fault not caught, 2 when the run itself
   failed.

The run directory (records of every client, the daemon's log, the history)
is removed after a passing run and kept after a failing one (--keep DIR
keeps it always).
"""

import argparse
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

PROGRESS_INTERVAL_MS = 200   # idle watches hear progress this often
# Commits the daemon keeps for resuming watches: more than any run makes
# (a release tetherd commits over 2000 a second here), so that the history
# is read back whole from the daemon, and a resync is always a violation.
LOG_CAPACITY = 10_000_000
READY_TIMEOUT = 60.0


class RunFailed(Exception):
    pass


class Daemon:
    """tetherd under supervision: started, awaited through NOTIFY_SOCKET,
    killed, restarted on the same socket and data directory."""

    def __init__(self, tetherd, directory, durability):
        self.tetherd = tetherd
        self.socket = os.path.join(directory, "tetherd.sock")
        self.data = os.path.join(directory, "data")
        self.log_path = os.path.join(directory, "tetherd.log")
        self.durability = durability
        self.notify_path = os.path.join(directory, "notify")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.proc = None
        self.starts = 0
        self.kills = 0
        self.problems = []

    def start(self):
        while True:  # drop what an earlier daemon sent
            r, _, _ = select.select([self.notify], [], [], 0)
            if not r:
                break
            self.notify.recv(4096)
        env = dict(os.environ, NOTIFY_SOCKET=self.notify_path)
        env.pop("LISTEN_FDS", None)
        env.pop("LISTEN_PID", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [self.tetherd, "--address", "unix:" + self.socket, "--data-dir", self.data,
                 "--durability", self.durability, "--progress-interval", str(PROGRESS_INTERVAL_MS),
                 "--log-capacity", str(LOG_CAPACITY)],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        self.starts += 1
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            r, _, _ = select.select([self.notify], [], [], 0.2)
            if r and b"READY=1" in self.notify.recv(4096).split(b"\n"):
                return
            if self.proc.poll() is not None:
                raise RunFailed("tetherd exited with status %d before READY=1 (start %d); see %s"
                                % (self.proc.returncode, self.starts, self.log_path))
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RunFailed("tetherd sent no READY=1 within %d s" % READY_TIMEOUT)

    def wait_or_die(self, seconds):
        """Waits `seconds` (the random delay before a kill); when the
        daemon exits by itself meanwhile, records it and restarts it."""
        try:
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return
        self.problems.append("tetherd exited by itself with status %d (start %d); see tetherd.log"
                             % (self.proc.returncode, self.starts))
        self.start()

    def kill9(self):
        if self.proc.poll() is not None:
            self.problems.append("tetherd had exited by itself with status %d before a kill (start %d)"
                                 % (self.proc.returncode, self.starts))
        else:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.kills += 1

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                status = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.problems.append("tetherd did not stop within 30 s of SIGTERM")
                return
            if status != 0:
                self.problems.append("tetherd exited with status %d on SIGTERM" % status)
        self.notify.close()


def call(socket_path, method, **parameters):
    """One call on a fresh connection (the daemon is up: no retrying)."""
    import clients
    client = clients.varlink.Client(address="unix:" + socket_path)
    conn = clients.Connection(client, socket_path)
    try:
        return getattr(conn.tether, method)(**parameters)
    finally:
        conn.close()


def read_states(socket_path):
    """Stats and every state (List, then Get each), with no writer left."""
    import clients
    client = clients.varlink.Client(address="unix:" + socket_path)
    conn = clients.Connection(client, socket_path)
    try:
        stats = conn.tether.Stats()
        states, after = {}, None
        while True:
            page = conn.tether.List(prefix="", after=after, limit=1000) if after else conn.tether.List(prefix="", limit=1000)
            for info in page["states"]:
                got = conn.tether.Get(name=info["name"])
                states[info["name"]] = {"value": got.get("value"), "modified": got["modified"]}
            if not page["truncated"]:
                break
            after = page["states"][-1]["name"]
        return {"revision": stats["revision"], "epoch": stats["epoch"],
                "oldest_revision": stats["oldest_revision"], "states": states}
    finally:
        conn.close()


def read_history(socket_path, epoch):
    """Every commit, from a Watch of every state from revision 0; None when
    the daemon answers with a resync (its log no longer holds revision 1)."""
    import clients
    client = clients.varlink.Client(address="unix:" + socket_path)
    conn = clients.Connection(client, socket_path)
    commits = []
    try:
        for reply in conn.tether.Watch(prefix="", from_revision=0, epoch=epoch, _more=True):
            if reply["event"] == "snapshot":
                return None
            if reply["event"] == "progress":
                return commits
            commits.append({"rev": reply["revision"], "tag": reply.get("tag"), "origin": reply.get("origin"),
                            "changes": reply.get("changes", [])})
    finally:
        conn.close()
    return commits


def history_from_watchers(directory):
    """The history as a watcher of every state saw it (used when the log
    no longer holds the run)."""
    import validators
    for name in sorted(os.listdir(directory)):
        if not (name.startswith("watcher-") and name.endswith(".jsonl")):
            continue
        records = validators.load_jsonl(os.path.join(directory, name))
        if not records or records[0].get("prefix") != "":
            continue
        commits = {}
        for r in records:
            if r["k"] == "event" and r["e"] == "change":
                commits[r["rev"]] = {"rev": r["rev"], "tag": r.get("tag"), "origin": r.get("origin"),
                                     "changes": r["changes"]}
        return [commits[k] for k in sorted(commits)]
    return None


def spawn(role, directory, index, extra):
    out = os.path.join(directory, "%s-%d.jsonl" % (role, index))
    argv = [sys.executable, os.path.abspath(__file__), "--role", role, "--id", str(index), "--out", out] + extra
    err = open(os.path.join(directory, "%s-%d.stderr" % (role, index)), "wb")
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err)


def wait_all(procs, timeout, what, problems):
    deadline = time.monotonic() + timeout
    for name, p in procs:
        try:
            status = p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            problems.append("%s %s did not finish within %d s of the end (killed)" % (what, name, timeout))
            continue
        if status != 0:
            problems.append("%s %s exited with status %d (see %s.stderr)" % (what, name, status, name))


def supervise(a):
    tetherd = a.tetherd
    if not tetherd:
        for candidate in (".build/release/tetherd", ".build/debug/tetherd"):
            if os.access(os.path.join(ROOT, candidate), os.X_OK):
                tetherd = os.path.join(ROOT, candidate)
                break
    if not tetherd or not os.access(tetherd, os.X_OK):
        raise RunFailed("no tetherd (build it: make build, or pass --tetherd)")
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    directory = a.keep or tempfile.mkdtemp(prefix="tether-robust.")
    os.makedirs(directory, exist_ok=True)
    print("robustness: seed %d, %g s, %d writers, %d watchers, %d states, SIGKILL every %g-%g s, --durability %s"
          % (seed, a.duration, a.writers, a.watchers, a.names, a.kill_min, a.kill_max, a.durability))
    print("robustness: tetherd %s, run directory %s" % (tetherd, directory), flush=True)

    daemon = Daemon(tetherd, directory, a.durability)
    children = []
    problems = daemon.problems
    passed = False
    try:
        daemon.start()
        rng = random.Random("%d/supervisor" % seed)
        start = time.monotonic()
        until = start + a.duration
        final_file = os.path.join(directory, "final-revision")
        common = ["--seed", str(seed), "--socket", daemon.socket]
        writers = [("writer-%d" % i, spawn("writer", directory, i, common + ["--until", repr(until), "--names", str(a.names)]))
                   for i in range(1, a.writers + 1)]
        prefixes = ["", "a.", "b."]
        watchers = [("watcher-%d" % i, spawn("watcher", directory, i, common + [
                        "--prefix", prefixes[(i - 1) % len(prefixes)], "--final", final_file,
                        "--deadline", repr(until + 180), "--drop", str(a.drop)]))
                    for i in range(1, a.watchers + 1)]
        children = writers + watchers

        kill_times = []
        while True:
            delay = rng.uniform(a.kill_min, a.kill_max)
            if time.monotonic() + delay >= until:
                break
            daemon.wait_or_die(delay)
            kill_times.append(round(time.monotonic() - start, 3))
            daemon.kill9()
            daemon.start()
        wait_all(writers, 120, "writer", problems)

        stats = call(daemon.socket, "Stats")
        with open(final_file + ".tmp", "w") as f:
            f.write(str(stats["revision"]))
        os.rename(final_file + ".tmp", final_file)
        wait_all(watchers, 120, "watcher", problems)

        final = read_states(daemon.socket)
        if final["revision"] != stats["revision"]:
            problems.append("the revision moved from %d to %d with no writer left" % (stats["revision"], final["revision"]))
        history = read_history(daemon.socket, final["epoch"])
        final["history_source"] = "Watch(from_revision=0)"
        if history is None:
            history = history_from_watchers(directory)
            final["history_source"] = "watcher of every state (the log no longer held revision 1)"
            if history is None:
                raise RunFailed("the log no longer holds revision 1 and no watcher watched every state")
        final["log_capacity"] = LOG_CAPACITY
        daemon.kill9()
        daemon.start()
        final["after_restart"] = read_states(daemon.socket)
        daemon.stop()
        with open(os.path.join(directory, "history.jsonl"), "w") as f:
            for c in history:
                f.write(json.dumps(c, separators=(",", ":")) + "\n")
        with open(os.path.join(directory, "final.json"), "w") as f:
            json.dump(final, f)
        with open(os.path.join(directory, "supervisor.json"), "w") as f:
            json.dump({"seed": seed, "duration": a.duration, "kills": daemon.kills, "starts": daemon.starts,
                       "kill_times": kill_times, "problems": problems}, f)

        import validators
        violations, checks, s = validators.validate(directory)
        refusals = ", ".join("%s %d" % (k.split(".")[-1], v) for k, v in sorted(s["refusals"].items()))
        print("robustness: %d kills (SIGKILL at %s s, and one after the run), %d starts; %d commits (%d transactions); "
              "%d writes: %d acknowledged, %d refused (%s), %d unknown (%d of them committed), %d unsent; "
              "%d reads; %d watch events (%d changes) over %d watches (%d resumed, %d resyncs); history from %s"
              % (s["kills"], ", ".join("%g" % t for t in kill_times[:12]) + (", …" if len(kill_times) > 12 else ""),
                 s["starts"], s["commits"],
                 s["transactions_committed"], s["writes"], s["acknowledged"], s["refused"], refusals or "none",
                 s["unknown"], s["unknown_committed"], s["unsent"], s["reads"], s["watch_events"],
                 s["watch_changes"], s["watches"], s["reconnects"], s["resyncs"], s["history_source"]))
        with open(os.path.join(directory, "summary.json"), "w") as f:
            json.dump(s, f, sort_keys=True)
        if violations:
            print("robustness: FAILED: %d violation%s in %d checks (seed %d; run kept in %s)"
                  % (violations, "" if violations == 1 else "s", checks, seed, directory))
            return 1
        caught, tried, missed = validators.self_check(directory)
        if missed:
            print("robustness: FAILED: the validators missed %d of %d injected faults (seed %d; run kept in %s)"
                  % (len(missed), tried, seed, directory))
            return 1
        passed = True
        print("robustness: every check passed (%d checks, seed %d); the checks catch %d of %d faults injected into this run"
              % (checks, seed, caught, tried))
        return 0
    finally:
        for name, p in children:
            if p.poll() is None:
                p.kill()
                p.wait()
        if daemon.proc and daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait()
        if passed and not a.keep:
            shutil.rmtree(directory, ignore_errors=True)
        elif not passed:
            print("robustness: run directory kept: %s" % directory)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tetherd", help="the daemon (default .build/release/tetherd, else .build/debug/tetherd)")
    p.add_argument("--seed", type=int, help="the random seed (default: a random one, printed)")
    p.add_argument("--duration", type=float, default=30.0, help="seconds the writers run (default 30)")
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--watchers", type=int, default=2, help="prefixes '', 'a.', 'b.' in turn")
    p.add_argument("--names", type=int, default=12, help="states written: a.0.. and b.0.. (default 12)")
    p.add_argument("--kill-min", type=float, default=1.0, help="shortest delay before a SIGKILL, s")
    p.add_argument("--kill-max", type=float, default=4.0, help="longest delay before a SIGKILL, s")
    p.add_argument("--drop", type=float, default=0.003, help="chance a watcher drops its connection after a change")
    p.add_argument("--durability", default="full", choices=["full", "normal"])
    p.add_argument("--keep", help="run directory, kept after the run")
    # The client processes.
    p.add_argument("--role", choices=["writer", "watcher"], help=argparse.SUPPRESS)
    p.add_argument("--id", type=int, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--socket", help=argparse.SUPPRESS)
    p.add_argument("--until", type=float, help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    p.add_argument("--prefix", help=argparse.SUPPRESS)
    p.add_argument("--final", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.role:
        import clients
        return (clients.Writer if a.role == "writer" else clients.Watcher)(a).run()
    try:
        import varlink  # noqa: F401
    except ImportError:
        print("robustness: the varlink package is missing: pip install varlink")
        return 2
    try:
        return supervise(a)
    except RunFailed as e:
        print("robustness: the run failed: %s" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
