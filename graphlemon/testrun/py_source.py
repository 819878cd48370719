"""Which operand of a Python assertion the test's own source shows to be expected, read from the project.

A traceback quotes one line of each frame, so an assertion written over several lines
(`self.assertAlmostEqual(timeparse('2:04'),\n    187982.266)`) is not settled by the printed text
(`assertions.settled`); its whole statement, read from the test file at the failure's own line, is. The same
premises decide: names such as `expected` / `result`, one literal (or a builtin of literals) against a
computed value, a constant against a call (`assertions.expected_operand`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from .assertions import assertion_operands, expected_operand
from .hint_context import project_lines

_MAX_LINES = 30  # a statement is read from its first line over at most this many lines


def expected_operand_at(root: Path | None, file: str | None, line: int | None) -> int | None:
    """Which operand (0, 1) of the assertion statement starting at `file:line` is expected; None when the line
    starts no `assert a == b` / `self.assert…Equal(a, b)` statement, its operands do not say, or the file
    cannot be read."""
    lines = project_lines(root, file) if line and (file or "").endswith(".py") else None  # inside the project, readable
    if lines is None or not 0 < line <= len(lines) or not lines[line - 1].strip():
        return None
    for end in range(line, min(len(lines), line - 1 + _MAX_LINES) + 1):
        code = textwrap.dedent("\n".join(lines[line - 1 : end]))
        operands = assertion_operands(code)
        if operands is not None:
            return expected_operand(operands)
    return None
