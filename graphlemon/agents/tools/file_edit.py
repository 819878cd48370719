"""Writing tools: write_file and edit_file (inside the writable paths of the role, judged after the change)."""

from __future__ import annotations

import ast
import difflib

from pydantic import Field

from ...errors import invalid_param
from ..tool_context import ToolContext
from .fs_guard import MAX_LINE_CHARS, ToolArgs, atomic_write, judged, make_parents, read_text
from .registry import tool

MAX_WRITE_BYTES = 2_000_000
EDIT_CONTEXT = 3


class WriteFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the project root (must be writable for this role).")
    content: str = Field(description="The whole new file content.")


def _render_write(result: dict) -> str:
    text = f"wrote {result['path']} ({result['bytes']} bytes, {result['lines']} lines)"
    return text + (f"\nwarning: {result['syntax_error']}" if result.get("syntax_error") else "")


@tool(
    "write_file",
    "Create or replace a whole file inside this turn's writable paths (folders are made as needed); to change part "
    "of a file use edit_file. A long file may be written in parts: the first with write_file, the rest with "
    "edit_file. A path outside the writable paths is refused and recorded; a Python file with a syntax error is "
    "written, with a warning naming the line.",
    render=_render_write,
)
def write_file(ctx: ToolContext, args: WriteFileArgs) -> dict:
    data = args.content.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        raise invalid_param(f"write_file: {len(data)} bytes is over the {MAX_WRITE_BYTES}-byte limit", path=args.path)
    real = ctx.sandbox.resolve_write(args.path)
    if real.is_dir():
        raise invalid_param(f"{args.path}: is a folder", path=args.path)
    with judged(ctx, "write_file"):
        make_parents(real, ctx.sandbox.root)
        atomic_write(real, data, ctx.sandbox.root)
    rel = ctx.sandbox.relative(real)
    ctx.files_changed.add(rel)
    out = {"path": rel, "bytes": len(data), "lines": args.content.count("\n") + (not args.content.endswith("\n"))}
    problem = _syntax_error(rel, args.content)
    if problem:
        out["syntax_error"] = problem
    return out


class EditFileArgs(ToolArgs):
    path: str
    old: str = Field(min_length=1, description="Exact text to replace, without read_file's line numbers.")
    new: str = Field(description="Replacement text.")
    replace_all: bool = Field(default=False, description="Replace every occurrence (else `old` must occur once).")


def _render_edit(result: dict) -> str:
    return f"edited {result['path']} ({result['replacements']} replacement(s)); now:\n{result['snippet']}"


@tool(
    "edit_file",
    "Replace an exact piece of text in a file inside this turn's writable paths: `old` must occur once (add "
    "surrounding lines to make it unique) unless replace_all is set; the result shows the changed lines in "
    "context. Not found: the error shows the nearest lines; found several times: their line numbers. An edit that "
    "changes nothing or breaks a Python file's syntax is refused, the file left as it was.",
    render=_render_edit,
)
def edit_file(ctx: ToolContext, args: EditFileArgs) -> dict:
    real = ctx.sandbox.resolve_write(args.path)
    if not real.is_file():
        raise invalid_param(f"{args.path}: no such file", path=args.path)
    if args.old == args.new:
        raise invalid_param(f"edit_file: old and new are the same text; nothing would change in {args.path}")
    text = read_text(ctx.sandbox.root, real, args.path)
    count = text.count(args.old)
    if count == 0:
        raise invalid_param(
            f"edit_file: the text to replace was not found in {args.path}. {_nearest(text, args.old)}", path=args.path
        )
    if count > 1 and not args.replace_all:
        lines = _occurrence_lines(text, args.old)
        raise invalid_param(
            f"edit_file: the text occurs {count} times in {args.path} (at lines {', '.join(map(str, lines))}); "
            "include more surrounding lines to make it unique, or set replace_all",
            path=args.path,
        )
    updated = text.replace(args.old, args.new)
    rel = ctx.sandbox.relative(real)
    problem = _syntax_error(rel, updated)
    if problem and not _syntax_error(rel, text):
        raise invalid_param(f"edit_file: refused, the edit would break {args.path}: {problem}", path=args.path)
    with judged(ctx, "edit_file"):
        atomic_write(real, updated.encode("utf-8"), ctx.sandbox.root)
    ctx.files_changed.add(rel)
    first = text[: text.index(args.old)].count("\n") + 1
    return {"path": rel, "replacements": count, "snippet": _snippet(updated, first, args.new.count("\n") + 1)}


def _syntax_error(rel: str, text: str) -> str | None:
    """A Python file's syntax error ('line N: message'), by Python's own parser; None for other files."""
    if not rel.endswith(".py"):
        return None
    try:
        compile(text, rel, "exec", dont_inherit=True, flags=ast.PyCF_ONLY_AST)
    except SyntaxError as exc:
        return f"Python syntax error at line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # NUL bytes
        return f"not valid Python source: {exc}"
    return None


def _occurrence_lines(text: str, old: str) -> list[int]:
    lines, start = [], text.find(old)
    while start != -1 and len(lines) < 20:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(old, start + 1)
    return lines


def _nearest(text: str, old: str) -> str:
    """The lines of the file most like the first line of `old`, numbered, to copy the exact text from."""
    wanted = next((line.strip() for line in old.splitlines() if line.strip()), old.strip())
    lines = text.splitlines()
    scored = sorted(
        (
            (difflib.SequenceMatcher(None, wanted, line.strip()).ratio(), i)
            for i, line in enumerate(lines)
            if line.strip()
        ),
        reverse=True,
    )[:1]
    if not scored or scored[0][0] < 0.4:
        return "No line resembles its first line: read the file again and copy the text exactly."
    return "The most similar lines (copy the text exactly, without the numbers):\n" + _snippet(
        text, scored[0][1] + 1, 1
    )


def _snippet(text: str, first: int, count: int) -> str:
    lines = text.splitlines()
    lo, hi = max(1, first - EDIT_CONTEXT), min(len(lines), first + count - 1 + EDIT_CONTEXT)
    width = len(str(hi))
    return "\n".join(f"{n:>{width}}\t{lines[n - 1][:MAX_LINE_CHARS]}" for n in range(lo, hi + 1))

