"""model.py — the daemon's data model, rebuilt from a history of commits.

A commit is {"rev": R, "tag": T, "origin": O, "changes": [change, ...]} as a
Watch change reply gives it; a change is {"name", "op": "set"|"remove",
"path": JSON Pointer, "value"?}. Applying the changes of each revision in
order to the states reproduces the daemon's states (docs/protocol.md,
"Changes are writes"); `History` keeps every version of every state so a
read at any revision can be checked.
"""

import bisect
import copy

ABSENT = object()  # a state that does not exist


class ModelError(Exception):
    pass


def parse_pointer(path):
    """RFC 6901 tokens of `path` ("" is the whole value)."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise ModelError("not a JSON Pointer: %r" % path)
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(token, length, appending):
    if appending and token == "-":
        return length
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise ModelError("%r is not an array index" % token)
    i = int(token)
    if i > length or (i == length and not appending):
        raise ModelError("index %d past the end (%d)" % (i, length))
    return i


def apply_change(states, change):
    """Applies one change to `states` (name -> value), as JSON Patch does:
    set adds or replaces a member, replaces an array element or appends at
    the length or "-"; remove deletes; the parent must exist."""
    name, op = change["name"], change["op"]
    tokens = parse_pointer(change.get("path", ""))
    if not tokens:
        if op == "set":
            states[name] = copy.deepcopy(change.get("value"))
        elif name in states:
            del states[name]
        else:
            raise ModelError("remove of %r, which does not exist" % name)
        return
    if name not in states:
        raise ModelError("a change at %s of %r, which does not exist" % (change.get("path"), name))
    value = copy.deepcopy(states[name])
    parent = value
    for token in tokens[:-1]:
        if isinstance(parent, dict):
            if token not in parent:
                raise ModelError("no member %r on the way to %s" % (token, change.get("path")))
            parent = parent[token]
        elif isinstance(parent, list):
            parent = parent[_index(token, len(parent), False)]
        else:
            raise ModelError("a scalar on the way to %s" % change.get("path"))
    last = tokens[-1]
    if isinstance(parent, dict):
        if op == "set":
            parent[last] = copy.deepcopy(change.get("value"))
        elif last in parent:
            del parent[last]
        else:
            raise ModelError("remove of the missing member %s" % change.get("path"))
    elif isinstance(parent, list):
        if op == "set":
            i = _index(last, len(parent), True)
            if i == len(parent):
                parent.append(copy.deepcopy(change.get("value")))
            else:
                parent[i] = copy.deepcopy(change.get("value"))
        else:
            del parent[_index(last, len(parent), False)]
    else:
        raise ModelError("%s steps into a scalar" % change.get("path"))
    states[name] = value


def same_change(a, b):
    """Whether two changes are the same write (a remove has no value)."""
    if (a["name"], a["op"], a.get("path", "")) != (b["name"], b["op"], b.get("path", "")):
        return False
    return a["op"] == "remove" or a.get("value") == b.get("value")


def same_changes(a, b):
    return len(a) == len(b) and all(same_change(x, y) for x, y in zip(a, b))


class History:
    """The commits of a run in revision order, and every state's versions."""

    def __init__(self, commits):
        self.commits = sorted(commits, key=lambda c: c["rev"])
        self.by_rev = {c["rev"]: c for c in self.commits}
        self.revs = [c["rev"] for c in self.commits]
        self.last = self.revs[-1] if self.revs else 0
        # name -> ([revision, ...], [value or ABSENT, ...]): the value from
        # that revision on.
        self.versions = {}
        self.errors = []
        states = {}
        for c in self.commits:
            touched = []
            for change in c["changes"]:
                try:
                    apply_change(states, change)
                except ModelError as e:
                    self.errors.append("revision %d: %s" % (c["rev"], e))
                if change["name"] not in touched:
                    touched.append(change["name"])
            for name in touched:
                revs, values = self.versions.setdefault(name, ([], []))
                revs.append(c["rev"])
                values.append(copy.deepcopy(states[name]) if name in states else ABSENT)
        self.final = states

    def value_at(self, name, revision):
        """(value or ABSENT, modified) of `name` after revision `revision`;
        modified is 0 when it does not exist."""
        revs, values = self.versions.get(name, ([], []))
        i = bisect.bisect_right(revs, revision)
        if i == 0 or values[i - 1] is ABSENT:
            return ABSENT, 0
        return values[i - 1], revs[i - 1]

    def states_at(self, revision, covers):
        """name -> (value, modified) of every existing state `covers` accepts."""
        result = {}
        for name in self.versions:
            if covers(name):
                value, modified = self.value_at(name, revision)
                if value is not ABSENT:
                    result[name] = (value, modified)
        return result

    def touching(self, covers, after, upto):
        """The revisions in (after, upto] whose commit changed a state
        `covers` accepts, in order."""
        i = bisect.bisect_right(self.revs, after)
        result = []
        while i < len(self.revs) and self.revs[i] <= upto:
            c = self.commits[i]
            if any(covers(ch["name"]) for ch in c["changes"]):
                result.append(c["rev"])
            i += 1
        return result


def net_changes(history, revision, ops):
    """The changes a commit of `ops` at `revision` must carry: the ops on
    the states whose value they changed, in order. A state a transaction
    leaves as it found it (appended to and then shortened again, created
    and then removed) changed nothing, so its ops are left out, as a write
    that changes nothing commits nothing. Raises ModelError when the ops
    do not apply to the states before `revision`. (A state removed and
    set again to an equal value is a change to the daemon, a new state;
    the writers never do that: every value they write is unique.)"""
    states, before = {}, {}
    for op in ops:
        if op["name"] not in before:
            value, _ = history.value_at(op["name"], revision - 1)
            before[op["name"]] = value
            if value is not ABSENT:
                states[op["name"]] = copy.deepcopy(value)
    for op in ops:
        apply_change(states, op)
    changed = {name for name, value in before.items() if states.get(name, ABSENT) != value}
    return [op for op in ops if op["name"] in changed]
