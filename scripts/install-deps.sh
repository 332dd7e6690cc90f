#!/usr/bin/env bash
# install-deps.sh — makes sure this machine can build and test Tether.
#
#  - libuv's headers and pkg-config file (Debian/Ubuntu: libuv1-dev) and
#    pkg-config itself: installed with apt-get when missing (as root, or
#    through sudo when that exists);
#  - Graphviz (dot), which the graph pictures' tests read them back with,
#    and Prometheus, which the metrics test scrapes tetherd with;
#  - a Swift toolchain (swift on PATH): only checked; it is not an apt
#    package, so this says where to get it;
#  - mandoc, groff-base and man-db, with which `make check-install` checks
#    the installed man pages: installed with apt-get when missing;
#  - the Python `varlink` package (PyPI), the outside client the protocol
#    tests check Tether's Varlink interface with: installed with pip when
#    python3 lacks it (those tests say they were skipped when it cannot be).
#
# Idempotent and quiet when everything is there. Exit status 1, with a
# message saying what to do, when something is missing and cannot be
# installed here.
set -euo pipefail

say() { echo "install-deps: $*"; }
die() { echo "install-deps: error: $*" >&2; exit 1; }

need_apt=()
if ! command -v pkg-config >/dev/null 2>&1; then
  need_apt+=(pkg-config)
  need_apt+=(libuv1-dev) # cannot tell whether libuv is there without pkg-config
elif ! pkg-config --exists libuv; then
  need_apt+=(libuv1-dev)
fi
# tetherd's store (the library itself does not link it).
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists sqlite3; then
  need_apt+=(libsqlite3-dev)
fi
# The man pages' check (Tests/install/check-docs.sh): mandoc's lint, groff's
# warnings and man -l. (systemd-analyze comes with systemd, not installed
# here: the check says when it is missing.)
command -v mandoc >/dev/null 2>&1 || need_apt+=(mandoc)
command -v groff >/dev/null 2>&1 || need_apt+=(groff-base)
command -v man >/dev/null 2>&1 || need_apt+=(man-db)

# Graphviz: the graph pictures' test reads them back with `dot -Tjson`
# (Tests/graph, Tests/CTests/graph_dot.c).
if ! command -v dot >/dev/null 2>&1; then
  need_apt+=(graphviz)
fi
# Prometheus: the metrics test scrapes a test tetherd with it (Tests/metrics).
if ! command -v prometheus >/dev/null 2>&1; then
  need_apt+=(prometheus)
fi

# etcd: the etcd backend's tests start a 3-member cluster of Debian's
# etcd on loopback (scripts/etcd-cluster.sh); the protocol code is
# generated already (Backends/Etcd/scripts/generate.sh), so no protoc.
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need_apt+=(etcd-client)
if [ "${#need_apt[@]}" -gt 0 ]; then
  say "missing: ${need_apt[*]}"
  if ! command -v apt-get >/dev/null 2>&1; then
    die "apt-get is not available. Install libuv (>= 1.x, with its headers and" \
        "libuv.pc) and pkg-config with your system's package manager, e.g." \
        "'dnf install libuv-devel pkgconf' or 'brew install libuv pkg-config'."
  fi
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      die "not running as root and sudo is not installed. Run as root:" \
          "apt-get update && apt-get install -y ${need_apt[*]}"
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  say "running: ${sudo[*]:+${sudo[*]} }apt-get update && apt-get install -y ${need_apt[*]}"
  "${sudo[@]}" apt-get update -qq ||
    die "apt-get update failed (network? permissions?)"
  "${sudo[@]}" apt-get install -y -qq "${need_apt[@]}" >/dev/null ||
    die "apt-get install -y ${need_apt[*]} failed"
  pkg-config --exists libuv ||
    die "libuv1-dev was installed but 'pkg-config --exists libuv' still fails"
  pkg-config --exists sqlite3 ||
    die "libsqlite3-dev was installed but 'pkg-config --exists sqlite3' still fails"
  command -v mandoc >/dev/null 2>&1 && command -v groff >/dev/null 2>&1 && command -v man >/dev/null 2>&1 ||
    die "mandoc, groff-base or man-db was installed but mandoc, groff or man is still not on PATH"
  say "installed ${need_apt[*]}"
fi

if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import varlink' >/dev/null 2>&1; then
  say "missing: the Python varlink package; running: python3 -m pip install varlink"
  python3 -m pip install -q varlink >/dev/null 2>&1 ||
    say "warning: pip could not install varlink; the protocol's Python tests will be skipped"
fi

# prometheus_client: the metrics test reads tetherd's exposition with its
# parser (Tests/metrics/prometheus_test.py).
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import prometheus_client' >/dev/null 2>&1; then
  say "missing: the Python prometheus_client package; running: python3 -m pip install prometheus_client"
  python3 -m pip install -q prometheus_client >/dev/null 2>&1 ||
    say "warning: pip could not install prometheus_client; the metrics test will be skipped"
fi

# numpy: the hostile-peer test (Tests/hostile) computes 40,000 member
# names that collided under the old member hash, 10 million tries, in it.
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import numpy' >/dev/null 2>&1; then
  say "missing: the Python numpy package; running: python3 -m pip install numpy"
  python3 -m pip install -q numpy >/dev/null 2>&1 ||
    say "warning: pip could not install numpy; the hostile-peer test's colliding-names scenarios will fail"
fi

if ! command -v swift >/dev/null 2>&1; then
  if [ -x /opt/swift/usr/bin/swift ]; then
    die "swift is installed in /opt/swift/usr/bin but not on PATH. Run:" \
        "export PATH=/opt/swift/usr/bin:\$PATH"
  fi
  die "the Swift toolchain (swift 6.0 or later) is not on PATH. Get it from" \
      "https://www.swift.org/install/linux/ (or with swiftly), then make sure" \
      "'swift --version' works in this shell."
fi

# The README promises Swift 6.0 or later (Package.swift's tools version).
swift_version=$(swift --version 2>/dev/null | sed -n 's/.*Swift version \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1 \2/p' | head -n 1)
if [ -z "$swift_version" ]; then
  die "could not read the Swift version from 'swift --version'; Tether needs Swift 6.0 or later"
fi
set -- $swift_version
if [ "$1" -lt 6 ]; then
  die "Swift $1.$2 is too old: Tether needs Swift 6.0 or later (https://www.swift.org/install/linux/)"
fi

say "ok: libuv $(pkg-config --modversion libuv), sqlite $(pkg-config --modversion sqlite3), $(swift --version 2>/dev/null | head -n 1)"
