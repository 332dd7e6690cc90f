#!/usr/bin/env python3
"""strip_proto.py IN OUT — etcd's .proto files as protoc can read them
without etcd's Go build tree: drops gogoproto and google.api imports and
options (they only steer Go code and the JSON gateway), and every service
but KV, Watch and Maintenance (the ones tetherd's ledger calls)."""
import re
import sys

KEEP_SERVICES = {"KV", "Watch", "Maintenance"}


def block_end(text, start):
    """Index just past the brace block that opens at or after `start`."""
    depth = 0
    i = text.index("{", start)
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise SystemExit("unbalanced braces")


def strip(text):
    text = re.sub(r'^import "(gogoproto|google/api)/[^"]*";\n', "", text, flags=re.M)
    text = re.sub(r"^option \(gogoproto\.[^;]*;\n", "", text, flags=re.M)
    # Field options: [(gogoproto.x) = y, ...] (only gogoproto's occur).
    text = re.sub(r"\s*\[\(gogoproto\.[^\]]*\]", "", text)
    # option (google.api.http) = { ... };
    while True:
        m = re.search(r"option \(google\.api\.http\) = \{", text)
        if not m:
            break
        end = block_end(text, m.start())
        if text[end] == ";":
            end += 1
        text = text[: m.start()] + text[end:]
    # rpc X(...) returns (...) {} with nothing left inside: keep as ';'.
    text = re.sub(r"\)\s*\{\s*\}", ");", text)
    # Services not kept.
    for m in list(re.finditer(r"^service (\w+) \{", text, flags=re.M))[::-1]:
        if m.group(1) not in KEEP_SERVICES:
            text = text[: m.start()] + text[block_end(text, m.start()):]
    # Imports are rewritten to the flat layout protoc is given.
    text = text.replace('import "etcd/mvcc/mvccpb/kv.proto";', 'import "kv.proto";')
    text = text.replace('import "etcd/auth/authpb/auth.proto";', 'import "auth.proto";')
    return text


if __name__ == "__main__":
    src, dst = sys.argv[1:3]
    with open(src) as f:
        out = strip(f.read())
    with open(dst, "w") as f:
        f.write(out)
