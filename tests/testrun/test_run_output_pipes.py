"""A test command's stdout and stderr are pipes, as under its own runner in CI: read whole, together, into files."""

from __future__ import annotations

import os
import sys
import time

import pytest

from graphlemon.testrun import process
from graphlemon.testrun.process import run_process
from graphlemon.testrun.runner import run_tests

pytestmark = pytest.mark.system

WHAT_FD_1_IS = """import os, stat, sys, unittest


class Streams(unittest.TestCase):
    def test_stdout_is_a_pipe_not_a_file(self):
        self.assertFalse(os.path.isfile(sys.__stdout__.fileno()))  # polib's _is_file(True) asks this of fd 1
        self.assertTrue(stat.S_ISFIFO(os.fstat(1).st_mode))

    def test_stderr_is_a_pipe(self):
        self.assertTrue(stat.S_ISFIFO(os.fstat(2).st_mode))
"""


def test_a_suite_that_asks_what_its_stdout_is_is_told_a_pipe_as_under_its_own_runner(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "test_streams.py").write_text(WHAT_FD_1_IS)
    result = run_tests(tmp_path, framework="unittest", timeout=60)
    assert result.ok and (result.summary.passed, result.summary.failed) == (2, 0), result.output_tail


CHATTY = """import sys
for i in range({lines}):
    sys.stdout.write('out %07d ' % i + 'o' * 90 + chr(10))
    sys.stderr.write('err %07d ' % i + 'e' * 90 + chr(10))
    if i % 997 == 0:
        sys.stdout.flush(); sys.stderr.flush()
"""
LINES = 60_000  # 6 MB on each stream: far past a pipe's buffer


def _lines(text: str, stream: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(stream)]


def test_a_child_writing_megabytes_on_both_streams_never_blocks_and_nothing_is_lost(tmp_path):
    argv = [sys.executable, "-c", CHATTY.format(lines=LINES)]
    split = run_process(argv, cwd=tmp_path, env=dict(os.environ), output_path=tmp_path / "err",
                        stdout_path=tmp_path / "out", timeout=120)  # fmt: skip
    assert split.exit_code == 0 and not split.timed_out
    out, err = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
    assert out.splitlines() == [f"out {i:07d} {'o' * 90}" for i in range(LINES)]
    assert err.splitlines() == [f"err {i:07d} {'e' * 90}" for i in range(LINES)]
    merged = run_process(argv, cwd=tmp_path, env=dict(os.environ), output_path=tmp_path / "both", timeout=120)
    both = (tmp_path / "both").read_text()
    assert merged.exit_code == 0 and _lines(both, "out") == out.splitlines() and _lines(both, "err") == err.splitlines()


def test_merged_streams_keep_the_childs_own_order(tmp_path):
    script = "import sys\nfor i in range(50):\n    print(i, flush=True); print(-i, file=sys.stderr, flush=True)\n"
    run_process([sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ), output_path=tmp_path / "out",
                timeout=60)  # fmt: skip
    assert (tmp_path / "out").read_text().split() == [str(n) for i in range(50) for n in (i, -i)]


def test_an_output_past_the_kept_size_keeps_its_head_a_cut_line_and_its_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(process, "MAX_KEPT_BYTES", 1000)
    monkeypatch.setattr(process, "TAIL_KEPT_BYTES", 300)
    script = "for i in range(2000):\n    print('line %05d' % i, flush=i % 100 == 0)\nprint('the last line')\n"
    outcome = run_process([sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ),
                          output_path=tmp_path / "out", timeout=60)  # fmt: skip
    kept = (tmp_path / "out").read_bytes()
    head, cut, tail = kept.partition(b"output cut")
    assert outcome.exit_code == 0 and cut and len(head) <= 1000 + 40 and len(kept) < 1500
    assert head.startswith(b"line 00000\n") and tail.endswith(b"line 01999\nthe last line\n")


def test_a_daemon_holding_the_pipe_after_the_run_ended_delays_the_end_only_briefly(tmp_path):
    script = f"(setsid sh -c 'echo $$ > {tmp_path / 'pid'}; echo daemon; sleep 30' &); sleep 0.3; echo done"
    started = time.monotonic()
    outcome = run_process(["sh", "-c", script], cwd=tmp_path, env=dict(os.environ), output_path=tmp_path / "out",
                          timeout=60)  # fmt: skip
    assert outcome.exit_code == 0 and time.monotonic() - started < 0.3 + process.DRAIN_SECONDS + 5
    assert (tmp_path / "out").read_text().split() == ["daemon", "done"]
    os.kill(int((tmp_path / "pid").read_text()), 9)  # it left the run's session and tree: not the run's to end
