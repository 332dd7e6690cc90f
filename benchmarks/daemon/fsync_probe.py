#!/usr/bin/env python3
"""fsync_probe.py - how much slower an fdatasync is after a write past the
end of a file than after one inside it, on this disk (for
docs/daemon-performance.md, "One client: a WAL that only grew"). Not part
of `make bench`.

    python3 benchmarks/daemon/fsync_probe.py [DIR] [ROUNDS]

Each round writes 1,500 frames of 4,120 bytes (a WAL frame of a 4 KiB
page), each followed by fdatasync, once appending to an empty file and
once overwriting a file written and synced beforehand, and prints both
rates. An fdatasync after an append must also commit the file's new size.
The disk's speed drifts over minutes: compare the two columns of a round.
"""
import os
import sys
import time


def rate(path, extend, n=1500, frame=4120):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if not extend:
            os.pwrite(fd, b"\1" * (frame * n + 8192), 0)
            os.fsync(fd)
        buf = b"x" * frame
        t = time.perf_counter()
        for i in range(n):
            os.pwrite(fd, buf, i * frame)
            os.fdatasync(fd)
        return n / (time.perf_counter() - t)
    finally:
        os.close(fd)
        os.unlink(path)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    path = os.path.join(directory, "fsync_probe.%d" % os.getpid())
    for _ in range(rounds):
        print("append %6.0f fdatasync/s   overwrite %6.0f fdatasync/s" % (rate(path, True), rate(path, False)))


if __name__ == "__main__":
    main()
