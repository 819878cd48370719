"""Structured test runner: overhead vs the raw framework command, and compactness of the result.

Prints, measured side by side in this run (interleaved repetitions, medians):
  overhead   = time(`graphlemon test --json`) / time(raw command), on a generated 1,000-test pytest
               suite and a 500-test vitest suite (goal <= 1.10)
  compactness = bytes(JSON result) / bytes(raw output) for 1,000 pytest tests with 10 failures
               (goal <= 1/20), checking that every failure's name is in the JSON.
  entry point = on a ~1 s pytest suite, `graphlemon test --json` (its lean path: argparse, no typer/rich) and
               the same command through the full typer app, each / the raw command (goal <= 1.10)
The suites are generated into a temp folder; vitest comes from the fixture's installed node_modules.
BENCH_SMOKE=1: the ~1 s suite and the fixed cost only, one pair each.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VITEST_MODULES = ROOT / "tests" / "fixtures" / "testrun" / "vitest_project" / "node_modules"
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
REPETITIONS = 1 if SMOKE else 7
GRAPHLEMON = [sys.executable, "-m", "graphlemon", "test", "--json", "--project"]
# the same command through the full typer app (every command's options; what `graphlemon test` was before)
FULL_APP = [sys.executable, "-c", "import sys; from graphlemon.cli import main; main(sys.argv[1:])",
            "test", "--json", "--project"]  # fmt: skip

FAILING_BODIES = [
    "    assert normalise('Hello World') == 'hello-world'",
    "    assert build_user('ada') == {'name': 'ada', 'role': 'admin', 'active': True}",
    "    assert total([1, 2, 3, 4]) == 11",
    "    assert status_for(None) == 401",
    "    assert sorted_ids([3, 1, 2]) == [1, 2, 3, 4]",
    "    assert parse_price('12,50') == 12.5",
    "    assert average([]) == 0",
    "    assert lookup({'a': 1}, 'b') == 2",
    "    assert render_title('x' * 60).endswith('...')",
    "    assert is_valid_email('ada@example') is False",
]
HELPERS = """
def normalise(text):
    return text.lower().replace(" ", "_")

def build_user(name):
    return {"name": name, "role": "member", "active": True}

def total(xs):
    return sum(xs[:-1])

def status_for(user):
    return 500 if user is None else 200

def sorted_ids(ids):
    return sorted(ids)

def parse_price(text):
    return float(text)

def average(xs):
    return sum(xs) / len(xs)

def lookup(table, key):
    return table[key]

def render_title(text):
    return text[:50]

def is_valid_email(text):
    return "@" in text
"""


def pytest_suite(root: Path, files: int = 20, per_file: int = 50, failures: int = 0) -> Path:
    """files × per_file tests; the first `failures` tests fail in ten different, realistic ways."""
    suite = root / f"pytest-{files * per_file}-{failures}"
    (suite / "tests").mkdir(parents=True)
    (suite / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (suite / "tests" / "helpers.py").write_text(HELPERS)
    failing = 0
    for f in range(files):
        lines = ["import pytest", "from helpers import *  # noqa: F403", ""]
        for t in range(per_file):
            lines.append(f"def test_case_{f:02d}_{t:03d}():")
            lines.append(f"    values = [{t}, {t + 1}, {t + 2}]")
            if failing < failures:
                lines.append(FAILING_BODIES[failing % len(FAILING_BODIES)])
                failing += 1
            else:
                lines.append(f"    assert sum(values) == {3 * t + 3}")
            lines.append("")
        (suite / "tests" / f"test_generated_{f:02d}.py").write_text("\n".join(lines))
    (suite / "tests" / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(suite / 'tests')!r})\n")
    return suite


def vitest_suite(root: Path, files: int = 10, per_file: int = 50, failing_files: int = 0) -> Path:
    """files × per_file tests; the first test of each of the first `failing_files` files fails."""
    suite = root / f"vitest-{files * per_file}-{failing_files}"
    (suite / "tests").mkdir(parents=True)
    (suite / "package.json").write_text(json.dumps({"type": "module", "devDependencies": {"vitest": "~3.2.4"}}))
    (suite / "node_modules").symlink_to(VITEST_MODULES, target_is_directory=True)
    for f in range(files):
        body = ['import { describe, expect, it } from "vitest";', "", f'describe("group {f}", () => {{']
        for t in range(per_file):
            check = "expect({ id: 1, name: 'ada' }).toEqual({ id: 1, name: 'Ada' })" if t == 0 and f < failing_files else (
                f"expect([{t}, {t + 1}].length).toBe(2)")  # fmt: skip
            body.append(f'  it("case {t}", () => {{ {check}; }});')
        body.append("});")
        (suite / "tests" / f"gen{f:02d}.test.js").write_text("\n".join(body) + "\n")
    return suite


def timed(argv: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env={**os.environ, "NO_COLOR": "1"})
    return time.perf_counter() - started, proc


def overhead(name: str, suite: Path, raw: list[str], expect_total: int, ours: list[str] = GRAPHLEMON) -> float:
    """Median over interleaved pairs of time(graphlemon test) / time(raw command), after one warm-up each."""
    timed(raw, suite)  # warm caches (bytecode, vite transform cache, page cache) for both sides alike
    timed([*ours, str(suite)], suite)
    raw_times, ours_times = [], []
    for _ in range(REPETITIONS):
        seconds, _proc = timed(raw, suite)
        raw_times.append(seconds)
        seconds, proc = timed([*ours, str(suite)], suite)
        ours_times.append(seconds)
        result = json.loads(proc.stdout)
        assert result["ok"] and result["summary"]["total"] == expect_total, result["summary"]
    ratio = statistics.median(o / r for o, r in zip(ours_times, raw_times, strict=True))
    print(
        f"overhead {name}: raw {statistics.median(raw_times):.2f} s, graphlemon test {statistics.median(ours_times):.2f} s"
        f" → ratio {ratio:.3f} (median of {REPETITIONS} interleaved pairs; goal <= 1.10)"
    )
    return ratio


def one_second_suite(root: Path) -> Path:
    """A pytest suite whose raw run takes about a second (20 tests of 40 ms, plus pytest's start-up)."""
    suite = root / "one-second"
    (suite / "tests").mkdir(parents=True)
    (suite / "pytest.ini").write_text("[pytest]\n")
    body = "\n".join(f"def test_wait_{i:02d}():\n    time.sleep(0.04)\n" for i in range(20))
    (suite / "tests" / "test_wait.py").write_text("import time\n\n" + body)
    return suite


def entry_points(root: Path) -> None:
    """The lean `graphlemon test` against the full typer app, both against raw pytest, on a ~1 s suite."""
    suite = one_second_suite(root)
    raw = [sys.executable, "-m", "pytest"]
    lean = overhead("~1 s pytest suite, lean entry (`graphlemon test --json`)", suite, raw, 20)
    full = overhead("~1 s pytest suite, full typer app", suite, raw, 20, FULL_APP)
    print(f"entry point on a ~1 s suite: lean {lean:.3f} vs full app {full:.3f} (goal <= 1.10)")
    cpu = {name: cpu_seconds(argv, suite) for name, argv in
           (("raw", raw), ("lean", [*GRAPHLEMON, str(suite)]), ("full app", [*FULL_APP, str(suite)]))}  # fmt: skip
    print("CPU time (user+sys of the process tree, load-independent): "
          + ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in cpu.items())
          + f"; lean / raw {cpu['lean'] / cpu['raw']:.3f}, full / raw {cpu['full app'] / cpu['raw']:.3f}")  # fmt: skip


def cpu_seconds(argv: list[str], cwd: Path) -> float:
    """Median CPU time (user + system, children included) of a command over REPETITIONS runs."""
    spent = []
    for _ in range(REPETITIONS):
        before = os.times()
        subprocess.run(argv, cwd=cwd, capture_output=True, env={**os.environ, "NO_COLOR": "1"})
        after = os.times()
        spent.append(after.children_user - before.children_user + after.children_system - before.children_system)
    return statistics.median(spent)


def fixed_cost(root: Path) -> None:
    """What one call adds whatever the suite: start-up, detection, report parsing, on a one-test suite."""
    suite = root / "one-test"
    (suite / "tests").mkdir(parents=True)
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "tests" / "test_one.py").write_text("def test_one():\n    assert True\n")
    raw = [sys.executable, "-m", "pytest"]
    timed(raw, suite)
    deltas = []
    for _ in range(REPETITIONS):
        raw_seconds, _ = timed(raw, suite)
        ours_seconds, _ = timed([*GRAPHLEMON, str(suite)], suite)
        deltas.append(ours_seconds - raw_seconds)
    print(f"fixed cost per call (one-test pytest suite): +{statistics.median(deltas) * 1000:.0f} ms")


def compactness(root: Path) -> None:
    suite = pytest_suite(root, failures=10)
    names = [f"tests/test_generated_00.py::test_case_00_{t:03d}" for t in range(10)]
    report("pytest", suite, [[sys.executable, "-m", "pytest"], [sys.executable, "-m", "pytest", "-v"]], names)
    if VITEST_MODULES.is_dir():
        vitest = vitest_suite(root, files=20, per_file=50, failing_files=10)
        bin_ = str(vitest / "node_modules" / ".bin" / "vitest")
        names = [f"group {f} > case 0" for f in range(10)]
        report("vitest", vitest, [[bin_, "run"], [bin_, "run", "--reporter=verbose"]], names)


def report(name: str, suite: Path, raw_commands: list[list[str]], failure_names: list[str]) -> None:
    """Compactness of one 1,000-test / 10-failure suite against each raw command's output."""
    proc = subprocess.run([*GRAPHLEMON, str(suite)], cwd=suite, capture_output=True)
    result = json.loads(proc.stdout)
    found = {f["name"] for f in result["failures"]}
    missing = [n for n in failure_names if n not in found]
    assert not missing and result["summary"] == {"total": 1000, "passed": 990, "failed": 10, "skipped": 0}, (
        missing,
        result["summary"],
    )
    assert all(f["hint"] for f in result["failures"])
    size = len(proc.stdout)
    tail = len(json.dumps(result["output_tail"], ensure_ascii=False))
    for argv in raw_commands:
        out = subprocess.run(argv, cwd=suite, capture_output=True, env={**os.environ, "NO_COLOR": "1"})
        raw_size = len(out.stdout) + len(out.stderr)
        label = " ".join([Path(argv[0]).name if "vitest" in argv[0] else "python", *argv[1:]])
        print(f"compactness {name} vs `{label}`: JSON {size} B / raw {raw_size} B = {size / raw_size:.4f}"
              f" (1/{raw_size / size:.1f}; goal <= 1/20)")  # fmt: skip
    print(
        f"  ({name}: the {tail} B output_tail is {tail / size:.0%} of the JSON; all 10 failure names present, each with a hint)"
    )


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-testrun-"))
    try:
        fixed_cost(root)
        entry_points(root)
        if SMOKE:
            return
        overhead("pytest 1,000 tests", pytest_suite(root), [sys.executable, "-m", "pytest"], 1000)
        if VITEST_MODULES.is_dir():
            vitest = vitest_suite(root, files=10, per_file=50)
            overhead("vitest 500 tests", vitest, [str(vitest / "node_modules" / ".bin" / "vitest"), "run"], 500)
        else:
            print("overhead vitest: skipped (run scripts/install-fixtures.sh first)")
        compactness(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
