#!/usr/bin/env bash
# Install what the test fixtures need: the JavaScript dependencies of the fixture projects from their
# committed lockfiles, and the Go / Rust toolchains (Debian's golang-go, cargo) where missing.
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
missing=()
command -v go >/dev/null 2>&1 || missing+=(golang-go)
command -v cargo >/dev/null 2>&1 || missing+=(cargo)
# the console's browser tests and benchmark drive Debian's chromium with Playwright (never a downloaded browser)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "fixtures: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "fixtures: missing ${missing[*]} and apt-get is not usable: install them to run those tests" >&2
  fi
fi
