#!/usr/bin/env bash
# Build GraphLemon's wheel and run `graphlemon demo` from it in a fresh virtualenv, every dependency installed from
# the package registries (no source checkout on the path): what a person who only has the wheel gets.
#   bash scripts/check_wheel.sh [python3.11]
set -euo pipefail
PY=${1:-$(command -v python3.11 || command -v python3)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/graphlemon-wheel-XXXXXX)
echo "== building the wheel into $WORK/dist"
"$PY" -m pip wheel -q --no-deps -w "$WORK/dist" "$ROOT"
WHEEL=$(ls "$WORK"/dist/graphlemon-*.whl)
echo "== a fresh virtualenv: $WORK/venv"
"$PY" -m venv "$WORK/venv"
echo "== installing ${WHEEL##*/}[demo] and its dependencies"
"$WORK/venv/bin/python" -m pip install -q -c "$ROOT/constraints.txt" "$WHEEL[demo]"
cd "$WORK"
echo "== graphlemon demo (from $("$WORK/venv/bin/python" -c 'import graphlemon; print(graphlemon.__file__)'))"
"$WORK/venv/bin/graphlemon" demo
