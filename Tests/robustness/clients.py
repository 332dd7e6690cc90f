"""clients.py — the client processes of a robustness run: writers and
watchers, each a process of its own speaking Varlink to tetherd through
PyPI's `varlink` package, each recording what it saw as JSON lines.

Writers (`writer`) do Get, Set (whole value and paths), Remove and
multi-state Transaction with compare-on-revision preconditions taken from
their own Gets; every write carries the tag "w<client>-<seq>" (unique in
the run) and the origin <client>. Each attempt is recorded with its outcome:

    ok       the daemon replied: revision and changed
    error    the daemon refused it (RevisionMismatch, NotFound, ...): it
             must not be in the history. io.tether.StorageFull (the disk
             refused the group of the call's turn, which was rolled back)
             is such a refusal: the write was not applied
             (docs/robustness.md, "Issue 30 §2")
    unknown  the connection was lost after the call may have been sent: it
             may or may not be in the history, but whole or not at all
    unsent   no connection (the daemon was down): never sent

Watchers (`watcher`) hold Watch(prefix=..., more=True) and record every
reply. When the connection is lost (the daemon was killed) or dropped on
purpose (now and then, to resume without a restart) they reconnect and
resume with from_revision = the last revision they saw (a change or a
progress reply) and that reply's epoch; after one drop in four they start
afresh instead (a new snapshot, at whatever revision the daemon is at).

A client retries a refused connection every few milliseconds while the
daemon is down: that is the only pause a client makes.
"""

import json
import random
import socket
import sys
import time

try:
    import varlink
except ImportError:
    sys.exit("robustness: the varlink package is missing: pip install varlink")

# A reply later than this is a hang: the call is recorded as unknown and
# the hang itself as a violation.
CALL_TIMEOUT = 20.0
RETRY_INTERVAL = 0.005
# The chance that a watcher which dropped its connection on purpose starts
# afresh (a snapshot) rather than resuming.
FRESH_AFTER_DROP = 0.25

LOST = (OSError, ConnectionError, EOFError, ValueError, StopIteration)


class Recorder:
    """One JSON object per line, written through at once (a process that
    dies keeps what it recorded)."""

    def __init__(self, path):
        self.file = open(path, "w", buffering=1, encoding="utf-8")

    def __call__(self, **record):
        self.file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def close(self):
        self.file.close()


class Connection:
    """A Varlink connection to io.tether on a socket of its own."""

    def __init__(self, client, socket_path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(CALL_TIMEOUT)
            self.sock.connect(socket_path)
            self.tether = client.open("io.tether", connection=self.sock)
        except BaseException:
            self.sock.close()
            raise

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def connect(client, socket_path, until):
    """A connection, retrying while the daemon is down; None after `until`."""
    while time.monotonic() < until:
        try:
            return Connection(client, socket_path)
        except varlink.VarlinkError:
            raise
        except LOST:
            time.sleep(RETRY_INTERVAL)
    return None


def names_of(count):
    half = count // 2
    return ["a.%d" % i for i in range(half)] + ["b.%d" % i for i in range(count - half)]


class Writer:
    def __init__(self, args):
        self.id = args.id
        self.rng = random.Random("%s/writer/%d" % (args.seed, args.id))
        self.record = Recorder(args.out)
        self.client = varlink.Client(address="unix:" + args.socket)
        self.socket = args.socket
        self.until = args.until
        self.names = names_of(args.names)
        self.seq = 0
        self.conn = None
        self.hangs = 0

    def lose(self, why):
        if isinstance(why, socket.timeout):
            self.hangs += 1
            self.record(k="hang", c=self.id, t=time.monotonic(), why=str(why))
        if self.conn:
            self.conn.close()
        self.conn = None

    def get(self, name):
        """A recorded Get; returns the state's modified (0: no state), or
        None when the connection was lost."""
        t0 = time.monotonic()
        try:
            r = self.conn.tether.Get(name=name)
        except varlink.VarlinkError as e:
            t1 = time.monotonic()
            if e.error() == "io.tether.NotFound":
                self.record(k="read", c=self.id, name=name, t0=t0, t1=t1, out="notfound")
                return 0
            self.record(k="read", c=self.id, name=name, t0=t0, t1=t1, out="error", err=e.error())
            return None
        except LOST as e:
            self.record(k="read", c=self.id, name=name, t0=t0, t1=time.monotonic(), out="unknown", why=repr(e))
            self.lose(e)
            return None
        t1 = time.monotonic()
        self.record(k="read", c=self.id, name=name, t0=t0, t1=t1, out="ok", rev=r["revision"],
                    mod=r["modified"], value=r.get("value"))
        return r["modified"]

    def unique(self):
        return self.id * 10_000_000 + self.seq

    def random_op(self, name):
        """One op on `name`: (op dict as a change, kind)."""
        x = self.rng.random()
        if x < 0.45:
            return {"name": name, "op": "set", "path": "", "value": {"w": self.id, "s": self.unique(), "l": []}}
        if x < 0.70:
            return {"name": name, "op": "set", "path": "/s", "value": self.unique()}
        if x < 0.85:
            return {"name": name, "op": "set", "path": "/l/-", "value": self.unique()}
        if x < 0.95:
            return {"name": name, "op": "remove", "path": "/l/0"}
        return {"name": name, "op": "remove", "path": ""}

    def write(self, kind, ops, pre):
        tag = "w%d-%d" % (self.id, self.seq)
        entry = dict(k="write", c=self.id, seq=self.seq, tag=tag, kind=kind, ops=ops, pre=pre)
        if self.conn is None:
            self.record(out="unsent", t0=time.monotonic(), t1=time.monotonic(), **entry)
            return
        t0 = time.monotonic()
        try:
            if kind == "transaction":
                wire = []
                for op in ops:
                    w = {"op": op["op"], "name": op["name"], "path": op["path"]}
                    if "value" in op:
                        w["value"] = op["value"]
                    wire.append(w)
                r = self.conn.tether.Transaction(ops=wire, preconditions=pre, tag=tag, origin=self.id)
            elif ops[0]["op"] == "set":
                op = ops[0]
                r = self.conn.tether.Set(name=op["name"], path=op["path"], value=op["value"], tag=tag, origin=self.id)
            else:
                op = ops[0]
                r = self.conn.tether.Remove(name=op["name"], path=op["path"], tag=tag, origin=self.id)
        except varlink.VarlinkError as e:
            self.record(out="error", t0=t0, t1=time.monotonic(), err=e.error(), params=e.parameters(), **entry)
            return
        except LOST as e:
            self.record(out="unknown", t0=t0, t1=time.monotonic(), why=repr(e), **entry)
            self.lose(e)
            return
        self.record(out="ok", t0=t0, t1=time.monotonic(), rev=r["revision"], changed=r["changed"], **entry)

    def step(self):
        self.seq += 1
        x = self.rng.random()
        name = self.rng.choice(self.names)
        if x < 0.15:
            self.get(name)
        elif x < 0.55:
            op = self.random_op(name)
            self.write("set" if op["op"] == "set" else "remove", [op], [])
        else:
            count = self.rng.randint(2, 4)
            ops = [self.random_op(self.rng.choice(self.names)) for _ in range(count)]
            pre = []
            if self.rng.random() < 0.7:
                # Compare-and-set: read what the ops touch, then expect it
                # unchanged (0: must not exist).
                for n in sorted({op["name"] for op in ops}):
                    modified = self.get(n)
                    if modified is None:
                        return
                    pre.append({"name": n, "revision": modified})
            self.write("transaction", ops, pre)

    def run(self):
        self.record(k="start", c=self.id, t=time.monotonic())
        while time.monotonic() < self.until:
            if self.conn is None:
                try:
                    self.conn = connect(self.client, self.socket, self.until)
                except varlink.VarlinkError as e:
                    self.record(k="refused", c=self.id, err=e.error())
                    return 1
                if self.conn is None:
                    break
            self.step()
        if self.conn:
            self.conn.close()
        self.record(k="end", c=self.id, t=time.monotonic(), seq=self.seq)
        self.record.close()
        return 0


class Watcher:
    def __init__(self, args):
        self.id = args.id
        self.rng = random.Random("%s/watcher/%d" % (args.seed, args.id))
        self.record = Recorder(args.out)
        self.client = varlink.Client(address="unix:" + args.socket)
        self.socket = args.socket
        self.prefix = args.prefix
        self.drop = args.drop
        self.final_file = args.final
        self.deadline = args.deadline
        self.last = None   # the last revision seen (a change or a progress)
        self.epoch = None
        self.final = None

    def finished(self):
        """Whether the run is over and everything up to its last revision
        was seen (the supervisor writes that revision once writers stop)."""
        if self.final is None:
            try:
                with open(self.final_file, encoding="utf-8") as f:
                    self.final = int(f.read())
            except (OSError, ValueError):
                return False
        return self.last is not None and self.last >= self.final

    def run(self):
        self.record(k="start", c=self.id, prefix=self.prefix, t=time.monotonic())
        while not self.finished():
            if time.monotonic() > self.deadline:
                self.record(k="gave-up", last=self.last, final=self.final)
                return 2
            try:
                conn = connect(self.client, self.socket, self.deadline)
            except varlink.VarlinkError as e:
                self.record(k="error", err=e.error(), params=e.parameters())
                return 1
            if conn is None:
                continue
            parameters = {"prefix": self.prefix}
            if self.last is not None:
                parameters.update(from_revision=self.last, epoch=self.epoch)
            self.record(k="watch", t=time.monotonic(), **{"from": self.last, "epoch": self.epoch})
            try:
                for reply in conn.tether.Watch(_more=True, **parameters):
                    event = reply.get("event")
                    entry = dict(k="event", e=event, rev=reply.get("revision"), epoch=reply.get("epoch"),
                                 t=time.monotonic())
                    if event == "change":
                        entry.update(changes=reply.get("changes"), tag=reply.get("tag"), origin=reply.get("origin"))
                    elif event == "snapshot":
                        entry.update(state=reply.get("state"), resync=bool(reply.get("resync")))
                    elif reply.get("resync"):
                        entry.update(resync=True)  # the progress that ends a resync
                    self.record(**entry)
                    if event in ("change", "progress"):
                        self.last = reply["revision"]
                        self.epoch = reply.get("epoch")
                    if event == "progress" and self.finished():
                        break
                    if event == "change" and self.rng.random() < self.drop:
                        # Now and then, start again from now instead of
                        # resuming: a snapshot at a random revision.
                        afresh = self.rng.random() < FRESH_AFTER_DROP
                        self.record(k="drop", t=time.monotonic(), afresh=afresh)
                        if afresh:
                            self.last = self.epoch = None
                        break
            except varlink.VarlinkError as e:
                self.record(k="error", err=e.error(), params=e.parameters())
            except LOST as e:
                if isinstance(e, socket.timeout):
                    self.record(k="hang", t=time.monotonic(), why=str(e))
                self.record(k="lost", t=time.monotonic(), why=repr(e))
            finally:
                conn.close()
        self.record(k="end", t=time.monotonic(), last=self.last)
        self.record.close()
        return 0
