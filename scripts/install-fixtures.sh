#!/usr/bin/env bash
# Install what the test fixtures need: the JavaScript dependencies of the fixture projects from their
# committed lockfiles, the Go / Rust toolchains (Debian's golang-go, cargo) and bubblewrap where missing.
# Idempotent: skips a fixture whose node_modules is newer than its lockfile, and a present toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob
for lock in tests/fixtures/*/package-lock.json tests/fixtures/*/*/package-lock.json; do
  dir=$(dirname "$lock")
  if [ -d "$dir/node_modules" ] && [ "$dir/node_modules" -nt "$lock" ]; then continue; fi
  echo "fixtures: npm ci in $dir"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  touch "$dir/node_modules"
done

# go test / cargo test fixtures (tests/testrun) and the console's Chromium: Debian's packages where missing and apt is usable
# (CI runs as root). Tests of a framework whose toolchain is missing fail with a clear message.
# bubblewrap: the agents' test runs are confined in bwrap (graphlemon/testrun/confine.py, issue 20).
missing=()
command -v go >/dev/null 2>&1 || missing+=(golang-go)
command -v cargo >/dev/null 2>&1 || missing+=(cargo)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# the console's browser tests and benchmark drive Debian's chromium with Playwright (never a downloaded browser)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# chattr: the log-retention acceptance test makes a log really undeletable (chattr +i) as root
command -v chattr >/dev/null 2>&1 || missing+=(e2fsprogs)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "fixtures: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "fixtures: missing ${missing[*]} and apt-get is not usable: install them to run those tests" >&2
  fi
fi

# The real-suite corpus (tests/testrun/test_real_suites.py): pinned packages from the npm registry and PyPI,
# unpacked once into tests/testrun/corpus/.cache/NAME-VERSION (a stamp file marks a finished install).
corpus=tests/testrun/corpus
cache=$corpus/.cache
mkdir -p "$cache"
python3 - "$corpus/corpus.json" <<'PY' | while read -r registry name version; do
import json, sys
for p in json.load(open(sys.argv[1]))["packages"]:
    print(p["registry"], p["name"], p["version"])
PY
  dest="$cache/$name-$version"
  if [ -f "$dest/.graphlemon-corpus-ok" ]; then continue; fi
  echo "fixtures: corpus $registry $name@$version"
  rm -rf "$dest" "$cache/tmp" && mkdir -p "$dest" "$cache/tmp"
  case "$registry" in
    npm)
      (cd "$cache/tmp" && npm pack "$name@$version" --silent >/dev/null)
      tar xzf "$cache"/tmp/*.tgz -C "$dest" --strip-components=1
      # the package's own devDependencies (its test runner); no install scripts, no audit
      (cd "$dest" && npm install --no-audit --no-fund --ignore-scripts --no-package-lock --loglevel=error)
      ;;
    pypi)
      .venv/bin/python -m pip download -q --no-deps --no-binary :all: -d "$cache/tmp" "$name==$version" 2>/dev/null
      tar xzf "$cache"/tmp/*.tar.gz -C "$dest" --strip-components=1
      ;;
  esac
  rm -rf "$cache/tmp"
  touch "$dest/.graphlemon-corpus-ok"
done
