"""Functions in the units' code: which unit defines `f`, and its `return` lines.

`definitions(ctx, name)` reads every unit's Python code (under the integration worktree when the run has one)
with `ast` for `def f` / `async def f`; a file that does not parse is read line by line for the `def`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .code_records import SourceFile
from .run_context import RunContext


@dataclass(frozen=True)
class Definition:
    """Where unit `unit_id` defines function `name`."""

    unit_id: str
    rel: str
    line: int
    returns: tuple[int, ...] = ()  # lines of its own `return` statements
    top_level: bool = True


def definitions(ctx: RunContext, name: str) -> list[Definition]:
    """Every definition of `name` in the units' Python code, top-level ones first."""
    out = [d for unit_id, files in ctx.code.items() for src in files if src.rel.endswith(".py")
           for d in _python_defs(unit_id, src, name)]  # fmt: skip
    return sorted(out, key=lambda d: not d.top_level)


def owner(ctx: RunContext, name: str, involves: list[str]) -> Definition | None:
    """The one unit that defines `name` (an involved unit first; top-level before methods), else None."""
    found = definitions(ctx, name)
    for pool in ([d for d in found if d.unit_id in involves], found):
        units = {d.unit_id for d in pool if d.top_level} or {d.unit_id for d in pool}
        if len(units) == 1:
            unit = units.pop()
            return next(d for d in pool if d.unit_id == unit)
        if len(units) > 1:
            return None
    return None


def _python_defs(unit_id: str, src: SourceFile, name: str) -> list[Definition]:
    if not re.search(rf"def\s+{re.escape(name)}\b", src.text):
        return []
    try:
        tree = ast.parse(src.text)
    except (SyntaxError, ValueError, RecursionError):
        return [
            Definition(unit_id, src.rel, i, top_level=not line[:1].isspace())
            for i, line in enumerate(src.lines, 1)
            if re.match(rf"\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", line)
        ]
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            returns = tuple(n.lineno for n in ast.walk(node) if isinstance(n, ast.Return) and _own(node, n))
            out.append(Definition(unit_id, src.rel, node.lineno, returns, id(node) in top))
    return out


def _own(fn: ast.AST, ret: ast.Return) -> bool:
    """`ret` belongs to `fn` itself, not to a function nested inside it."""
    for node in ast.walk(fn):
        if node is not fn and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            if any(n is ret for n in ast.walk(node)):
                return False
    return True
