#!/usr/bin/env python3
"""etcd_test.py --tetherd PATH — tetherd on etcd: two "hosts" (two tetherds,
each on a socket of its own) on one 3-member cluster of Debian's etcd,
started here on loopback (scripts/etcd-cluster.sh), driven by PyPI's
varlink client. Each check prints PASS or FAIL with why; the exit status
is 1 when any failed. What it checks (docs/daemon.md, "Several machines"):

  conformance          PyPI varlink's walk through every method
                       (Tests/DaemonTests/python_client.py) passes
  one_order            commits made on both hosts get distinct revisions of
                       one sequence, +1 each, and both hosts end at the same
  read_other_host      a Set on A is read on B, with A's revision
  linearizable_read    a Get on B right after A's Set shows it (the read
                       waits for its barrier), twenty times
  foreign_writes       etcd writes outside /tether/ do not hold reads or
                       stale writes (they wait for tetherd's commits only)
  watch_resume         a watch on A, resumed on B from the revision it saw,
                       continues exactly (no resync, no gap, no repeat)
  path_watch           a path write on A reaches a path watch on B
  cas_across_hosts     two hosts' compare-and-set from one revision: one
                       commits, the other gets RevisionMismatch
  declare              a type lock declared on A refuses a wrong write on B
  commit_limit         a Transaction changing 8 x 1.5 MiB of values gets
                       LimitExceeded(commit) and writes nothing; one 1.5 MiB
                       Set commits
  hostile_value        a value in etcd that tetherd did not write is
                       quarantined (BadJSON on read), the rest is served
  host_killed          a tetherd SIGKILLed loses nothing acknowledged; the
                       other goes on; restarted, it loads everything
  snapshot_restore     a snapshot of the etcd host restores into a SQLite
                       tetherd, and into the cluster under a new epoch
  leader_killed        the etcd leader SIGKILLed: no acknowledged write is
                       lost and writes resume (the time is printed)
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import varlink

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "scripts", "etcd-cluster.sh")
DEADLINE = 20.0  # seconds any awaited condition may take before it fails


class Failed(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise Failed(what)


def wait_until(probe, what, timeout=DEADLINE):
    """Polls `probe` (no fixed sleep: it returns as soon as it holds)."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            value = probe()
            if value:
                return value
        except varlink.VarlinkError as error:
            last = "%s %r" % (error.error(), error.parameters())
        except OSError as error:  # not listening yet
            last = str(error)
        time.sleep(0.005)
    raise Failed("%s: not within %.0f s (last error: %s)" % (what, timeout, last))


class Host:
    """One tetherd on the cluster (a "host")."""

    def __init__(self, name, tetherd, endpoints, directory, extra=()):
        self.name = name
        self.socket = os.path.join(directory, name + ".sock")
        self.logpath = os.path.join(directory, name + ".log")
        self.cmd = [tetherd, "--backend", "etcd:" + endpoints, "--address", "unix:" + self.socket,
                    "--progress-interval", "200"] + list(extra)
        self.proc = None

    def start(self):
        self.log = open(self.logpath, "a")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=self.log)
        wait_until(lambda: self.proc.poll() is not None or os.path.exists(self.socket) and self.ping(),
                   "%s starts" % self.name)
        expect(self.proc.poll() is None, "%s exited at start: %s" % (self.name, self.tail()))

    def ping(self):
        try:
            self.call("Stats")
            return True
        except (OSError, varlink.VarlinkError):
            return False

    def tail(self):
        with open(self.logpath) as f:
            return "".join(f.readlines()[-5:])

    def connect(self):
        client = varlink.Client(address="unix:" + self.socket)
        return client.open("io.tether")

    def call(self, method, **parameters):
        conn = self.connect()
        try:
            return getattr(conn, method)(**parameters)
        finally:
            conn.close()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def error_of(call):
    """The Varlink error a call gets (name, parameters), or None."""
    try:
        call()
    except varlink.VarlinkError as error:
        return error.error(), error.parameters() or {}
    return None


def revision(host):
    return host.call("Stats")["revision"]


def same_revision(a, b):
    wait_until(lambda: revision(a) == revision(b), "%s and %s reach one revision" % (a.name, b.name))


# MARK: the checks

def conformance(a, b, ctx):
    """The PyPI varlink client's walk through every method
    (Tests/DaemonTests/python_client.py, as PythonClientTests runs it
    against a one-machine tetherd), on a fresh cluster."""
    run = subprocess.run([sys.executable, os.path.join(ROOT, "Tests", "DaemonTests", "python_client.py"), "unix:" + a.socket],
                         capture_output=True, text=True, timeout=120)
    expect(run.returncode == 0, "python_client.py against an etcd host:\n%s%s" % (run.stdout[-3000:], run.stderr[-2000:]))


def one_order(a, b, ctx):
    revisions = []
    for i in range(20):
        host = a if i % 2 == 0 else b
        reply = host.call("Set", name="order.%d" % i, value=i)
        expect(reply["changed"], "Set order.%d changed nothing" % i)
        revisions.append(reply["revision"])
    expect(len(set(revisions)) == 20, "revisions repeat: %r" % revisions)
    expect(revisions == sorted(revisions), "revisions of serial writes do not grow: %r" % revisions)
    expect(revisions[-1] - revisions[0] == 19, "revisions skip (not +1 a commit): %r" % revisions)
    same_revision(a, b)
    expect(a.call("Stats")["epoch"] == b.call("Stats")["epoch"], "the hosts have different epochs")


def read_other_host(a, b, ctx):
    reply = a.call("Set", name="shared.theme", value="dark")
    wait_until(lambda: b.call("Get", name="shared.theme")["value"] == "dark", "B reads A's Set")
    got = b.call("Get", name="shared.theme")
    expect(got["modified"] == reply["revision"], "B's modified %r is not A's revision %r" % (got["modified"], reply["revision"]))


def linearizable_read(a, b, ctx):
    """A read on B right after a write on A shows it, without waiting: B's
    read waits for its barrier (tetherd --reads linearizable, the default).
    End to end only: B usually installs a commit before a client can ask,
    so this passes with --reads serializable too, most of the time; the
    barrier's own, exact test is LedgerTests (a read held until its host
    installed what the barrier said)."""
    for i in range(20):
        rev = a.call("Set", name="lin.n", value=i)["revision"]
        got = b.call("Get", name="lin.n")
        expect(got["value"] == i and got["modified"] == rev,
               "B read %r (modified %r) right after A's write of %d at %d" % (got["value"], got["modified"], i, rev))


def foreign_writes(a, b, ctx):
    """Writes outside /tether/ move etcd's revision but never reach a host's
    watch: reads (their barrier) and stale writes must not wait for them
    (they waited forever before)."""
    a.call("Set", name="foreign.n", value=0)
    for i in range(5):
        put = subprocess.run(["etcdctl", "--endpoints", ctx["endpoints"], "put", "/not-tether/k%d" % i, "x"],
                             env=dict(os.environ, ETCDCTL_API="3"), capture_output=True, text=True)
        expect(put.returncode == 0, "etcdctl put failed: %s" % put.stderr)
    done = {}

    def reads():
        done["get"] = b.call("Get", name="foreign.n")["value"]
        # Two hosts writing one state at once: one plan is stale.
        threads = [threading.Thread(target=lambda h=h, v=v: h.call("Set", name="foreign.n", value=v)) for h, v in ((a, 1), (b, 2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done["after"] = a.call("Get", name="foreign.n")["value"]

    t = threading.Thread(target=reads, daemon=True)
    t.start()
    t.join(DEADLINE)
    expect(not t.is_alive(), "a read or a write waited for revisions written outside /tether/")
    expect(done.get("get") == 0 and done.get("after") in (1, 2), "foreign writes: %r" % done)


def watch_resume(a, b, ctx):
    a.call("Set", name="resume.n", value=0)
    same_revision(a, b)
    conn = a.connect()
    stream = conn.Watch(prefix="resume.", _more=True)
    seen = None
    for reply in stream:
        if reply["event"] == "progress":
            seen = reply["revision"]
            break
    expected = []
    for i in range(1, 6):
        host = a if i % 2 else b
        expected.append((host.call("Set", name="resume.n", value=i)["revision"], i))
    conn.close()
    epoch = a.call("Stats")["epoch"]
    same_revision(a, b)
    conn = b.connect()
    got = []
    for reply in conn.Watch(prefix="resume.", from_revision=seen, epoch=epoch, _more=True):
        expect(not reply.get("resync"), "B resynced a resume from A's revision %d: %r" % (seen, reply))
        if reply["event"] == "change":
            for change in reply["changes"]:
                got.append((reply["revision"], change["value"]))
        if reply["event"] == "progress" and got:
            break
    conn.close()
    expect(got == expected, "resumed on B from %d: got %r, want %r" % (seen, got, expected))


def path_watch(a, b, ctx):
    a.call("Set", name="pw.account", value={"balance": 1, "owner": "x"})
    same_revision(a, b)
    conn = b.connect()
    stream = conn.Watch(names=["pw.account"], path="/balance", _more=True)
    for reply in stream:
        if reply["event"] == "progress":
            break
    a.call("Set", name="pw.account", path="/owner", value="y")  # not under /balance
    rev = a.call("Set", name="pw.account", path="/balance", value=2)["revision"]
    for reply in stream:
        if reply["event"] == "change":
            expect(reply["revision"] == rev, "the path watch got revision %d, want %d" % (reply["revision"], rev))
            expect([c.get("value") for c in reply["changes"]] == [2], "path watch changes: %r" % reply["changes"])
            break
    conn.close()


def cas_across_hosts(a, b, ctx):
    r0 = a.call("Set", name="cas.counter", value=0)["revision"]
    same_revision(a, b)
    results = {}

    def attempt(host):
        results[host.name] = error_of(lambda: host.call(
            "Transaction", preconditions=[{"name": "cas.counter", "revision": r0}],
            ops=[{"name": "cas.counter", "op": "set", "value": host.name}]))

    threads = [threading.Thread(target=attempt, args=(h,)) for h in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcomes = sorted(results.values(), key=lambda r: r is not None)
    expect(outcomes[0] is None, "neither compare-and-set committed: %r" % results)
    expect(outcomes[1] is not None and outcomes[1][0] == "io.tether.RevisionMismatch",
           "both compare-and-sets committed, or the loser got another error: %r" % results)
    same_revision(a, b)
    winner = [n for n, r in results.items() if r is None][0]
    expect(a.call("Get", name="cas.counter")["value"] == winner, "A does not hold the winner's value")
    expect(b.call("Get", name="cas.counter")["value"] == winner, "B does not hold the winner's value")


def declare(a, b, ctx):
    a.call("Declare", name="typed.count", descriptor={"type": "int"}, value=1)
    wait_until(lambda: b.call("Describe", name="typed.count")["descriptor"].get("type") == "int", "B sees the type lock")
    err = error_of(lambda: b.call("Set", name="typed.count", value="text"))
    expect(err and err[0] == "io.tether.WrongType", "B let a string into an int state: %r" % (err,))
    expect(b.call("Set", name="typed.count", value=5)["changed"], "B refused an int")


def commit_limit(a, b, ctx):
    limits = a.call("Stats")["limits"]
    size = limits["max_value"] - 64
    big = "x" * size
    for i in range(8):
        a.call("Set", name="big.%d" % i, value={"pad": big, "n": 0})
    before = revision(a)
    err = error_of(lambda: a.call("Transaction", ops=[{"name": "big.%d" % i, "op": "set", "path": "/n", "value": 1}
                                                     for i in range(8)]))
    expect(err and err[0] == "io.tether.LimitExceeded" and err[1].get("limit") == "commit",
           "8 x %d bytes in one commit: %r" % (size, err))
    expect(revision(a) == before, "the refused commit moved the revision")
    expect(a.call("Get", name="big.0", path="/n")["value"] == 0, "the refused commit wrote")
    expect(a.call("Set", name="big.single", value=big)["changed"], "a single max_value Set failed")


def hostile_value(a, b, ctx):
    put = subprocess.run(["etcdctl", "--endpoints", ctx["endpoints"], "put", "/tether/s/hostile", "{not json"],
                         env=dict(os.environ, ETCDCTL_API="3"), capture_output=True, text=True)
    expect(put.returncode == 0, "etcdctl put failed: %s" % put.stderr)
    after = b.call("Set", name="hostile.neighbour", value=1)["revision"]
    wait_until(lambda: revision(a) >= after, "A installs past the hostile value")
    err = error_of(lambda: a.call("Get", name="hostile"))
    expect(err and err[0] == "io.tether.BadJSON", "a value tetherd did not write was served or missed: %r" % (err,))
    expect(a.call("Get", name="hostile.neighbour")["value"] == 1, "A stopped serving the rest")
    # A write replaces it (and the cluster holds JSON again).
    a.call("Set", name="hostile", value="fine")
    expect(b.call("Get", name="hostile")["value"] == "fine" or wait_until(
        lambda: b.call("Get", name="hostile")["value"] == "fine", "B reads the replacement"), "no replacement")


def host_killed(a, b, ctx):
    acked = {}
    for i in range(10):
        acked["killed.%d" % i] = a.call("Set", name="killed.%d" % i, value=i)["revision"]
    a.kill()
    rev = b.call("Set", name="killed.after", value="b")["revision"]
    a.start()
    wait_until(lambda: revision(a) >= rev, "A, restarted, catches up")
    for name, r in acked.items():
        got = a.call("Get", name=name)
        expect(got["modified"] == r, "%s: modified %r, acknowledged at %r" % (name, got["modified"], r))
    expect(a.call("Get", name="killed.after")["value"] == "b", "A misses B's write made while it was down")


def snapshot_restore(a, b, ctx):
    directory = ctx["dir"]
    path = os.path.join(directory, "snap.db")
    reply = a.call("Snapshot", path=path)
    expect(reply["bytes"] > 0, "an empty snapshot")
    states = {s["name"]: s for s in list_all(a)}
    # Into a SQLite tetherd.
    sqlite_dir = os.path.join(directory, "sqlite")
    sock = os.path.join(directory, "sqlite.sock")
    proc = subprocess.Popen([ctx["tetherd"], "--restore", path, "--data-dir", sqlite_dir, "--address", "unix:" + sock],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: os.path.exists(sock), "the SQLite tetherd starts")
        client = varlink.Client(address="unix:" + sock)
        conn = wait_until(lambda: client.open("io.tether"), "connect to the SQLite tetherd")
        for name in ["shared.theme", "typed.count", "cas.counter"]:
            expect(conn.Get(name=name)["value"] == a.call("Get", name=name)["value"], "%s differs after restore into SQLite" % name)
        expect(conn.Describe(name="typed.count")["descriptor"].get("type") == "int", "the descriptor was not restored")
        conn.close()
    finally:
        proc.terminate()
        proc.wait()
    # Into the cluster, under a new epoch (every other host stopped).
    old_epoch = a.call("Stats")["epoch"]
    a.stop()
    b.stop()
    a.cmd += ["--restore", path]
    a.start()
    a.cmd = a.cmd[:-2]
    b.start()
    new_epoch = a.call("Stats")["epoch"]
    expect(new_epoch != old_epoch, "restored under the same epoch")
    expect(b.call("Stats")["epoch"] == new_epoch, "B did not load the new epoch")
    after = {s["name"]: s for s in list_all(b)}
    expect(set(after) == set(states), "restored names differ: %r" % (set(after) ^ set(states)))
    for name in ["shared.theme", "cas.counter", "order.3"]:
        expect(b.call("Get", name=name)["value"] == a.call("Get", name=name)["value"], "%s differs after restore" % name)


def list_all(host):
    out = []
    after = None
    while True:
        reply = host.call("List", prefix="", **({"after": after} if after else {}))
        out += reply["states"]
        if not reply.get("truncated"):
            return out
        after = reply["states"][-1]["name"]


def leader_killed(a, b, ctx):
    status = subprocess.run(["etcdctl", "--endpoints", ctx["endpoints"], "endpoint", "status", "-w", "json"],
                            env=dict(os.environ, ETCDCTL_API="3"), capture_output=True, text=True)
    expect(status.returncode == 0, "etcdctl endpoint status: %s" % status.stderr)
    members = json.loads(status.stdout)
    leader = [m for m in members if m["Status"]["header"]["member_id"] == m["Status"]["leader"]]
    expect(len(leader) == 1, "no single leader: %r" % members)
    port = leader[0]["Endpoint"].rsplit(":", 1)[1]
    ports = os.environ.get("TETHER_ETCD_PORTS", "22379 22479 22579").split()
    expect(port in ports, "the leader %s is not one of the cluster's members" % leader[0]["Endpoint"])
    pidfile = os.path.join(ctx["cluster"], "m%d.pid" % (ports.index(port) + 1))  # etcd-cluster.sh's names
    acked = {}
    for i in range(5):
        acked["leader.%d" % i] = a.call("Set", name="leader.%d" % i, value=i)["revision"]
    pid = int(open(pidfile).read())
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    unknown = 0
    i = 5
    while True:
        err = error_of(lambda: acked.__setitem__("leader.%d" % i, a.call("Set", name="leader.%d" % i, value=i)["revision"]))
        if err is None:
            break
        expect(err[0] in ("io.tether.TimedOut", "io.tether.Busy"), "a write during the election got %r" % (err,))
        unknown += 1
        expect(time.monotonic() - killed_at < DEADLINE, "writes did not resume within %.0f s" % DEADLINE)
    resumed = time.monotonic() - killed_at
    print("  leader SIGKILL: writes resumed after %.2f s (%d writes failed meanwhile)" % (resumed, unknown))
    ctx["figures"]["leader_resume_s"] = round(resumed, 3)
    same_revision(a, b)
    for name, r in acked.items():
        expect(b.call("Get", name=name)["modified"] == r, "%s acknowledged at %d was lost" % (name, r))


CHECKS = [conformance, one_order, read_other_host, linearizable_read, foreign_writes, watch_resume, path_watch, cas_across_hosts, declare, commit_limit,
          hostile_value, host_killed, snapshot_restore, leader_killed]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tetherd", required=True, help="tetherd-etcd (Backends/Etcd/.build/…/tetherd-etcd)")
    parser.add_argument("--sqlite-tetherd", help="the default tetherd, for the restore check")
    parser.add_argument("--only", nargs="*", help="run only these checks")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="tether-etcd-")
    cluster = os.path.join(directory, "cluster")
    up = subprocess.run([CLUSTER, "up", cluster], capture_output=True, text=True)
    if up.returncode != 0:
        print("etcd: the cluster did not start: %s" % up.stderr.strip())
        print("0 passed, 1 failed")
        return 1
    endpoints = up.stdout.strip().splitlines()[-1]
    ctx = {"dir": directory, "cluster": cluster, "endpoints": endpoints, "figures": {},
           "tetherd": args.sqlite_tetherd or os.path.join(os.path.dirname(args.tetherd), "tetherd")}
    a = Host("a", args.tetherd, endpoints, directory)
    b = Host("b", args.tetherd, endpoints, directory)
    passed = failed = 0
    try:
        a.start()
        b.start()
        for check in CHECKS:
            if args.only and check.__name__ not in args.only:
                continue
            try:
                check(a, b, ctx)
                print("PASS %s" % check.__name__)
                passed += 1
            except (Failed, varlink.VarlinkError, OSError) as error:
                detail = error if not isinstance(error, varlink.VarlinkError) else "%s %r" % (error.error(), error.parameters())
                print("FAIL %s: %s" % (check.__name__, detail))
                print("  host a: %s\n  host b: %s" % (a.tail().strip(), b.tail().strip()))
                failed += 1
                for h in (a, b):
                    if h.proc.poll() is not None:
                        h.start()
    finally:
        a.stop()
        b.stop()
        subprocess.run([CLUSTER, "down", cluster])
        if failed == 0 and not os.environ.get("TETHER_ETCD_KEEP"):
            subprocess.run(["rm", "-rf", directory])
        else:
            print("etcd: logs kept in %s" % directory)
    if ctx["figures"]:
        print("etcd figures: %s" % json.dumps(ctx["figures"]))
    print("etcd: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
