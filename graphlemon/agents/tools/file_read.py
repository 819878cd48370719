"""Reading tools: read_file, list_files, search_text (inside the sandbox root)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field

from ... import beneath
from ...errors import GraphLemonError, invalid_param
from ..sandbox import glob_match
from ..tool_context import ToolContext
from .bounded import TimedOut, in_child
from .fs_guard import MAX_LINE_CHARS, SKIP_DIRS, ToolArgs, read_text, walk_files
from .registry import tool

MAX_READ_CHARS = 100_000
MAX_SEARCH_FILE_BYTES = 2_000_000
MAX_SEARCH_FILES = 50
REGEX_SEARCH_S = float(os.environ.get("GRAPHLEMON_REGEX_SEARCH_S", "10"))  # a regex search's time limit


class ReadFileArgs(ToolArgs):
    path: str = Field(description="File (or folder) path relative to the project root.")
    offset: int = Field(default=1, ge=1, description="First line to return (1-based).")
    limit: int = Field(default=2000, ge=1, le=20_000, description="Maximum number of lines.")


def _render_read(result: dict) -> str:
    if "listing" in result:
        return f"{result['path']}/ is a folder (two levels; read a file inside it):\n" + "\n".join(result["listing"])
    start, end, total = result["start"], result["end"], result["total_lines"]
    more = f"; next offset {result['next_offset']}" if result["next_offset"] else " (end of file)"
    header = f"{result['path']}: lines {start}-{end} of {total}{more}"
    if total == 0:
        return f"{result['path']}: empty file"
    lines = result["content"].splitlines()
    width = len(str(end))
    body = "\n".join(
        f"{n:>{width}}\t{line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + ' … (line cut)'}"
        for n, line in enumerate(lines, start)
    )
    return f"{header}\n{body}"


@tool(
    "read_file",
    "Read a text file: numbered lines (`  12<TAB>text`) under 'path: lines a-b of n; next offset k'; read a long "
    "file in ranges (offset, limit). The numbers are not part of the file: leave them out of edit_file's old text. "
    "A folder gives a two-level listing; a missing path is an error naming it.",
    render=_render_read,
)
def read_file(ctx: ToolContext, args: ReadFileArgs) -> dict:
    real = ctx.sandbox.resolve_read(args.path)
    rel = ctx.sandbox.relative(real)
    kind = beneath.kind(ctx.sandbox.root, real)
    if kind == "dir":
        return {"path": rel, "listing": _listing(ctx.sandbox.root, real, depth=2)}
    if kind == "absent":
        raise invalid_param(f"{args.path}: no such file or folder", path=args.path)
    text = read_text(ctx.sandbox.root, real, args.path)
    lines = text.splitlines(keepends=True)
    chunk, end = "", args.offset - 1
    for line in lines[args.offset - 1 : args.offset - 1 + args.limit]:
        if chunk and len(chunk) + len(line) > MAX_READ_CHARS:
            break  # whole lines only: the next offset says where to go on
        chunk += line
        end += 1
    next_offset = end + 1 if end < len(lines) else None
    return {
        "path": rel,
        "content": chunk,
        "start": min(args.offset, max(len(lines), 1)),
        "end": end,
        "total_lines": len(lines),
        "next_offset": next_offset,
        "truncated": next_offset is not None,
    }


def _listing(root: Path, folder: Path, depth: int) -> list[str]:
    """Folders first, then files, `depth` levels; a deeper folder shows how many files it holds (links are neither
    followed nor shown)."""
    out: list[str] = []

    def walk(base: str, level: int) -> None:
        try:
            found = [e for e in beneath.entries(root, base) if e.name not in SKIP_DIRS and e.kind in ("dir", "file")]
        except (OSError, GraphLemonError):
            return
        for entry in sorted(found, key=lambda e: (e.kind != "dir", e.name)):
            pad, path = "  " * level, f"{base}/{entry.name}" if base else entry.name
            if entry.kind == "dir":
                if level + 1 < depth:
                    out.append(f"{pad}{entry.name}/")
                    walk(path, level + 1)
                else:
                    out.append(f"{pad}{entry.name}/ ({beneath.count_files(root, path)} files)")
            else:
                out.append(f"{pad}{entry.name}")

    walk(folder.relative_to(root).as_posix() if folder != root else "", 0)
    return out


class ListFilesArgs(ToolArgs):
    path: str = Field(default=".", description="Folder relative to the project root.")
    pattern: str = Field(default="**", description="Glob relative to `path` (`**` any depth, `*` one segment).")
    max_results: int = Field(default=300, ge=1, le=2_000)


def _render_list(result: dict) -> str:
    more = (
        f"\n… more files: narrow the folder or the pattern (showing {len(result['files'])})"
        if result["truncated"]
        else ""
    )
    return "\n".join(result["files"]) + more if result["files"] else "(no files match)"


@tool(
    "list_files",
    "List the files under a folder by a glob such as **/*.py. Git internals, dependencies and caches are skipped; "
    "read_file on a folder gives a two-level overview. A long list is cut with a note: narrow the folder or the "
    "pattern.",
    render=_render_list,
)
def list_files(ctx: ToolContext, args: ListFilesArgs) -> dict:
    base = ctx.sandbox.resolve_read(args.path)
    if beneath.kind(ctx.sandbox.root, base) != "dir":
        raise invalid_param(f"{args.path}: not a folder", path=args.path)
    files, truncated = [], False
    for rel_to_base, real in walk_files(ctx.sandbox.root, base):
        if glob_match(args.pattern, rel_to_base) or args.pattern in ("**", "**/*"):
            if len(files) >= args.max_results:
                truncated = True
                break
            files.append(ctx.sandbox.relative(real))
    return {"files": files, "truncated": truncated}


class SearchTextArgs(ToolArgs):
    pattern: str = Field(min_length=1, description="The text to find (literal, unless regex is true).")
    path: str = Field(default=".", description="File or folder relative to the project root.")
    glob: str = Field(default="**", description="Only files matching this glob (relative to `path`), e.g. `*.py`.")
    regex: bool = Field(default=False, description="Read the pattern as a Python regular expression.")
    ignore_case: bool = False
    context: int = Field(default=2, ge=0, le=10, description="Lines shown before and after each match.")
    max_results: int = Field(default=100, ge=1, le=1000, description="Matches at most, over all files.")


def _render_search(result: dict) -> str:
    if not result["files"]:
        return f"no match for {result['pattern']!r}"
    blocks = []
    for item in result["files"]:
        lines = [f"{item['path']}:"]
        previous = 0
        for n, text, hit in item["lines"]:
            if previous and n > previous + 1:
                lines.append("  --")
            lines.append(f"{n:>6}{':' if hit else '-'} {text}")
            previous = n
        blocks.append("\n".join(lines))
    note = ""
    if result["truncated"]:
        note = f"\n\n… more matches: narrow your search (a folder, a glob, a more specific pattern); showing {result['count']}"
    return "\n\n".join(blocks) + note


@tool(
    "search_text",
    "Search text files for a literal string (or a regex), like grep, to find where a name is defined or used. "
    "Matches come grouped by file, with line numbers and context (`12:` a match, `11-` context). Results are "
    "bounded: narrow the folder, the glob or the pattern when it says there are more.",
    render=_render_search,
)
def search_text(ctx: ToolContext, args: SearchTextArgs) -> dict:
    flags = re.IGNORECASE if args.ignore_case else 0
    try:
        regex = re.compile(args.pattern if args.regex else re.escape(args.pattern), flags)
    except re.error as exc:
        raise invalid_param(f"search_text: bad regular expression {args.pattern!r}: {exc}") from None
    if not args.regex:  # a literal pattern matches in linear time
        return _search(ctx, args, regex)
    try:  # a regular expression can backtrack for hours on one line: it runs in a child with a time limit
        return in_child(_search, ctx, args, regex, seconds=REGEX_SEARCH_S)
    except TimedOut:
        raise invalid_param(
            f"search_text: the regular expression {args.pattern!r} ran past {REGEX_SEARCH_S:g} s and was stopped "
            "(a repetition inside a repetition, like (a+)+, backtracks exponentially): search for a literal, or a "
            "simpler pattern",
            pattern=args.pattern,
        ) from None


def _search(ctx: ToolContext, args: SearchTextArgs, regex: re.Pattern) -> dict:
    base = ctx.sandbox.resolve_read(args.path)
    kind = beneath.kind(ctx.sandbox.root, base)
    targets = (
        [(base.name, base)] if kind == "file" else list(walk_files(ctx.sandbox.root, base)) if kind == "dir" else []
    )
    if not targets:
        raise invalid_param(f"{args.path}: no such file or folder", path=args.path)
    found, count, truncated = [], 0, False
    for rel_to_base, real in targets:
        if kind == "dir" and not glob_match(args.glob, rel_to_base) and args.glob not in ("**", "**/*"):
            continue
        try:
            lines = read_text(ctx.sandbox.root, real, rel_to_base, max_bytes=MAX_SEARCH_FILE_BYTES).splitlines()
        except (OSError, GraphLemonError):
            continue  # too large, not text, or no longer a regular file
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        if count + len(hits) > args.max_results or len(found) >= MAX_SEARCH_FILES:
            hits = hits[: max(0, args.max_results - count)] if len(found) < MAX_SEARCH_FILES else []
            truncated = True
        if hits:
            shown = sorted(
                {j for i in hits for j in range(max(0, i - args.context), min(len(lines), i + args.context + 1))}
            )
            found.append({
                "path": ctx.sandbox.relative(real),
                "lines": [(j + 1, lines[j][:500], j in hits) for j in shown],
            })  # fmt: skip
            count += len(hits)
        if truncated:
            break
    matches = [{"path": f["path"], "line": n, "text": t} for f in found for n, t, hit in f["lines"] if hit]
    return {"pattern": args.pattern, "files": found, "matches": matches, "count": count, "truncated": truncated}
