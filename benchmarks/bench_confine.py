"""Confined test runs: the cost of the sandbox (bubblewrap, user namespace, seccomp, limits) on a generated
1,000-test pytest suite.

Prints, measured side by side in this run (interleaved repetitions, medians):
  overhead   = time(run_tests confined in bwrap) / time(run_tests unconfined)   (goal <= 1.05)
  fixed cost = time(the whole confined command line running `true`) - time(true): what confinement adds to any
               run, whatever its size (goal <= 60 ms), and that cost as a share of the unconfined 1,000-test run
               (robust on a loaded machine, where the wall-clock ratio above swings by more than the goal).
When bwrap is missing or the kernel refuses namespaces, says so and measures nothing.
BENCH_SMOKE=1: a 50-test suite, 1 repetition and 8 fixed-cost runs (a few seconds), the same figures.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_testrun import pytest_suite  # noqa: E402

from graphlemon.testrun import run_tests  # noqa: E402
from graphlemon.testrun.confine import Confinement, bwrap_available  # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"
REPETITIONS = 1 if SMOKE else 7
FILES = 1 if SMOKE else 20  # 50 tests a file
FIXED_RUNS = 8 if SMOKE else 30
FIXED_GOAL_MS = 60.0


def timed(suite: Path, confinement: Confinement | None) -> float:
    started = time.perf_counter()
    result = run_tests(suite, timeout=600, confinement=confinement)
    elapsed = time.perf_counter() - started
    assert result.summary.total == FILES * 50 and result.ok, result.output_tail
    assert result.confinement == ("bwrap" if confinement else "none")
    return elapsed


def main() -> None:
    bwrap, why = bwrap_available()
    if bwrap is None:
        print(f"confinement: not measured: {why}")
        return
    with tempfile.TemporaryDirectory(prefix="graphlemon-bench-confine-") as tmp:
        suite = pytest_suite(Path(tmp), files=FILES)
        hidden = suite / ".graphlemon"
        hidden.mkdir()
        conf = Confinement(workdir=suite, hidden=(hidden,), mode="required")
        timed(suite, None)  # warm the caches once
        plain, confined = [], []
        for _ in range(REPETITIONS):
            plain.append(timed(suite, None))
            confined.append(timed(suite, conf))
        fixed, old = fixed_cost(suite, conf)
    a, b = statistics.median(plain), statistics.median(confined)
    tests = f"{FILES * 50:,}"
    print(f"pytest {tests} tests: unconfined {a:.2f} s, confined (bwrap) {b:.2f} s")
    print(f"confinement overhead = {b / a:.3f} (goal <= 1.05)")
    print(f"confinement fixed cost = {fixed * 1000:.1f} ms per run (goal <= {FIXED_GOAL_MS:.0f} ms) = "
          f"{fixed / a:.4f} of the {tests}-test run")
    print(f"  beside a bare `bwrap --ro-bind / /` (no user namespace, filter, limits or built view): "
          f"{old * 1000:.1f} ms, ratio {fixed / old:.2f}")


def fixed_cost(suite: Path, conf: Confinement, runs: int = FIXED_RUNS) -> tuple[float, float]:
    """Median extra wall time of starting `true` inside the sandbox (building the command line, a pids cgroup as
    root, the launcher with its limits, bwrap with its user namespace, view and seccomp filter), and of a bare
    `bwrap --ro-bind / /` measured in the same rounds."""
    from graphlemon.testrun.confine import bwrap_available, wrap

    bare = [bwrap_available()[0] or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-pid", "--unshare-net", "--", "true"]  # fmt: skip
    deltas, bare_deltas = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(["true"], check=True)
        t1 = time.perf_counter()
        confined, _ = wrap(["true"], conf, cwd=suite)
        subprocess.run(confined, check=True)
        t2 = time.perf_counter()
        subprocess.run(bare, check=True)
        t3 = time.perf_counter()
        deltas.append((t2 - t1) - (t1 - t0))
        bare_deltas.append((t3 - t2) - (t1 - t0))
    return statistics.median(deltas), statistics.median(bare_deltas)


if __name__ == "__main__":
    main()
