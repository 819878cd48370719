"""Helpers shared by the parsers: JSON lines, error-line picking, failure construction."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ...test_counts import TestSummary
from ..assertions import Compared, compared_in, settled
from ..output_text import clip
from ..result_models import Operands, TestFailure, ValueGrammar

MESSAGE_CHARS = 600
UNNAMED = "(unnamed test)"
DETAIL_CHARS = 8000


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """Each line of `text` that is a JSON object; anything else (a torn last line) is skipped."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def make_failure(
    name: str,
    *,
    file: str | None = None,
    line: int | None = None,
    message: str = "",
    detail: str = "",
    expected: str | None = None,
    got: str | None = None,
    grammar: ValueGrammar = "any",
    compared: Compared | None = None,
    declared: bool = False,
) -> TestFailure:
    """A failure with a clipped message and its compared values, with what the reporter says about them.

    `expected`/`got`: the reporter's labelled values (written in `grammar`); `compared`: two operands with
    the reporter's sides (or none); neither: read from the message in any known dialect (not from the
    detail, which may quote source code: `assert f(x) == 0` above a ZeroDivisionError). A Python assertion
    the runner printed in the detail may settle which operand is expected. `declared`: `line` is where the test
    is declared, not the failing check.
    """
    operands = None
    if expected is None and got is None:
        compared = compared or compared_in(message or detail)
        if compared is not None:
            expected, got, operands = settled(compared, detail or message)
    else:
        operands = Operands(grammar=grammar)
    return TestFailure(
        name=name if name.strip() else UNNAMED,  # verbatim, as its case: a test named " -> " keeps its spaces
        file=file or None,
        line=line if isinstance(line, int) and line > 0 else None,
        message=clip(message or detail or "failed (no message)", MESSAGE_CHARS),
        expected=expected,
        got=got,
        detail=clip(detail or message, DETAIL_CHARS),
        operands=operands,
        declared=declared and bool(line),
    )


_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception|Exit|Interrupt)|panic|thread '.*' panicked|error(?:\[\w+\])?)\b.*", re.M
)


def first_paragraph(text: str, max_lines: int = 6) -> str:
    """The first block of non-empty lines: the message a runner prints above its code frame."""
    lines: list[str] = []
    for line in text.strip().splitlines():
        if not line.strip() or re.match(r"^\s*>?\s*\d+ \|", line):
            if lines:
                break
            continue
        lines.append(line.strip())
    return "\n".join(lines[:max_lines])


def error_summary(text: str, max_lines: int = 6) -> str:
    """The lines of an error text a reader needs: `E ` lines (pytest), else error-looking lines, else the tail."""
    lines = text.strip().splitlines()
    e_lines = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    if e_lines:
        return "\n".join(e_lines[:max_lines])
    errors = [m.group(0).strip() for m in _ERROR_LINE.finditer(text)]
    if errors:
        return "\n".join(errors[-max_lines:])
    return "\n".join(ln for ln in lines[-max_lines:] if ln.strip())


# lines that say why a run failed although no test did: a coverage threshold (jest, nyc/c8, vitest), no tests
_WHY = re.compile(
    r"coverage threshold|does not meet (?:the )?(?:global )?threshold|coverage for \w+ \([\d.]+%\) does not meet|"
    r"No tests? (?:files )?found|no test files|No test suite found|Missing script|ERR!|^\s*(?:ERROR|Error):",
    re.I | re.M,
)
LAST_LINES = 8


def run_failure_message(output: str, exit_code: int | None, max_lines: int = LAST_LINES) -> str:
    """Why a run failed although no test failed: the lines that say why (a coverage threshold, no tests found,
    error lines), then the runner's last lines."""
    lines = [ln.rstrip() for ln in output.strip().splitlines() if ln.strip()]
    said = [m.group(0).strip() for m in _ERROR_LINE.finditer(output)] + [ln.strip() for ln in lines if _WHY.search(ln)]
    why = list(dict.fromkeys(said))[-max_lines:]
    last = [ln for ln in lines[-max_lines:] if ln.strip() not in why]
    parts = [*why, *(["…", *last] if why and last else last)]
    return "\n".join(parts) or f"exited with code {exit_code} and no test failed"


_SKIP_WORDS = ("skipped", "todo", "pending", "ignored", "xfailed")
_PASS_WORDS = ("passed", "passing", "xpassed")
_FAIL_WORDS = ("failed", "failing", "errors", "error")


def summary_from_words(text: str) -> TestSummary:
    """Counts from a closing line such as `3 failed | 5 passed | 1 todo (10)` or `2 passing, 1 failing`."""
    passed = failed = skipped = 0
    for number, word in re.findall(r"(\d+) ([a-z]+)", text):
        if word in _PASS_WORDS:
            passed += int(number)
        elif word in _FAIL_WORDS:
            failed += int(number)
        elif word in _SKIP_WORDS:
            skipped += int(number)
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)
