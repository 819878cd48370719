#!/usr/bin/env bash
# Install what the test fixtures need: the JavaScript dependencies of the fixture projects from their
# committed lockfiles, the Go / Rust toolchains (Debian's golang-go, cargo), bubblewrap and haproxy where missing.
# Idempotent: skips a fixture whose node_modules is newer than its lockfile, and a present toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
shopt -s nullglob

# A fetch from a registry that fails (a dropped connection, a registry's 5xx) is tried twice more, 10 s and 30 s
# later: a fresh machine fetches about forty packages, and one flaky reply must not fail the whole run. npm's own
# per-request retries are raised too (npm_config_fetch_retries).
export npm_config_fetch_retries=4
retry() {
  local delay
  for delay in 10 30 ""; do
    "$@" && return 0
    [ -n "$delay" ] || { echo "fixtures: '$*' failed three times" >&2; return 1; }
    echo "fixtures: '$*' failed; trying again in $delay s" >&2
    sleep "$delay"
  done
}
for lock in tests/fixtures/*/package-lock.json tests/fixtures/*/*/package-lock.json; do
  dir=$(dirname "$lock")
  if [ -d "$dir/node_modules" ] && [ "$dir/node_modules" -nt "$lock" ]; then continue; fi
  echo "fixtures: npm ci in $dir"
  (cd "$dir" && retry npm ci --no-audit --no-fund --loglevel=error)
  touch "$dir/node_modules"
done

# go test / cargo test fixtures (tests/testrun) and the console's Chromium: Debian's packages where missing and apt is usable
# (CI runs as root). Tests of a framework whose toolchain is missing fail with a clear message.
# bubblewrap: the agents' test runs are confined in bwrap (graphlemon/testrun/confine.py).
missing=()
command -v go >/dev/null 2>&1 || missing+=(golang-go)
command -v cargo >/dev/null 2>&1 || missing+=(cargo)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# libseccomp: the confined runs' seccomp filter is built with it (pyseccomp loads libseccomp.so.2)
ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || missing+=(libseccomp2)
# the console's browser tests and benchmark drive Debian's chromium with Playwright (never a downloaded browser)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# the deploy supervisor's reverse proxy (REQ-15, docs/deploy.md): Debian's haproxy, started by the supervisor itself
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
# chattr: the log-retention acceptance test makes a log really undeletable (chattr +i) as root
command -v chattr >/dev/null 2>&1 || missing+=(e2fsprogs)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "fixtures: apt-get install ${missing[*]}"
    retry apt-get -o DPkg::Lock::Timeout=300 update -qq
    retry env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${missing[@]}" >/dev/null
  else
    echo "fixtures: missing ${missing[*]} and apt-get is not usable: install them to run those tests" >&2
  fi
fi

# The real-suite corpus (tests/testrun/test_real_suites.py): pinned packages from the npm registry, PyPI and
# Debian (Go and Rust library sources as Debian ships them: golang-*-dev, librust-*-dev, built offline),
# unpacked once into tests/testrun/corpus/.cache/NAME-VERSION (a stamp file marks a finished install).
# `dev` (npm) installs only those devDependencies (the test runner), not linters and type checkers;
# `drop_dependencies` (cargo) removes optional dependencies Debian's copy cannot resolve offline;
# `files` are written into the package (the test config a monorepo keeps outside the published package).
corpus=tests/testrun/corpus
cache=$corpus/.cache
mkdir -p "$cache"
# heldout*.json (not their *_labels.json): the held-out splits of bench_hint_quality.py (`--split heldout`,
# `--split heldout2`, ..), installed the same way; a new split's file is found by its name
splits=("$corpus/corpus.json")
for f in "$corpus"/heldout*.json; do [[ $f == *_labels.json ]] || splits+=("$f"); done
python3 - "${splits[@]}" <<'PY' | while IFS=$'\t' read -r registry name version source dev drop; do
import json, sys
for p in [p for f in sys.argv[1:] for p in json.load(open(f))["packages"]]:
    print("\t".join([p["registry"], p["name"], p["version"], p.get("source", "-"),
                     " ".join(p.get("dev", [])) or "-", " ".join(p.get("drop_dependencies", [])) or "-"]))
PY
  slug=${name#@}; dest="$cache/${slug//\//-}-$version"  # @scope/name → scope-name-VERSION
  if [ "$registry" = local ]; then
    # a suite kept in this repository (tests/testrun/corpus/local/NAME): its files copied afresh every time
    # (they change with the repository), its pinned `dev` packages from the npm registry installed once
    mkdir -p "$dest" && find "$dest" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
    cp -r "$source/." "$dest/"
    if [ "$dev" != "-" ] && [ ! -f "$dest/node_modules/.graphlemon-corpus-ok" ]; then
      echo "fixtures: corpus local $name: npm install $dev"
      (cd "$dest" && mv package.json package.json.keep && \
        retry npm install --no-audit --no-fund --ignore-scripts --no-save --no-package-lock --loglevel=error $dev; \
        status=$?; mv package.json.keep package.json; exit $status)
      touch "$dest/node_modules/.graphlemon-corpus-ok"
    fi
    touch "$dest/.graphlemon-corpus-ok"
    continue
  fi
  if [ -f "$dest/.graphlemon-corpus-ok" ]; then continue; fi
  echo "fixtures: corpus $registry $name@$version"
  rm -rf "$dest" "$cache/tmp" && mkdir -p "$dest" "$cache/tmp"
  case "$registry" in
    npm)
      (cd "$cache/tmp" && retry npm pack "$name@$version" --silent >/dev/null)
      tar xzf "$cache"/tmp/*.tgz -C "$dest" --strip-components=1
      if [ "$dev" = "-" ]; then
        # the package's own devDependencies (its test runner); no install scripts, no audit
        (cd "$dest" && retry npm install --no-audit --no-fund --ignore-scripts --no-package-lock --loglevel=error)
      else
        # only the named devDependencies, at the ranges the package asks for, or pinned (`vitest@1.0.4`: a
        # monorepo package publishes none; package.json moved aside so npm installs just these)
        specs=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); dev={**d.get("dependencies",{}), **d.get("devDependencies",{})}
print(" ".join(n if "@" in n[1:] else f"{n}@{dev[n]}" for n in sys.argv[2].split()))' "$dest/package.json" "$dev")
        mv "$dest/package.json" "$cache/tmp/package.json"
        (cd "$dest" && retry npm install --no-audit --no-fund --ignore-scripts --no-save --no-package-lock --loglevel=error $specs)
        mv "$cache/tmp/package.json" "$dest/package.json"
      fi
      ;;
    pypi)
      retry .venv/bin/python -m pip download -q --no-deps --no-binary :all: -d "$cache/tmp" "$name==$version" 2>/dev/null
      tar xzf "$cache"/tmp/*.tar.gz -C "$dest" --strip-components=1
      ;;
    debian-go|debian-cargo)
      # source = "DEBIAN_PACKAGE:/path/it/installs"; the pinned version is checked against dpkg's
      deb=${source%%:*}; path=${source#*:}
      if [ ! -d "$path" ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        retry apt-get -o DPkg::Lock::Timeout=300 update -qq && retry env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$deb" >/dev/null
      fi
      have=$(dpkg-query -W -f='${Version}' "$deb" 2>/dev/null || true)
      if [ "${have%%-*}" != "$version" ]; then
        echo "fixtures: corpus $name wants Debian's $deb $version, found '${have:-none}'" >&2; rm -rf "$dest"; continue
      fi
      cp -r "$path/." "$dest/"
      if [ "$drop" != "-" ]; then
        python3 - "$dest/Cargo.toml" $drop <<'PY'
import re, sys
path, names = sys.argv[1], sys.argv[2:]
text = open(path).read()
for name in names:
    text = re.sub(rf"\[dependencies\.{re.escape(name)}\]\n(?:[^\[\n].*\n|\n)*", "", text)
open(path, "w").write(text)
PY
      fi
      ;;
  esac
  # `files`: what the package's repository has beside it but the archive leaves out (a monorepo's test config)
  python3 - "$name" "$dest" "${splits[@]}" <<'PY'
import json, pathlib, sys
for p in [p for f in sys.argv[3:] for p in json.load(open(f))["packages"]]:
    if p["name"] == sys.argv[1]:
        for rel, text in p.get("files", {}).items():
            pathlib.Path(sys.argv[2], rel).write_text(text)
PY
  rm -rf "$cache/tmp"
  touch "$dest/.graphlemon-corpus-ok"
done
