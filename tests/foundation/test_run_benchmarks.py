"""scripts/run_benchmarks.py (`make bench`, `make bench-smoke`): every benchmark runs even after one fails, each
one's output is printed whole and in file order however many run at once, and a failure sets the exit status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parents[2] / "scripts" / "run_benchmarks.py"
pytestmark = pytest.mark.system


def test_blocks_in_file_order_every_one_run_and_a_failure_named(tmp_path: Path):
    slow = tmp_path / "bench_a.py"  # finishes last, printed first
    slow.write_text("import time\nprint('a starts')\ntime.sleep(1.0)\nprint('a ends')\n")
    failing = tmp_path / "bench_b.py"
    failing.write_text("import sys\nprint('b says')\nsys.exit(3)\n")
    quick = tmp_path / "bench_c.py"
    quick.write_text("print('c says', end='')\n")  # no final newline: the block still ends its line
    done = subprocess.run([sys.executable, str(RUNNER), "--jobs", "3", str(slow), str(failing), str(quick)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    out = done.stdout
    order = [out.index(x) for x in (f"== {slow}", "a starts", "a ends", f"({slow}: ", f"== {failing}", "b says",
                                    f"== {quick}", "c says\n", "3 benchmarks in ")]  # fmt: skip
    assert order == sorted(order), out
    assert done.stderr.strip() == f"benchmark failed: {failing} (exit 3)"


def test_jobs_below_one_is_refused(tmp_path: Path):
    done = subprocess.run([sys.executable, str(RUNNER), "--jobs", "0", str(tmp_path / "bench_x.py")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and "--jobs must be 1 or more, not 0" in done.stderr
