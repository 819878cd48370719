"""The fixed cost of `graphlemon test --json` on a green ~1 s pytest suite, against the native run, side by side.

Prints, measured in this run (interleaved pairs: native, graphlemon, native, graphlemon, …; the ratio taken pair by
pair, then its median, so a drift of the machine's speed moves both sides of a pair alike):

  ratio      wall(`graphlemon test --json`) / wall(`python -m pytest`) on a generated green suite of 20 tests of
             40 ms (about a second idle), and the same ratio of CPU time (user + system of the process tree: less
             moved by other jobs than wall time); goal <= 1.15 (issue 46), printed, not judged
  fixed      graphlemon's own process on `--command true` (no test runner at all) against `python -c pass`: what
             every call adds whatever the suite
  imports    where that goes, in a fresh interpreter each (CPU ms): pydantic's `ValidationError`, then its
             `BaseModel`, then graphlemon's test runner (its models and modules) — pydantic is on this path through
             the confinement settings (testrun/confine.py, sandbox_settings.py) and the result models

GraphLemon's modules are byte-compiled first, as an install leaves them (this machine sets
PYTHONDONTWRITEBYTECODE, which would otherwise compile them on every call). The load average is printed before
and after: on a shared machine the wall ratio is noisy, the CPU ratio less so.
BENCH_SMOKE=1: one pair and one run of the import probe (seconds); every figure printed, nothing judged.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_testrun import one_second_suite  # this folder is on the path of a script run from it

ROOT = Path(__file__).resolve().parents[1]
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
PAIRS = 1 if SMOKE else 9
PROBES = 1 if SMOKE else 7
ENV = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}

IMPORT_PROBE = """
import time
t0 = time.process_time()
from pydantic import ValidationError
t1 = time.process_time()
from pydantic import BaseModel
t2 = time.process_time()
import graphlemon.testrun, graphlemon.test_command
t3 = time.process_time()
print(f"{(t1 - t0) * 1000:.1f} {(t2 - t1) * 1000:.1f} {(t3 - t2) * 1000:.1f}")
"""


def timed(argv: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    """(wall seconds, CPU seconds of the process tree, the finished process)."""
    before, started = os.times(), time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=ENV)
    wall, after = time.perf_counter() - started, os.times()
    cpu = after.children_user - before.children_user + after.children_system - before.children_system
    return wall, cpu, proc


def paired(ours: list[str], native: list[str], cwd: Path) -> dict[str, list[float]]:
    timed(native, cwd)  # warm-up, not counted: page cache, bytecode
    timed(ours, cwd)
    figures: dict[str, list[float]] = {"wall_native": [], "wall_ours": [], "cpu_native": [], "cpu_ours": []}
    for _ in range(PAIRS):
        wall, cpu, _proc = timed(native, cwd)
        figures["wall_native"].append(wall)
        figures["cpu_native"].append(cpu)
        wall, cpu, proc = timed(ours, cwd)
        figures["wall_ours"].append(wall)
        figures["cpu_ours"].append(cpu)
        if proc.returncode not in (0, 1) or not proc.stdout.strip().startswith(b"{"):
            sys.exit(f"graphlemon test did not print its JSON: {proc.stderr.decode(errors='replace')[-400:]}")
    return figures


def ratio(figures: dict[str, list[float]], kind: str) -> float:
    return statistics.median(o / n for o, n in zip(figures[f"{kind}_ours"], figures[f"{kind}_native"], strict=True))


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def main() -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "graphlemon")], check=True)
    load = os.getloadavg()[0]
    print(f"load average at start {load:.1f} on {os.cpu_count()} processors; {PAIRS} interleaved pairs")
    with tempfile.TemporaryDirectory(prefix="bench-fixed-cost-") as tmp:
        suite = one_second_suite(Path(tmp))  # 20 tests of 40 ms, as bench_testrun's entry-point figure
        native = [sys.executable, "-m", "pytest"]
        ours = [sys.executable, "-m", "graphlemon", "test", "--json", "--project", str(suite)]
        run = paired(ours, native, suite)
        print(f"green ~1 s pytest suite: native wall {ms(run['wall_native'])}, graphlemon {ms(run['wall_ours'])} "
              f"→ wall ratio {ratio(run, 'wall'):.3f}; CPU native {ms(run['cpu_native'])}, graphlemon "
              f"{ms(run['cpu_ours'])} → CPU ratio {ratio(run, 'cpu'):.3f} (goal <= 1.15)")  # fmt: skip
        fixed = paired([*ours[:-1], str(suite), "--command", "true"], [sys.executable, "-c", "pass"], suite)
        print(f"fixed cost (`--command true` vs `python -c pass`): wall {ms(fixed['wall_ours'])} vs "
              f"{ms(fixed['wall_native'])}, CPU {ms(fixed['cpu_ours'])} vs {ms(fixed['cpu_native'])}")  # fmt: skip
    probes = [subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, env=ENV, check=True)
              for _ in range(PROBES)]  # fmt: skip
    parts = list(zip(*([float(x) for x in p.stdout.split()] for p in probes), strict=True))
    names = ("pydantic's ValidationError", "then BaseModel", "then graphlemon.testrun (models, modules)")
    print("imports (CPU, fresh interpreter, median): "
          + ", ".join(f"{name} {statistics.median(values):.0f} ms" for name, values in zip(names, parts, strict=True)))  # fmt: skip
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
