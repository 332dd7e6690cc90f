#!/usr/bin/env bash
# check-docs.sh PREFIX — what `make install` put in PREFIX for people and
# for systemd, checked (`make check-install` runs it on its temporary
# prefix, so it runs in `make test`):
#   - the man pages tetherd(8), tetherctl(1), tether(3) are there, and
#     mandoc -T lint, groff -ww and man -l render each without a warning;
#   - tetherd(8) and tetherctl(1) name every option their binary has
#     (--experimental-dump-help): a page left behind by a new option fails
#     here (regenerate with scripts/generate-man.sh);
#   - bash, zsh and fish completions of both commands are there (the bash
#     ones parse, and complete the subcommands);
#   - systemd-analyze verify passes on the installed system and user units,
#     with the installed pages on MANPATH, so Documentation=man:tetherd(8)
#     resolves. Where systemd-analyze cannot run (not installed), that part
#     is skipped with the reason; under CI=true such a skip fails unless
#     check-install.systemd-analyze is on Tests/allowed-skips.txt.
# Exit 0 when all holds; 1 with one line per failure.
set -uo pipefail
prefix=${1:?usage: check-docs.sh PREFIX}
root=$(cd "$(dirname "$0")/../.." && pwd)
failures=0
fail() { echo "check-docs: $*"; failures=$((failures + 1)); }

# The pages.
for page in man8/tetherd.8 man1/tetherctl.1 man3/tether.3; do
  file="$prefix/share/man/$page"
  [ -s "$file" ] || { fail "$file is not installed"; continue; }
  out=$(mandoc -T lint -W warning "$file" 2>&1) || true
  [ -z "$out" ] || fail "mandoc -T lint warns about $page: $out"
  out=$(groff -mandoc -ww -z "$file" 2>&1) || true
  [ -z "$out" ] || fail "groff -ww warns about $page: $out"
  err=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$file" 2>&1 >/dev/null) || fail "man -l $page failed"
  [ -z "$err" ] || fail "man -l $page printed: $err"
  [ "$(man -l "$file" 2>/dev/null | wc -l)" -gt 20 ] || fail "man -l $page renders (nearly) nothing"
done

# Every option of the binaries in their pages.
for pair in tetherd:man8/tetherd.8 tetherctl:man1/tetherctl.1; do
  tool=${pair%%:*} page="$prefix/share/man/${pair#*:}"
  [ -s "$page" ] || continue
  missing=$("$prefix/bin/$tool" --experimental-dump-help | python3 -c '
import json, re, sys
page = open(sys.argv[1]).read()
def named(option):
    return re.search(r"Fl -" + re.escape(option) + r"(?![-\w])", page)
def walk(command):
    for arg in command.get("arguments", []):
        for name in arg.get("names", []):
            if name.get("kind") == "long" and name["name"] not in ("help", "version") \
               and not named(name["name"]):
                yield "--" + name["name"]
    for sub in command.get("subcommands", []):
        yield from walk(sub)
print(" ".join(sorted(set(walk(json.load(sys.stdin)["command"])))))' "$page")
  [ -z "$missing" ] || fail "$page lacks $missing (run scripts/generate-man.sh and commit man/)"
done

# The completions.
for tool in tetherd tetherctl; do
  bash_file="$prefix/share/bash-completion/completions/$tool"
  for file in "$bash_file" "$prefix/share/zsh/site-functions/_$tool" \
              "$prefix/share/fish/vendor_completions.d/$tool.fish"; do
    [ -s "$file" ] || fail "$file is not installed"
  done
  [ -s "$bash_file" ] && { bash -n "$bash_file" 2>/dev/null || fail "$bash_file does not parse"; }
done
grep -q "watch" "$prefix/share/bash-completion/completions/tetherctl" 2>/dev/null \
  || fail "the bash completion of tetherctl does not offer its subcommands"

# The units, as systemd reads them.
if ! command -v systemd-analyze >/dev/null 2>&1; then
  reason="systemd-analyze is not installed"
  if [ "${CI:-}" = true ] && ! grep -qE "^check-install\.systemd-analyze[[:space:]]" "$root/Tests/allowed-skips.txt"; then
    fail "skipped under CI=true, and not on Tests/allowed-skips.txt: systemd-analyze verify ($reason)"
  else
    echo "check-docs: SKIP systemd-analyze verify ($reason)"
  fi
else
  # The user manager's specifiers (%t) need a runtime directory, which a
  # shell without a login session (CI, a container) does not have.
  runtime_dir=$(mktemp -d "${TMPDIR:-/tmp}/tether-check-docs.XXXXXX")
  trap 'rm -rf "$runtime_dir"' EXIT
  for kind in system user; do
    dir="$prefix/lib/systemd/$kind"
    out=$(XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$runtime_dir} MANPATH="$prefix/share/man" \
            systemd-analyze $([ "$kind" = user ] && echo --user) verify \
            "$dir/tetherd.socket" "$dir/tetherd.service" 2>&1) \
      || fail "systemd-analyze verify on the installed $kind units: $out"
    [ -z "$out" ] || fail "systemd-analyze verify on the installed $kind units printed: $out"
  done
fi

[ "$failures" -eq 0 ] || exit 1
echo "check-docs: ok (pages lint-clean and complete, completions for bash, zsh and fish, units verified)"
