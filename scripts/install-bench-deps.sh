#!/usr/bin/env bash
# install-bench-deps.sh — what `make bench` needs beyond `make deps`: the
# anchors the suite runs beside Tether, and the chart.
#
#  - GLib/GObject headers (libglib2.0-dev), Qt 6 Core (qt6-base-dev),
#    pkg-config, a C++ compiler (g++): installed with apt-get when missing
#    (as root, or through sudo when that exists);
#  - matplotlib for docs/benchmarks.png: python3-matplotlib from apt, or pip
#    when apt cannot (the report is still written without it, with no chart);
#  - the Swift toolchain (for Swift Observation): checked by `make deps`;
#  - Redis (redis-server, and redis-tools for redis-cli and
#    redis-benchmark): the anchor of the daemon section (tetherd beside
#    Redis), installed with apt-get when missing;
#  - valgrind: the section "Instruction counts (callgrind)" counts
#    instructions under callgrind (benchmarks/icount/), installed with apt-get
#    when missing (without it that section says it was skipped).
#
# Idempotent, and one line when everything is there. When something cannot
# be installed it says so and carries on: the suite runs whatever it can
# build and the report marks a missing anchor "not built". Exits 1 only when
# python3 (needed for the report) is missing.
set -uo pipefail

say() { echo "install-bench-deps: $*"; }

need_apt=()
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists gobject-2.0; then
  need_apt+=(libglib2.0-dev)
fi
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists Qt6Core; then
  need_apt+=(qt6-base-dev)
fi
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
if ! command -v redis-benchmark >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  need_apt+=(redis-tools)
fi
if ! python3 -c 'import matplotlib' >/dev/null 2>&1; then
  need_apt+=(python3-matplotlib)
fi
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)

if [ "${#need_apt[@]}" -gt 0 ]; then
  say "missing: ${need_apt[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else sudo=(none); fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    say "apt-get is not available: install ${need_apt[*]} (or your system's names for" \
        "GLib/GObject development files, Qt 6 Core development files, matplotlib and Redis)" \
        "with your package manager. The suite runs whatever it can build."
  elif [ "${sudo[*]}" = none ]; then
    say "not root and no sudo: run as root: apt-get install -y ${need_apt[*]}." \
        "The suite runs whatever it can build."
  else
    export DEBIAN_FRONTEND=noninteractive
    say "running: ${sudo[*]:+${sudo[*]} }apt-get install -y ${need_apt[*]}"
    if ! "${sudo[@]}" apt-get install -y -qq "${need_apt[@]}" >/dev/null 2>&1; then
      say "apt-get install failed; refreshing the package lists and retrying"
      "${sudo[@]}" apt-get update -qq >/dev/null 2>&1 ||
        say "apt-get update failed (network? permissions?)"
      "${sudo[@]}" apt-get install -y -qq "${need_apt[@]}" >/dev/null 2>&1 ||
        say "apt-get install -y ${need_apt[*]} failed; the suite runs whatever it can build"
    fi
  fi
fi

# matplotlib from PyPI when apt could not provide it.
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import matplotlib' >/dev/null 2>&1; then
  say "matplotlib is still missing; trying pip"
  python3 -m pip install --quiet matplotlib >/dev/null 2>&1 ||
    python3 -m pip install --quiet --break-system-packages matplotlib >/dev/null 2>&1 ||
    say "could not install matplotlib: the report is written without docs/benchmarks.png"
fi

have() { "$@" >/dev/null 2>&1 && echo yes || echo no; }
say "gobject: $(have pkg-config --exists gobject-2.0), qt6: $(have pkg-config --exists Qt6Core)," \
    "g++: $(have command -v g++), matplotlib: $(have python3 -c 'import matplotlib')," \
    "swift: $(have command -v swift), redis: $(have command -v redis-server)," \
    "redis-benchmark: $(have command -v redis-benchmark), valgrind: $(have command -v valgrind)"
command -v python3 >/dev/null 2>&1 || { say "error: python3 is required for the report"; exit 1; }
exit 0
