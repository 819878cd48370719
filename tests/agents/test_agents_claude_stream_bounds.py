"""What `claude` prints is bounded before it is believed (claude_stream.py; sbxred c37): a line past the stream's
line limit is dropped as it is read (never held whole), an event nested past MAX_DEPTH or too deep for JSON to
decode is not an event, and the turn goes on to its result."""

from __future__ import annotations

import io
import json

import pytest
from fakes.claude import success

from graphlemon.agents import build_executor, claude_stream
from graphlemon.agents.claude_stream import TOO_LONG, _bounded_lines, _deeper_than


def test_a_long_line_comes_out_as_its_head_and_length_and_short_lines_as_they_are():
    stream = io.StringIO("short\n" + "x" * 10_000 + "\nafter\n" + "y" * 5000)
    lines = list(_bounded_lines(stream, 1024))
    assert lines[0] == "short\n" and lines[2] == "after\n"
    assert lines[1].startswith(TOO_LONG) and "10001 characters" in lines[1] and len(lines[1]) < 300
    assert lines[3].startswith(TOO_LONG) and "5000 characters" in lines[3]  # no newline at the end either


def test_depth_is_measured_without_recursion():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert _deeper_than(deep, 64) and not _deeper_than({"a": [{"b": 1}]}, 3) and _deeper_than({"a": [{"b": {}}]}, 3)


@pytest.mark.system
def test_a_flood_and_a_deep_line_are_dropped_and_the_turn_reaches_its_result(
    project, fake_claude, claude_settings, turn, monkeypatch
):
    monkeypatch.setattr(claude_stream, "MAX_LINE", 64 * 1024)
    nested = "[" * 200_000 + "]" * 200_000
    shallow_deep = json.dumps({"type": "assistant", "x": json.loads("[" * 100 + "]" * 100)})
    behaviour = success(result="done", structured_output={"ok": True})
    behaviour["steps"] = [{"raw": nested}, {"raw": "z" * 300_000}, {"raw": shallow_deep}, *behaviour["steps"]]
    fake_claude.queue(behaviour)
    result = turn(build_executor("claude_code", settings=claude_settings), "coder")
    assert result.output == {"ok": True} and result.stop_reason not in ("timeout", "output_invalid"), result
