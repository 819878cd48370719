"""`graphlemon test` beside the raw runner on real suites of the corpus (tests/testrun/corpus, `make fixtures`).

Prints per suite, measured side by side in this run (interleaved pairs, medians of REPETITIONS; 3 for
the long suite, more-itertools whole under pytest):
  overhead    = time(`graphlemon test --json`) / time(raw command)            (goal <= 1.05)
  compactness = bytes(JSON result) / bytes(raw verbose output), planted bug    (goal <= 1/20)
  named       = every failing test's name is in the JSON
Each suite runs in a temp copy with its planted bug (the one of tests/testrun/test_real_suites.py).
Also printed: graphlemon's fixed cost per call (`graphlemon test --command true` beside `true`), which
bounds the overhead ratio a short suite can reach, and the load average before and after.
GraphLemon's modules are byte-compiled first, as an install does (this machine sets PYTHONDONTWRITEBYTECODE,
which would otherwise recompile them on every call). `python benchmarks/bench_real_suites.py [SUITE_ID ...]`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from smoke import sized  # noqa: E402

from tests.testrun.test_real_suites import ENV, SUITES, Suite  # noqa: E402

CACHE = ROOT / "tests" / "testrun" / "corpus" / ".cache"
REPETITIONS = sized(5, 1)
SMOKE_SUITES = {"unittest", "tape-tap13"}  # BENCH_SMOKE=1: one Python and one JavaScript suite, nothing to build
# the raw command a person would run, its verbose form (for the bytes a reader would otherwise get), and
# graphlemon's arguments when they are not `--command RAW` (go: its own `go test -json` on the same packages)
GO_PACKAGES = "./cmp/cmpopts/... ./cmp/internal/..."
RAW: dict[str, tuple[str, str] | tuple[str, str, list[str]]] = {
    "node-test-c8": ("npm run test:unit", "npm run test:unit"),
    "go-cmp": (f"go test {GO_PACKAGES}", f"go test -v {GO_PACKAGES}", GO_PACKAGES.split()),
    "cargo-semver": ("cargo test --no-fail-fast", "cargo test --no-fail-fast", []),
    "mocha-nyc-npm-chain": ("npm test", "npm test"),
    "tape-tap13": ("npm run tests-only", "npm run tests-only"),
    # jest-when's `npm test` is `jest` (coverage on from its package.json); ours runs jest with its JSON report
    "jest": ("npm test", "npm test -- --verbose"),
    "vitest-npm-coverage": ("npm run test:lib", "npm run test:lib -- --reporter=verbose"),
    # a long suite: more-itertools whole (696 tests, ~20,000 unittest subtests) under pytest, detected by graphlemon
    "more-itertools-all": (f"{sys.executable} -m pytest", f"{sys.executable} -m pytest -v", []),
    "unittest": (
        f"{sys.executable} -m unittest tests.test_more.SplitAtTests tests.test_more.LastTests tests.test_more.WindowedTests",
        f"{sys.executable} -m unittest -v tests.test_more.SplitAtTests tests.test_more.LastTests tests.test_more.WindowedTests",
    ),
}


LONG = replace(next(s for s in SUITES if s.id == "pytest-subtests"), id="more-itertools-all", targets=[])
LONG_REPETITIONS = sized(3, 1)


def _copy(suite: Suite, dest: Path) -> Path:
    source = CACHE / suite.package
    target = dest / suite.package
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("node_modules", ".nyc_output", "target"))
    if (source / "node_modules").is_dir():
        (target / "node_modules").symlink_to(source / "node_modules", target_is_directory=True)
    path = target / suite.bug_file
    path.write_text(path.read_text().replace(suite.bug_from, suite.bug_to))
    return target


def _timed(argv: list[str], cwd: Path) -> tuple[float, bytes]:
    env = {**os.environ, **ENV, "CARGO_TARGET_DIR": str(cwd.parent / "cargo-target")}  # shared: built once
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start, proc.stdout + proc.stderr


def main() -> None:
    missing = [s.package for s in SUITES if not (CACHE / s.package / ".graphlemon-corpus-ok").is_file()]
    if missing:
        sys.exit(f"error[INVALID_PARAM]: the corpus is not installed ({', '.join(missing)}): run `make fixtures`")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "graphlemon")], check=True)
    print(f"load average {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        fixed = [
            _timed(
                [sys.executable, "-m", "graphlemon", "test", "--json", "--project", tmp, "--command", "true"], Path(tmp)
            )[0]
            - _timed(["/bin/sh", "-c", "true"], Path(tmp))[0]
            for _ in range(REPETITIONS)
        ]
    print(f"fixed cost per call: {statistics.median(fixed) * 1000:.0f} ms (median of {REPETITIONS})")
    print(f"{'suite':<22} {'raw s':>7} {'ours s':>7} {'ours-raw':>8} {'overhead':>9} {'json B':>8} {'raw -v B':>9} "
          f"{'ratio':>7} named")  # fmt: skip
    only = set(sys.argv[1:]) or sized(set(), SMOKE_SUITES)  # suite ids (default: all of RAW)
    for suite in (s for s in [*SUITES, LONG] if s.id in RAW and (not only or s.id in only)):
        raw_cmd, verbose_cmd, *ours_args = RAW[suite.id]
        with tempfile.TemporaryDirectory() as tmp:
            project = _copy(suite, Path(tmp))
            ours_cmd = [sys.executable, "-m", "graphlemon", "test", "--json", "--project", str(project)]
            ours_cmd += ours_args[0] if ours_args else ["--command", suite.command or raw_cmd]
            _timed(["/bin/sh", "-c", raw_cmd], project)  # warm-up: builds (go, cargo) and caches, untimed
            raw_times, our_times, result = [], [], b""
            for _ in range(LONG_REPETITIONS if suite is LONG else REPETITIONS):
                raw_times.append(_timed(["/bin/sh", "-c", raw_cmd], project)[0])
                elapsed, result = _timed(ours_cmd, project)
                our_times.append(elapsed)
            verbose = _timed(["/bin/sh", "-c", verbose_cmd], project)[1]
        data = json.loads(result.decode())
        named = all(f["name"] and f["name"] in result.decode() for f in data["failures"]) and bool(data["failures"])
        raw_s, our_s = statistics.median(raw_times), statistics.median(our_times)
        json_bytes = len(result.strip())  # as printed
        print(f"{suite.id:<22} {raw_s:7.2f} {our_s:7.2f} {our_s - raw_s:8.2f} {our_s / raw_s:9.2f} {json_bytes:8d} {len(verbose):9d} "
              f"{'1/%.1f' % (len(verbose) / json_bytes):>7} {named}")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f} (1 min) at the end")


if __name__ == "__main__":
    main()
