#!/usr/bin/env bash
# check-skips.sh LOG — the tests `swift test` skipped (its output in LOG),
# each with whether it may: under CI=true a skipped test that is not on
# Tests/allowed-skips.txt fails this check (exit 1), so a test that stopped
# running on CI cannot pass as a skip. Without CI=true it only lists them.
# The Makefile's `test` target runs it on the output of `swift test` and
# hands its status to Tests/CTests/run.sh (EXTRA_RESULTS swift-skips=…).
#
# It reads XCTest's "Test Case 'Suite.test' skipped" lines and
# swift-testing's "Test name() skipped" / "Suite Name skipped" lines.
set -u
log=${1:?usage: check-skips.sh LOG}
list="$(dirname "$0")/allowed-skips.txt"
[ -f "$log" ] || { echo "check-skips.sh: $log not found"; exit 1; }

names=$( {
  grep -aoE "Test Case '[^']+' skipped" "$log" | sed -E "s/^Test Case '(-\\[)?([^] ']+)[ .]([^]']+)\\]?' skipped$/\\2.\\3/"
  grep -aoE "(Test|Suite) [^ ]+ skipped" "$log" | sed -E 's/^(Test|Suite) ([^ ]+) skipped$/\2/'
} | sort -u)

bad=0
count=0
for name in $names; do
  count=$((count + 1))
  if grep -qE "^${name//./\\.}([[:space:]]|\$)" "$list" 2>/dev/null; then
    echo "skipped (allowed): $name"
  elif [ "${CI:-}" = true ]; then
    echo "FAIL skipped under CI=true, and not on Tests/allowed-skips.txt: $name"
    bad=1
  else
    echo "skipped: $name (not on Tests/allowed-skips.txt: a failure under CI=true)"
  fi
done
echo "check-skips.sh: $count skipped"
exit $bad
