#!/usr/bin/env bash
# daemon-tests.sh [TETHERD_ETCD] — the daemon tests (swift test's
# DaemonTests: every test that starts a real tetherd, the PyPI varlink
# client's included) against a tetherd on a 3-member etcd cluster this
# starts on loopback, instead of the SQLite store. DaemonFixture reads
# TETHER_TEST_ETCD: each new store is a freshly emptied /tether/ keyspace
# (a new epoch), a restart on the same data directory keeps it, and the
# options only SQLite takes are left out.
#
# The tests that do not apply to etcd are skipped by name, each with its
# reason in Tests/etcd/daemon-test-differences.txt; the run prints them.
# Exit status: swift test's. Ports: TETHER_ETCD_PORTS (default 24379
# 24479 24579, apart from etcd_test.py's and the benchmark's).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tetherd=${1:-$root/Backends/Etcd/.build/debug/tetherd-etcd}
[ -x "$tetherd" ] || { echo "daemon-tests.sh: $tetherd is not built (make etcd-test builds it)" >&2; exit 1; }
export TETHER_ETCD_PORTS=${TETHER_ETCD_PORTS:-24379 24479 24579}
cluster=$(mktemp -d /tmp/tether-etcd-daemon-tests.XXXXXX)
trap '"$root/scripts/etcd-cluster.sh" down "$cluster" >/dev/null 2>&1; rm -rf "$cluster"' EXIT
endpoints=$("$root/scripts/etcd-cluster.sh" up "$cluster" | tail -n 1) || { echo "daemon-tests.sh: the etcd cluster did not start" >&2; exit 1; }

skips=()
while read -r name reason; do
  case "$name" in ''|'#'*) continue ;; esac
  echo "not run on etcd: $name ($reason)"
  if [[ $name == *.* ]]; then
    skips+=(--skip "DaemonTests\\.${name%%.*}/${name#*.}\$")
  else
    skips+=(--skip "DaemonTests\\.$name/")
  fi
done < "$here/daemon-test-differences.txt"

cd "$root" || exit 1
TETHER_TEST_ETCD=$endpoints TETHER_TEST_TETHERD_ETCD=$tetherd \
  swift test --filter DaemonTests "${skips[@]}"
