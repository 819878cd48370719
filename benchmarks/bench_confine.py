"""Confined test runs: the cost of bubblewrap on a generated 1,000-test pytest suite.

Prints, measured side by side in this run (interleaved repetitions, medians):
  overhead   = time(run_tests confined in bwrap) / time(run_tests unconfined)   (goal <= 1.05)
  fixed cost = time(bwrap ... true) - time(true): what confinement adds to any run, whatever its size,
               and that cost as a share of the unconfined 1,000-test run (robust on a loaded machine,
               where the wall-clock ratio above swings by more than the goal).
When bwrap is missing or the kernel refuses namespaces, says so and measures nothing.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_testrun import pytest_suite  # noqa: E402
from smoke import sized  # noqa: E402

from graphlemon.testrun import run_tests  # noqa: E402
from graphlemon.testrun.confine import Confinement, bwrap_available  # noqa: E402

REPETITIONS = sized(7, 1)


def timed(suite: Path, confinement: Confinement | None) -> float:
    started = time.perf_counter()
    result = run_tests(suite, timeout=600, confinement=confinement)
    elapsed = time.perf_counter() - started
    assert result.summary.total == 1000 and result.ok, result.output_tail
    assert result.confinement == ("bwrap" if confinement else "none")
    return elapsed


def main() -> None:
    bwrap, why = bwrap_available()
    if bwrap is None:
        print(f"confinement: not measured: {why}")
        return
    with tempfile.TemporaryDirectory(prefix="graphlemon-bench-confine-") as tmp:
        suite = pytest_suite(Path(tmp))
        hidden = suite / ".graphlemon"
        hidden.mkdir()
        conf = Confinement(workdir=suite, hidden=(hidden,), mode="required")
        timed(suite, None)  # warm the caches once
        plain, confined = [], []
        for _ in range(REPETITIONS):
            plain.append(timed(suite, None))
            confined.append(timed(suite, conf))
        fixed = fixed_cost(suite, conf)
    a, b = statistics.median(plain), statistics.median(confined)
    print(f"pytest 1,000 tests: unconfined {a:.2f} s, confined (bwrap) {b:.2f} s")
    print(f"confinement overhead = {b / a:.3f} (goal <= 1.05)")
    print(f"confinement fixed cost = {fixed * 1000:.1f} ms per run = {fixed / a:.4f} of the 1,000-test run")


def fixed_cost(suite: Path, conf: Confinement, runs: int = 30) -> float:
    """Median extra wall time of starting `true` inside the sandbox."""
    from graphlemon.testrun.confine import wrap

    confined, _ = wrap(["true"], conf, cwd=suite)
    deltas = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(["true"], check=True)
        t1 = time.perf_counter()
        subprocess.run(confined, check=True)
        deltas.append((time.perf_counter() - t1) - (t1 - t0))
    return statistics.median(deltas)


if __name__ == "__main__":
    main()
