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
   seconds, the only sleeping anyone does) and injects a fault, the faults
   in rounds of each one in a random order (--faults):
   - kill: SIGKILL, and a start on the same socket and data directory,
     waiting for its READY=1;
   - disk-full: the data directory is on a tmpfs of its own (mounted by
     the supervisor: root only; else "disk-full fault: unavailable" and
     no such fault), which a filler file fills for --full-min..--full-max
     seconds, so that the store cannot grow (writes are refused with
     io.tether.StorageFull, reads and watches go on); every second
     stretch has a SIGKILL and a start inside (on the full disk); then
     the filler is removed and writes must succeed again;
   - damage: SIGKILL, then the store damaged as a crash or an admin can
     (a torn commit frame past the WAL's last valid frame, a -shm of
     garbage, the marker deleted or overwritten with garbage), and a
     start: nothing acknowledged may be lost, the epoch must not change.
   A daemon that dies by itself is a violation (and is restarted).
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
import errno
import json
import os
import random
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

FAULTS = ["kill", "disk-full", "damage"]
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

    def __init__(self, tetherd, directory, data, durability):
        self.tetherd = tetherd
        self.socket = os.path.join(directory, "tetherd.sock")
        self.data = data
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


class Disk:
    """The disk-full fault: the data directory on a tmpfs of its own (--disk
    MiB), which the supervisor fills with a filler file, so that the store
    cannot grow, and later frees by removing the filler. Mounting needs
    root (CAP_SYS_ADMIN); without it the fault is unavailable and the data
    directory is an ordinary one."""

    def __init__(self, directory, size_mib, wanted):
        self.mount_point = os.path.join(directory, "disk")
        self.filler = os.path.join(self.mount_point, "filler")
        self.mounted = False
        self.unavailable = None
        self.filled = None
        if not wanted:
            self.unavailable = "not asked for (--faults)"
        elif os.geteuid() != 0:
            self.unavailable = "not root: mounting a tmpfs needs CAP_SYS_ADMIN"
        else:
            os.makedirs(self.mount_point, exist_ok=True)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0700" % size_mib, "tmpfs", self.mount_point],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode == 0:
                self.mounted = True
            else:
                self.unavailable = "mount -t tmpfs failed: %s" % r.stdout.decode(errors="replace").strip()
        self.data = os.path.join(self.mount_point if self.mounted else directory, "data")

    def fill(self):
        """Writes the filler until the tmpfs has no page left (ENOSPC);
        returns its size."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        chunk, size = bytes(1 << 20), 0
        try:
            while True:
                size += os.write(fd, chunk)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
        finally:
            os.close(fd)
        self.filled = size
        return size

    def free(self):
        os.unlink(self.filler)
        self.filled = None

    def used(self):
        """Bytes the store uses on the tmpfs (the filler removed)."""
        st = os.statvfs(self.mount_point)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    def unmount(self, keep_in=None):
        if not self.mounted:
            return
        if keep_in:  # a failing run keeps the store, which umount would drop
            shutil.copytree(self.data, keep_in, dirs_exist_ok=True)
        r = subprocess.run(["umount", self.mount_point], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode == 0:
            self.mounted = False
        else:
            print("robustness: umount %s failed: %s" % (self.mount_point, r.stdout.decode(errors="replace").strip()))


# The damaged-store fault: after a SIGKILL, before the start, the store is
# damaged in ways that must lose no acknowledged write and change no epoch:
#
# - always (when there is a WAL): a torn write at the WAL's tail, a commit
#   frame cut short, with the header's salts and a checksum that fails,
#   written just past the last valid frame (SQLite's recovery stops at the
#   first frame whose checksum fails, so it must not count);
# - always: a -shm of garbage (stale; the store runs with
#   locking_mode=EXCLUSIVE, its WAL index in memory, so it must not be read);
# - in turn: the marker deleted (it is written again at the start), or the
#   marker overwritten with garbage (logged as marker-unreadable, written
#   again). Neither may stop the start or lose a commit.
DAMAGES = ["marker-deleted", "marker-garbage"]
WAL_HEADER, FRAME_HEADER = 32, 24


def wal_frames(data):
    """(page size, salts, offset past the last valid frame, valid frames)
    of a WAL's bytes, by SQLite's rule (wal.c): the header's checksum, then
    every frame's salts equal to the header's and its checksum chained from
    the previous one; None when the header is not valid."""
    if len(data) < WAL_HEADER:
        return None
    magic, _, page_size, _, salt1, salt2, c1, c2 = struct.unpack(">8I", data[:WAL_HEADER])
    if magic not in (0x377F0682, 0x377F0683) or page_size < 512:
        return None
    order = ">" if magic & 1 else "<"

    def checksum(buf, s1, s2):
        words = struct.unpack("%s%dI" % (order, len(buf) // 4), buf)
        for i in range(0, len(words), 2):
            s1 = (s1 + words[i] + s2) & 0xFFFFFFFF
            s2 = (s2 + words[i + 1] + s1) & 0xFFFFFFFF
        return s1, s2
    s = checksum(data[:24], 0, 0)
    if s != (c1, c2):
        return None
    end, frames = WAL_HEADER, 0
    while end + FRAME_HEADER + page_size <= len(data):
        _, _, f1, f2, k1, k2 = struct.unpack(">6I", data[end:end + FRAME_HEADER])
        if (f1, f2) != (salt1, salt2):
            break
        s = checksum(data[end + FRAME_HEADER:end + FRAME_HEADER + page_size], *checksum(data[end:end + 8], *s))
        if s != (k1, k2):
            break
        end += FRAME_HEADER + page_size
        frames += 1
    return page_size, (salt1, salt2), end, frames


def damage_store(data, what, rng):
    """Damages the stopped daemon's store; returns what was done."""
    done = []
    wal = os.path.join(data, "tether.db-wal")
    if os.path.exists(wal):
        with open(wal, "rb") as f:
            before = f.read()
        parsed = wal_frames(before)
        if parsed:
            page_size, salts, end, frames = parsed
            torn = rng.randint(1, page_size - 1)  # of the frame's page
            header = struct.pack(">6I", rng.randint(1, 1000), rng.randint(1, 1000), salts[0], salts[1],
                                 rng.getrandbits(32), rng.getrandbits(32))
            with open(wal, "r+b") as f:
                f.seek(end)
                f.write(header + rng.randbytes(torn))
            with open(wal, "rb") as f:
                after = wal_frames(f.read())
            if after[2:] != (end, frames):
                raise RunFailed("the torn WAL frame reads as valid: %r, before %r" % (after, parsed))
            done.append("wal-torn-frame-after-%d-frames" % frames)
    with open(os.path.join(data, "tether.db-shm"), "wb") as f:
        f.write(rng.randbytes(32768))
    done.append("shm-garbage")
    marker = os.path.join(data, "tether.db.marker")
    if what == "marker-deleted" and os.path.exists(marker):
        os.unlink(marker)
        done.append(what)
    elif what == "marker-garbage":
        with open(marker, "wb") as f:
            f.write(rng.randbytes(rng.randint(1, 200)))
        done.append(what)
    return "+".join(done)


def check_faults(directory, stretches, problems):
    """What the disk-full stretches must have done, from the clients'
    records: every stretch refused writes with io.tether.StorageFull (the
    fault was real), every watcher heard from the daemon while the disk was
    full (watches go on: a progress or change reply), and a write was
    acknowledged after each stretch (space came back, writes succeed).
    Returns (StorageFull writes, StorageFull reads)."""
    import validators
    writes, reads, watchers = [], [], {}
    for name in sorted(os.listdir(directory)):
        if name.startswith("writer-") and name.endswith(".jsonl"):
            for r in validators.load_jsonl(os.path.join(directory, name)):
                (writes if r["k"] == "write" else reads if r["k"] == "read" else []).append(r)
        elif name.startswith("watcher-") and name.endswith(".jsonl"):
            watchers[name[:-6]] = [r for r in validators.load_jsonl(os.path.join(directory, name))
                                   if r["k"] == "event" and "t" in r]
    full = lambda r: r["out"] == "error" and r.get("err") == "io.tether.StorageFull"
    for i, (began, filled, freed) in enumerate(stretches, 1):
        where = "disk-full stretch %d (%.3f s long)" % (i, freed - began)
        refused = [w for w in writes if full(w) and began <= w["t1"] and w["t0"] <= freed]
        if not refused:
            problems.append("%s: no write was refused with io.tether.StorageFull (the store never met the full disk)" % where)
        for name, events in sorted(watchers.items()):
            if not any(filled < e["t"] < freed for e in events):
                problems.append("%s: %s heard nothing from the daemon while the disk was full" % (where, name))
        if not any(w["out"] == "ok" and w["t0"] > freed for w in writes):
            problems.append("%s: no write was acknowledged once the filler was removed" % where)
    during = lambda r: any(began <= r["t1"] and r["t0"] <= freed for began, _, freed in stretches)
    outside = [r for r in writes + reads if full(r) and not during(r)]
    if outside:
        problems.append("%d replies were io.tether.StorageFull outside every disk-full stretch (the first: %s at "
                        "t0=%.3f; is the tmpfs too small? --disk)" % (len(outside), outside[0].get("tag", "a read"),
                                                                     outside[0]["t0"]))
    return sum(1 for w in writes if full(w)), sum(1 for r in reads if full(r))


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
    faults = [f.strip() for f in a.faults.split(",") if f.strip()]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown or not faults:
        raise RunFailed("--faults: %s is not a fault (%s)" % (", ".join(unknown) or "nothing", ", ".join(FAULTS)))
    print("robustness: seed %d, %g s, %d writers, %d watchers, %d states, a fault every %g-%g s (%s), --durability %s"
          % (seed, a.duration, a.writers, a.watchers, a.names, a.kill_min, a.kill_max, ", ".join(faults), a.durability))
    print("robustness: tetherd %s, run directory %s" % (tetherd, directory), flush=True)

    if a.disk is None:
        a.disk = max(256, int(4 * a.duration))
    disk = Disk(directory, a.disk, "disk-full" in faults)
    if disk.unavailable:
        if "disk-full" in faults:
            faults.remove("disk-full")
        print("robustness: disk-full fault: unavailable (%s)" % disk.unavailable, flush=True)
    else:
        print("robustness: disk-full fault: available (the data directory on a tmpfs of %d MiB)" % a.disk, flush=True)
    daemon = Daemon(tetherd, directory, disk.data, a.durability)
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

        # The faults come in rounds, each of every fault in a random order,
        # after a random delay each: so a run of a few rounds has each.
        kill_times, stretches, damages, plan = [], [], [], []
        stretch_times, damage_times = [], []
        while True:
            if not plan:
                plan = list(faults)
                rng.shuffle(plan)
            delay = rng.uniform(a.kill_min, a.kill_max)
            fault = plan[0]
            hold = rng.uniform(a.full_min, a.full_max) if fault == "disk-full" else 0.0
            # A disk-full stretch leaves a second of free disk before the
            # end, for writes to be acknowledged again.
            if time.monotonic() + delay + hold + (1.0 if hold else 0.0) >= until:
                break
            plan.pop(0)
            daemon.wait_or_die(delay)
            at = round(time.monotonic() - start, 3)
            if fault == "kill":
                kill_times.append(at)
                daemon.kill9()
                daemon.start()
            elif fault == "damage":
                daemon.kill9()
                what = damage_store(disk.data, DAMAGES[len(damages) % len(DAMAGES)], rng)
                damages.append(what)
                damage_times.append(at)
                daemon.start()
            else:
                # Every second stretch has a SIGKILL in it, a third of the
                # way: the daemon must start on the full disk (its marker
                # cannot be written: logged) and serve.
                killed = len(stretches) % 2 == 1
                began = time.monotonic()
                size = disk.fill()
                filled = time.monotonic()
                if killed:
                    daemon.wait_or_die(hold / 3)
                    daemon.kill9()
                    daemon.start()
                    daemon.wait_or_die(max(0.0, filled + hold - time.monotonic()))
                else:
                    daemon.wait_or_die(hold)
                disk.free()
                freed = time.monotonic()
                stretches.append((began, filled, freed))
                stretch_times.append((at, round(freed - began, 3), size, killed))
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
        storage_full = check_faults(directory, stretches, problems)
        unreadable = 0
        with open(daemon.log_path, encoding="utf-8", errors="replace") as f:
            unreadable = sum(1 for line in f if "marker-unreadable" in line)
        if any("marker-garbage" in d for d in damages) and not unreadable:
            problems.append("a garbage marker was never reported (no marker-unreadable line in tetherd.log)")
        with open(os.path.join(directory, "history.jsonl"), "w") as f:
            for c in history:
                f.write(json.dumps(c, separators=(",", ":")) + "\n")
        with open(os.path.join(directory, "final.json"), "w") as f:
            json.dump(final, f)
        with open(os.path.join(directory, "supervisor.json"), "w") as f:
            json.dump({"seed": seed, "duration": a.duration, "kills": daemon.kills, "starts": daemon.starts,
                       "kill_times": kill_times, "disk_full": stretch_times,
                       "disk_full_windows": [(b, e) for b, _, e in stretches], "damages": list(zip(damage_times, damages)),
                       "disk_full_unavailable": disk.unavailable, "problems": problems}, f)

        import validators
        violations, checks, s = validators.validate(directory)
        refusals = ", ".join("%s %d" % (k.split(".")[-1], v) for k, v in sorted(s["refusals"].items()))
        print("robustness: %d kills (SIGKILL at %s s, at each damage, in every second disk-full stretch, and one after the run), %d starts; %d commits (%d transactions); "
              "%d writes: %d acknowledged, %d refused (%s), %d unknown (%d of them committed), %d unsent; "
              "%d reads; %d watch events (%d changes) over %d watches (%d resumed, %d resyncs); history from %s"
              % (s["kills"], (", ".join("%g" % t for t in kill_times[:12]) + (", …" if len(kill_times) > 12 else "")) or "no",
                 s["starts"], s["commits"],
                 s["transactions_committed"], s["writes"], s["acknowledged"], s["refused"], refusals or "none",
                 s["unknown"], s["unknown_committed"], s["unsent"], s["reads"], s["watch_events"],
                 s["watch_changes"], s["watches"], s["reconnects"], s["resyncs"], s["history_source"]))
        print("robustness: faults: kill %d, disk-full %d (%d with a kill inside), damage %d; StorageFull replies %d (%d writes, %d reads); "
              "%d resyncs of a snapshot the full disk refused"
              % (len(kill_times), len(stretch_times), sum(1 for t in stretch_times if t[3]), len(damages),
                 sum(storage_full), storage_full[0], storage_full[1], s["disk_full_resyncs"]))
        if stretch_times:
            print("robustness: disk-full stretches (at s, for s, filler MiB): %s; the store used %.1f MiB of the %d MiB tmpfs at the end"
                  % ("; ".join("%g for %g, %.0f%s" % (t, d, size / 1048576, ", SIGKILL and a start inside" if k else "")
                               for t, d, size, k in stretch_times),
                     disk.used() / 1048576, a.disk))
        if damages:
            print("robustness: damaged stores (at s: what): %s; %d marker-unreadable lines in tetherd.log"
                  % ("; ".join("%g: %s" % (t, d) for t, d in zip(damage_times, damages)), unreadable))
        s["faults"] = {"kill": len(kill_times), "disk_full": len(stretch_times),
                       "disk_full_killed": sum(1 for t in stretch_times if t[3]), "damage": len(damages),
                       "storage_full_writes": storage_full[0], "storage_full_reads": storage_full[1]}
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
        disk.unmount(keep_in=None if passed else os.path.join(directory, "data"))
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
    p.add_argument("--kill-min", type=float, default=1.0, help="shortest delay before a fault, s")
    p.add_argument("--kill-max", type=float, default=4.0, help="longest delay before a fault, s")
    p.add_argument("--faults", default=",".join(FAULTS),
                   help="the faults injected, in rounds: kill (SIGKILL and a start), disk-full (the data "
                        "directory's tmpfs filled for a while: needs root), damage (SIGKILL, the store damaged, "
                        "a start); default all")
    p.add_argument("--disk", type=int, help="MiB of the tmpfs that holds the data directory (default: 4 per second "
                   "of --duration, at least 256; a debug tetherd's store grows by about 0.3 MiB a second)")
    p.add_argument("--full-min", type=float, default=1.5, help="shortest disk-full stretch, s")
    p.add_argument("--full-max", type=float, default=3.0, help="longest disk-full stretch, s")
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
