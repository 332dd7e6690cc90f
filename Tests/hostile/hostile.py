#!/usr/bin/env python3
"""hostile.py — tetherd against a hostile local user (issue 29, §1 and §2).

    python3 Tests/hostile/hostile.py --tetherd PATH [--strict] [--only NAME ...]

Runs as root: the attacker is a second uid (nobody), as on a real machine;
it is started as a child process with that uid (`--attack NAME`). The daemon
is the real tetherd, on a socket in a temporary directory, with an access
configuration that grants some other uid (so the socket is 0666 and every
local user can reach it, as the system unit's is).

Each scenario runs one attack while the owner (root, this process) keeps
calling Stats on a connection of its own, and checks:

- every owner call was answered; the slowest one is reported with the p50
  and p99 (`--strict` also requires p99 <= 50 ms: the figure of the issue;
  without it only a stall of a second fails, since a loaded CI machine is
  no place for a tight time bound, and the stalls this guards against were
  25 s long);
- what the attack may hold of the daemon: its descriptors and its peak
  resident memory (VmHWM, reset before each attack through clear_refs);
- what the attacker was told (PermissionDenied, LimitExceeded).

Exit status 0 when every check passed, 1 otherwise. The closing line is
"N passed, N failed".
"""

import argparse
import json
import os
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

NOBODY = 65534
GRANTED_PREFIX = "pub."
# The daemon's defaults (docs/daemon.md, "Security"): the scenarios are
# sized against them.
CONNECTIONS_PER_UID = 128
INPUT_PER_UID = 16 << 20
MAX_MESSAGE = 2 << 20


# --------------------------------------------------------------- the wire

def frame(method, **parameters):
    return json.dumps({"method": method, "parameters": parameters}).encode() + b"\0"


def read_reply(sock, limit=64 << 20):
    data = b""
    while b"\0" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a reply (%d bytes)" % len(data))
        data += chunk
        if len(data) > limit:
            raise ConnectionError("reply past %d bytes" % limit)
    return json.loads(data[:data.index(b"\0")])


def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # A blocking connect: with a timeout set, Python's socket is
    # non-blocking underneath, and a Unix socket whose listen backlog is
    # full (1,100 connections faster than the daemon accepts them) then
    # fails with EAGAIN instead of waiting its turn.
    s.connect(path)
    s.settimeout(timeout)
    return s


# ------------------------------------------------- names that collided

C0 = 0x9E3779B97F4A7C15
C1 = 0xFF51AFD7ED558CCD
M64 = (1 << 64) - 1


def colliding_names(count, seed=1):
    """`count` distinct 16-byte ASCII names whose 64-bit hash under the
    member-name mix Tether used until issue 29 (an unseeded multiply-
    xorshift, MemberKey.mix) is one and the same: the first word is
    random, the second is solved for, and kept when its bytes are ASCII
    (one try in 256)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    c1 = np.uint64(C1)
    target = 0x0123456789ABCDEF
    # Undo the second round's xorshift and multiply: x = (h1 ^ w2).
    y = target
    y ^= (y >> 29) ^ (y >> 58)
    x = (y * pow(C1, -1, 1 << 64)) & M64
    names = set()
    h0 = np.uint64((16 * C0) & M64)
    while len(names) < count:
        w1 = rng.integers(0, 128, size=(1 << 20, 8), dtype=np.uint8).view("<u8").reshape(-1)
        with np.errstate(over="ignore"):
            h = (h0 ^ w1) * c1
            h ^= h >> np.uint64(29)
        w2 = h ^ np.uint64(x)
        ok = (w2 & np.uint64(0x8080808080808080)) == 0
        for a, b in zip(w1[ok].tolist(), w2[ok].tolist()):
            names.add(struct.pack("<QQ", a, b).decode("ascii"))
            if len(names) >= count:
                break
    return sorted(names)


def old_mix(name):
    """The old MemberKey.mix of a 16-byte name (checks colliding_names)."""
    b = name.encode()
    assert len(b) == 16
    h = (16 * C0) & M64
    for (w,) in struct.iter_unpack("<Q", b):
        h = ((h ^ w) * C1) & M64
        h ^= h >> 29
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CE_B9FE_1A85_EC53) & M64
    h ^= h >> 33
    return h


def flood_payload(directory, count, name):
    """A Set of `name` to an object of `count` colliding names, written to
    a file the attacker can read."""
    path = os.path.join(directory, "flood-%d.json" % count)
    with open(path, "wb") as f:
        f.write(frame("io.tether.Set", name=name, value={n: 1 for n in colliding_names(count)}))
    os.chmod(path, 0o644)
    return path


# ------------------------------------------------------------ the daemon

class Daemon:
    def __init__(self, tetherd, directory, grants):
        self.directory = directory
        self.socket = os.path.join(directory, "tetherd.sock")
        config = os.path.join(directory, "access.json")
        with open(config, "w") as f:
            json.dump({"grants": grants}, f)
        os.chmod(config, 0o644)
        notify_path = os.path.join(directory, "notify")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        env = dict(os.environ, NOTIFY_SOCKET=notify_path)
        env.pop("LISTEN_FDS", None)
        self.log_path = os.path.join(directory, "tetherd.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([tetherd, "--address", "unix:" + self.socket, "--memory", "--config", config],
                                     env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 60
        try:
            while True:
                r, _, _ = select.select([notify], [], [], 0.5)
                if r and b"READY=1" in notify.recv(4096):
                    break
                if self.proc.poll() is not None:
                    raise RuntimeError("tetherd exited with %d before READY=1: %s" % (self.proc.returncode, self.log_text()))
                if time.monotonic() > deadline:
                    raise RuntimeError("tetherd sent no READY=1 within 60 s")
        finally:
            notify.close()
        # Another uid reaches the socket through its directory.
        os.chmod(directory, 0o755)

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def descriptors(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def reset_peak(self):
        with open("/proc/%d/clear_refs" % self.proc.pid, "w") as f:
            f.write("5")

    def status_kib(self, field):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


class OwnerProbe:
    """The owner's calls during an attack: Stats, one at a time, on one
    connection, timed."""

    def __init__(self, path):
        self.sock = connect(path, timeout=30)
        self.latencies = []
        self.errors = []
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            t = time.monotonic()
            try:
                self.sock.sendall(frame("io.tether.Stats"))
                reply = read_reply(self.sock)
                if "error" in reply:
                    self.errors.append(reply["error"])
            except Exception as e:  # noqa: BLE001 - reported as a failure
                self.errors.append(repr(e))
                return
            self.latencies.append(time.monotonic() - t)

    def stop(self):
        self.running = False
        self.thread.join(60)
        self.sock.close()
        xs = sorted(self.latencies)
        if not xs:
            return {"calls": 0, "p50_ms": None, "p99_ms": None, "max_ms": None, "errors": self.errors}
        pick = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))] * 1000  # noqa: E731
        return {"calls": len(xs), "p50_ms": round(pick(0.5), 2), "p99_ms": round(pick(0.99), 2),
                "max_ms": round(xs[-1] * 1000, 2), "errors": self.errors}


# ------------------------------------------------------------ the attacks
# Each runs in a child process as nobody and prints one JSON line: what it
# saw.

def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def collect(socks, quiet=1.0):
    """What each connection was told: its first reply's error (with the
    limit of a LimitExceeded), "closed", or "no reply (held open)" when
    nothing came within `quiet` seconds of the last thing that did."""
    import selectors
    outcomes = {}
    data = {s: b"" for s in socks}
    sel = selectors.DefaultSelector()  # epoll: past select()'s 1,024 descriptors
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)

    def settle(s, key):
        outcomes[key] = outcomes.get(key, 0) + 1
        sel.unregister(s)

    while sel.get_map():
        events = sel.select(quiet)
        if not events:
            break
        for key_, _ in events:
            s = key_.fileobj
            try:
                chunk = s.recv(65536)
            except OSError as e:
                settle(s, "closed: " + type(e).__name__)
                continue
            if not chunk:
                settle(s, "closed: EOF")
                continue
            data[s] += chunk
            if b"\0" in data[s]:
                reply = json.loads(data[s][:data[s].index(b"\0")])
                key = reply.get("error", "ok")
                if key == "io.tether.LimitExceeded":
                    key += ":" + reply["parameters"]["limit"]
                settle(s, key)
    held = len(sel.get_map())
    if held:
        outcomes["no reply (held open)"] = held
    sel.close()
    return outcomes


def attack_idle(path, n):
    """n connections opened and kept; each one's reply (if any) read."""
    raise_fd_limit()
    socks = [connect(path) for _ in range(n)]
    outcomes = collect(socks)
    print(json.dumps({"outcomes": outcomes}), flush=True)
    # Held open until the parent has measured the daemon.
    sys.stdin.read()


def attack_partial(path, n, size):
    """n connections each sending `size` bytes of one call without its NUL."""
    raise_fd_limit()
    socks = []
    chunk = b'{"method":"io.tether.Get","parameters":{"name":"' + b"a" * (size - 48)
    for _ in range(n):
        s = connect(path)
        socks.append(s)
        s.setblocking(False)
    # Send round-robin without blocking: a connection the daemon does not
    # read fills its socket buffer and is left there.
    sent = [0] * n
    for _ in range(200):
        progress = False
        for i, s in enumerate(socks):
            if sent[i] < len(chunk) and sent[i] >= 0:
                try:
                    k = s.send(chunk[sent[i]:sent[i] + (256 << 10)])
                    sent[i] += k
                    progress = progress or k > 0
                except BlockingIOError:
                    pass
                except OSError:
                    sent[i] = -1
        if not progress:
            break
    outcomes = collect(socks)
    print(json.dumps({"outcomes": outcomes, "bytes_sent": sum(x for x in sent if x > 0)}), flush=True)
    sys.stdin.read()


def attack_flood_set(path, payload):
    """One Set read from `payload` (the parent made it: an object whose
    member names collided under the old hash)."""
    with open(payload, "rb") as f:
        message = f.read()
    s = connect(path, timeout=120)
    t = time.monotonic()
    try:
        s.sendall(message)
    except OSError:
        pass  # refused and closed while sending: the reply says why
    try:
        reply = read_reply(s)
        key = reply.get("error", "ok")
    except OSError as e:
        key = "closed: " + type(e).__name__
    print(json.dumps({"outcomes": {key: 1}, "seconds": round(time.monotonic() - t, 3)}), flush=True)
    sys.stdin.read()


def run_attack(path, name, *args):
    """Starts the attack as nobody; returns (process, its JSON line). The
    attacker runs the system's python3 on a copy of this script beside the
    socket (root's own interpreter and work tree may be closed to it)."""
    script = os.path.join(os.path.dirname(path), "hostile.py")
    if not os.path.exists(script):
        shutil.copy(os.path.abspath(__file__), script)
        os.chmod(script, 0o755)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    argv = [python, script, "--attack", name, path] + [str(a) for a in args]
    proc = subprocess.Popen(argv, user=NOBODY, group=65534, extra_groups=[], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin", "HOME": "/"})
    line = proc.stdout.readline()
    if not line:
        err = proc.stderr.read().decode(errors="replace")
        proc.wait()
        raise RuntimeError("attack %s printed nothing: %s" % (name, err))
    return proc, json.loads(line)


def end_attack(proc):
    try:
        proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# ------------------------------------------------------------ scenarios

class Scenario:
    def __init__(self, name, grants, run):
        self.name, self.grants, self.run = name, grants, run


def ungranted_grants():
    # A grant for some other uid: the socket is 0666, nobody has none.
    return [{"uid": 4242, "access": "read", "prefixes": ["pub."]}]


def granted_grants():
    return [{"uid": NOBODY, "access": "read-write", "prefixes": [GRANTED_PREFIX]}]


def under_attack(d, name, *args):
    """Runs one attack while the owner calls: returns what the owner saw,
    what the attacker saw, and the daemon's descriptors, resident memory
    before and peak resident memory during it (KiB)."""
    d.reset_peak()
    before = {"fds": d.descriptors(), "rss": d.status_kib("VmRSS")}
    probe = OwnerProbe(d.socket)
    proc, seen = run_attack(d.socket, name, *args)
    during = {"fds": d.descriptors(), "peak": d.status_kib("VmHWM")}
    owner = probe.stop()
    end_attack(proc)
    return owner, seen, before, during


def sc_ungranted_idle(d, checks):
    owner, seen, before, during = under_attack(d, "idle", 1100)
    base_fds, fds = before["fds"], during["fds"]
    checks.expect(seen["outcomes"].get("org.varlink.service.PermissionDenied", 0) == 1100,
                  "every one of 1,100 connections was refused with PermissionDenied: %s" % seen["outcomes"])
    checks.expect(fds <= base_fds + 4, "the daemon holds no refused connection (%d descriptors, %d before)" % (fds, base_fds))
    return owner, {"descriptors_before": base_fds, "descriptors_during": fds}


def sc_ungranted_partial(d, checks):
    owner, seen, before, during = under_attack(d, "partial", 300, 2 << 20)
    base, peak = before["rss"], during["peak"]
    refused = seen["outcomes"].get("org.varlink.service.PermissionDenied", 0) + \
        sum(v for k, v in seen["outcomes"].items() if k.startswith("closed"))
    checks.expect(refused == 300, "all 300 were refused or closed: %s" % seen["outcomes"])
    checks.expect(peak - base < 32 << 10, "peak RSS grew %d KiB (< 32 MiB): nothing of theirs was read" % (peak - base))
    return owner, {"rss_kib_before": base, "peak_rss_kib": peak}


def sc_ungranted_colliding(d, checks):
    owner, seen, _, _ = under_attack(d, "flood_set", flood_payload(d.directory, 80_000, "pub.flood"))
    checks.expect(list(seen["outcomes"]) in (["org.varlink.service.PermissionDenied"], ["closed: BrokenPipeError"],
                                             ["closed: ConnectionResetError"]),
                  "the colliding names were refused unread: %s" % seen["outcomes"])
    return owner, {"attacker_seconds": seen["seconds"]}


def sc_granted_connections(d, checks):
    owner, seen, before, during = under_attack(d, "idle", 300)
    base_fds, fds = before["fds"], during["fds"]
    o = seen["outcomes"]
    checks.expect(o.get("io.tether.LimitExceeded:connections", 0) == 300 - CONNECTIONS_PER_UID,
                  "%d of 300 refused with LimitExceeded(connections): %s" % (300 - CONNECTIONS_PER_UID, o))
    checks.expect(o.get("no reply (held open)", 0) == CONNECTIONS_PER_UID, "%d held open: %s" % (CONNECTIONS_PER_UID, o))
    checks.expect(fds <= base_fds + CONNECTIONS_PER_UID + 4, "the daemon holds at most the cap (%d descriptors, %d before)"
                  % (fds, base_fds))
    return owner, {"descriptors_before": base_fds, "descriptors_during": fds}


def sc_granted_partial(d, checks):
    owner, seen, before, during = under_attack(d, "partial", 300, 2 << 20)
    base, peak = before["rss"], during["peak"]
    o = seen["outcomes"]
    checks.expect(o.get("io.tether.LimitExceeded:connections", 0) == 300 - CONNECTIONS_PER_UID,
                  "connections past the cap refused: %s" % o)
    checks.expect(o.get("io.tether.LimitExceeded:input", 0) >= 1, "the input cap cut some off: %s" % o)
    # The cap (16 MiB) plus what each kept buffer may hold beyond its
    # bytes (an array doubles) and the reads in flight.
    checks.expect(peak - base < 64 << 10, "peak RSS grew %d KiB (< 64 MiB; 616 MiB before the caps)" % (peak - base))
    return owner, {"rss_kib_before": base, "peak_rss_kib": peak, "outcomes": o}


def sc_granted_colliding(d, checks):
    owner, seen, _, _ = under_attack(d, "flood_set", flood_payload(d.directory, 40_000, "pub.flood"))
    checks.expect(seen["outcomes"] == {"ok": 1}, "the granted Set of 40k colliding names succeeded: %s" % seen["outcomes"])
    # The same names read back: a Get builds the value again.
    s = connect(d.socket, timeout=120)
    t = time.monotonic()
    s.sendall(frame("io.tether.Get", name="pub.flood"))
    reply = read_reply(s)
    get_seconds = time.monotonic() - t
    s.close()
    checks.expect("error" not in reply and len(reply["parameters"]["value"]) == 40_000, "Get returned the 40k members")
    return owner, {"set_seconds": seen["seconds"], "get_seconds": round(get_seconds, 3)}


SCENARIOS = [
    Scenario("ungranted-idle-connections", ungranted_grants(), sc_ungranted_idle),
    Scenario("ungranted-partial-messages", ungranted_grants(), sc_ungranted_partial),
    Scenario("ungranted-colliding-names", ungranted_grants(), sc_ungranted_colliding),
    Scenario("granted-connections-over-cap", granted_grants(), sc_granted_connections),
    Scenario("granted-partial-messages", granted_grants(), sc_granted_partial),
    Scenario("granted-colliding-names", granted_grants(), sc_granted_colliding),
]


class Checks:
    def __init__(self):
        self.failures = []

    def expect(self, ok, what):
        print("    %s %s" % ("ok  " if ok else "FAIL", what), flush=True)
        if not ok:
            self.failures.append(what)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--attack":
        name, path = sys.argv[2], sys.argv[3]
        args = sys.argv[4:]
        {"idle": lambda: attack_idle(path, int(args[0])),
         "partial": lambda: attack_partial(path, int(args[0]), int(args[1])),
         "flood_set": lambda: attack_flood_set(path, args[0])}[name]()
        return 0

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tetherd", required=True)
    p.add_argument("--strict", action="store_true", help="also require the owner's p99 <= 50 ms")
    p.add_argument("--only", nargs="*", help="scenario names")
    a = p.parse_args()
    if os.geteuid() != 0:
        print("hostile.py: needs root (it runs the attacker as nobody)", file=sys.stderr)
        return 2
    bound_ms = 50 if a.strict else 1000
    passed = failed = 0
    for sc in SCENARIOS:
        if a.only and sc.name not in a.only:
            continue
        directory = tempfile.mkdtemp(prefix="tether-hostile-")
        checks = Checks()
        print("%s:" % sc.name, flush=True)
        d = None
        try:
            d = Daemon(a.tetherd, directory, sc.grants)
            owner, figures = sc.run(d, checks)
            checks.expect(not owner["errors"], "the owner's calls all answered (%s)" % (owner["errors"] or "no error"))
            checks.expect(owner["calls"] > 0, "the owner made calls during the attack (%d)" % owner["calls"])
            if owner["calls"]:
                worst = owner["p99_ms"] if a.strict else owner["max_ms"]
                checks.expect(worst <= bound_ms, "the owner's %s call took %.1f ms (bound %d ms)"
                              % ("p99" if a.strict else "slowest", worst, bound_ms))
            print("    figures: %s" % json.dumps(dict(owner=owner, **figures)), flush=True)
            checks.expect(d.proc.poll() is None, "tetherd is still running")
        except Exception as e:  # noqa: BLE001 - a scenario that cannot run fails
            checks.expect(False, "the scenario ran: %r" % e)
        finally:
            if d is not None:
                d.stop()
            if checks.failures and d is not None:
                print("    tetherd's log (last 20 lines):\n      " + "\n      ".join(d.log_text().splitlines()[-20:]))
            shutil.rmtree(directory, ignore_errors=True)
        if checks.failures:
            failed += 1
        else:
            passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
