#!/usr/bin/env bash
# generate-man.sh — man/tetherd.8 and man/tetherctl.1 from the argument
# parsers, by swift-argument-parser's generate-manual tool (what its
# generate-manual plugin runs), then made lint-clean by tidy-mdoc.py.
# The pages are committed: `make install` and `make test` need no
# generator, and the output does not change from build to build (the date
# is that of the last commit touching the parsers, not today's).
# Run it after changing tetherd's or tetherctl's options; `make
# check-install` fails while a page misses an option the binary has.
# (man/tether.3, the C API's overview, is written by hand.)
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}

"$SWIFT" build --product generate-manual
"$SWIFT" build --product tetherd
"$SWIFT" build --product tetherctl
bin=$("$SWIFT" build --show-bin-path)
date=$(git log -1 --format=%cs -- Sources/tetherd Sources/tetherctl 2>/dev/null || true)
date=${date:-$(date -u +%F)}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/generate-manual" "$bin/tetherd" --section 8 --date "$date" -o "$tmp"
"$bin/generate-manual" "$bin/tetherctl" --section 1 --date "$date" -o "$tmp"
mkdir -p man
python3 scripts/tidy-mdoc.py < "$tmp/tetherd.8" > man/tetherd.8
python3 scripts/tidy-mdoc.py < "$tmp/tetherctl.1" > man/tetherctl.1
echo "generate-man.sh: man/tetherd.8 and man/tetherctl.1 written (date $date)"
