#!/usr/bin/env bash
# Install the JavaScript dependencies of test fixtures from their committed lockfiles.
# Idempotent: skips a fixture whose node_modules is newer than its lockfile.
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
