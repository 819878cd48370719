"""File tools: read_file, list_files, search_text, write_file, edit_file, apply_patch (all sandboxed)."""

from __future__ import annotations

import ast
import difflib
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ... import gitrun
from ...errors import ErrorCode, GraphLemonError, invalid_param
from ..effects import TreeGuard, violation
from ..sandbox import glob_match
from ..tool_context import ToolContext
from .registry import tool

MAX_READ_CHARS = 100_000
MAX_LINE_CHARS = 2_000  # a longer line is cut in the numbered view
MAX_WRITE_BYTES = 2_000_000
MAX_SEARCH_FILE_BYTES = 2_000_000
MAX_SEARCH_FILES = 50
EDIT_CONTEXT = 3
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache"})


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileArgs(_Args):
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
    "Read a text file of the project: the lines come back numbered (`  12<TAB>text`) under a header 'path: lines "
    "a-b of n; next offset k'. Read a long file in ranges with offset and limit, following the next offset. The "
    "numbers are not part of the file: leave them out of edit_file's old text. A folder gives a two-level listing "
    "instead; a missing path is an error naming it.",
    render=_render_read,
)
def read_file(ctx: ToolContext, args: ReadFileArgs) -> dict:
    real = ctx.sandbox.resolve_read(args.path)
    rel = ctx.sandbox.relative(real)
    if real.is_dir():
        return {"path": rel, "listing": _listing(real, depth=2)}
    if not real.is_file():
        raise invalid_param(f"{args.path}: no such file or folder", path=args.path)
    text = _read_text(real, args.path)
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


def _listing(folder: Path, depth: int) -> list[str]:
    """Folders first, then files, `depth` levels; a deeper folder shows how many files it holds."""
    out: list[str] = []

    def walk(base: Path, level: int) -> None:
        try:
            entries = sorted(
                (e for e in os.scandir(base) if e.name not in SKIP_DIRS and not e.is_symlink()),
                key=lambda e: (not e.is_dir(), e.name),
            )
        except OSError:
            return
        for entry in entries:
            pad = "  " * level
            if entry.is_dir():
                if level + 1 < depth:
                    out.append(f"{pad}{entry.name}/")
                    walk(Path(entry.path), level + 1)
                else:
                    count = sum(len(files) for _, _, files in os.walk(entry.path))
                    out.append(f"{pad}{entry.name}/ ({count} files)")
            else:
                out.append(f"{pad}{entry.name}")

    walk(folder, 0)
    return out


class ListFilesArgs(_Args):
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
    "List the files under a folder of the project (paths relative to the project root), filtered by a glob such "
    "as **/*.py. Use it to find files by name; read_file on a folder gives a quicker two-level overview. Git "
    "internals, dependencies and caches are skipped. A long list is cut with a note: narrow the folder or the "
    "pattern.",
    render=_render_list,
)
def list_files(ctx: ToolContext, args: ListFilesArgs) -> dict:
    base = ctx.sandbox.resolve_read(args.path)
    if not base.is_dir():
        raise invalid_param(f"{args.path}: not a folder", path=args.path)
    files, truncated = [], False
    for rel_to_base, real in _walk(base):
        if glob_match(args.pattern, rel_to_base) or args.pattern in ("**", "**/*"):
            if len(files) >= args.max_results:
                truncated = True
                break
            files.append(ctx.sandbox.relative(real))
    return {"files": files, "truncated": truncated}


class SearchTextArgs(_Args):
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
    "Search the project's text files for a literal string (set regex for a regular expression), like grep. "
    "Matches come back grouped by file, with line numbers and a few lines of context (`12:` a match, `11-` "
    "context). Use it to find where a name is defined or used before you read or edit. Results are bounded: "
    "narrow the folder, the glob or the pattern when it says there are more.",
    render=_render_search,
)
def search_text(ctx: ToolContext, args: SearchTextArgs) -> dict:
    flags = re.IGNORECASE if args.ignore_case else 0
    try:
        regex = re.compile(args.pattern if args.regex else re.escape(args.pattern), flags)
    except re.error as exc:
        raise invalid_param(f"search_text: bad regular expression {args.pattern!r}: {exc}") from None
    base = ctx.sandbox.resolve_read(args.path)
    targets = [(base.name, base)] if base.is_file() else list(_walk(base)) if base.is_dir() else []
    if not targets:
        raise invalid_param(f"{args.path}: no such file or folder", path=args.path)
    found, count, truncated = [], 0, False
    for rel_to_base, real in targets:
        if base.is_dir() and not glob_match(args.glob, rel_to_base) and args.glob not in ("**", "**/*"):
            continue
        if real.stat().st_size > MAX_SEARCH_FILE_BYTES:
            continue
        try:
            lines = real.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
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


class WriteFileArgs(_Args):
    path: str = Field(description="File path relative to the project root (must be writable for this role).")
    content: str = Field(description="The whole new file content.")


def _render_write(result: dict) -> str:
    text = f"wrote {result['path']} ({result['bytes']} bytes, {result['lines']} lines)"
    return text + (f"\nwarning: {result['syntax_error']}" if result.get("syntax_error") else "")


@tool(
    "write_file",
    "Create a file, or replace a whole file, inside this turn's writable paths (the SANDBOX section); folders are "
    "created as needed. Use it for new files; to change part of an existing file use edit_file, which is shorter "
    "and safer. A long file may be written in parts: write the first part, then add the rest with edit_file. A "
    "path outside the writable paths is refused and recorded; a Python file with a syntax error is written, with "
    "a warning naming the line.",
    render=_render_write,
)
def write_file(ctx: ToolContext, args: WriteFileArgs) -> dict:
    data = args.content.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        raise invalid_param(f"write_file: {len(data)} bytes is over the {MAX_WRITE_BYTES}-byte limit", path=args.path)
    real = ctx.sandbox.resolve_write(args.path)
    if real.is_dir():
        raise invalid_param(f"{args.path}: is a folder", path=args.path)
    with _judged(ctx, "write_file"):
        _make_parents(real, ctx.sandbox.root)
        _atomic_write(real, data, ctx.sandbox.root)
    rel = ctx.sandbox.relative(real)
    ctx.files_changed.add(rel)
    out = {"path": rel, "bytes": len(data), "lines": args.content.count("\n") + (not args.content.endswith("\n"))}
    problem = _syntax_error(rel, args.content)
    if problem:
        out["syntax_error"] = problem
    return out


class EditFileArgs(_Args):
    path: str
    old: str = Field(min_length=1, description="Exact text to replace, without read_file's line numbers.")
    new: str = Field(description="Replacement text.")
    replace_all: bool = Field(default=False, description="Replace every occurrence (else `old` must occur once).")


def _render_edit(result: dict) -> str:
    return f"edited {result['path']} ({result['replacements']} replacement(s)); now:\n{result['snippet']}"


@tool(
    "edit_file",
    "Replace an exact piece of text in a file inside this turn's writable paths: `old` must occur exactly once "
    "(include a few surrounding lines to make it unique) unless replace_all is set. The result shows the changed "
    "lines with line numbers and context. When `old` is not found the error shows the nearest lines; when it "
    "occurs several times the error lists their line numbers. An edit that changes nothing, or that breaks a "
    "Python file's syntax, is refused and the file is left as it was.",
    render=_render_edit,
)
def edit_file(ctx: ToolContext, args: EditFileArgs) -> dict:
    real = ctx.sandbox.resolve_write(args.path)
    if not real.is_file():
        raise invalid_param(f"{args.path}: no such file", path=args.path)
    if args.old == args.new:
        raise invalid_param(f"edit_file: old and new are the same text; nothing would change in {args.path}")
    text = _read_text(real, args.path)
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
    with _judged(ctx, "edit_file"):
        _atomic_write(real, updated.encode("utf-8"), ctx.sandbox.root)
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


class ApplyPatchArgs(_Args):
    diff: str = Field(min_length=1, description="A unified diff (git diff format, paths a/... b/...).")


@tool(
    "apply_patch",
    "Apply a unified diff in git's format (`--- a/path`, `+++ b/path`, `@@` hunks with context lines) to files "
    "inside this turn's writable paths. Use it for several related changes at once; for one change edit_file is "
    "simpler. The whole diff applies or nothing does: a hunk whose context does not match, or headers without "
    "the a/ and b/ prefixes, is a format error that names the problem. A diff touching a path outside the "
    "writable paths is refused and recorded.",
)
def apply_patch(ctx: ToolContext, args: ApplyPatchArgs) -> dict:
    diff = args.diff if args.diff.endswith("\n") else args.diff + "\n"
    _check_headers(diff)
    touched = patch_effects(diff, ctx.sandbox.root)
    if not touched.paths:
        raise invalid_param("apply_patch: the diff changes no file")
    _check_patch(ctx, touched)
    with _judged(ctx, "apply_patch"):
        _git_apply(ctx.sandbox.root, diff)
    ctx.files_changed.update(touched.paths)
    return {"files": touched.paths}


def _check_headers(diff: str) -> None:
    """A unified diff's file header lines (`--- ` / `+++ `) name a/ and b/ paths (or /dev/null), as git diff writes
    them; without the prefixes git would strip a real folder off each path. That is a format error, said as one."""
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")):
            name = line[4:].split("\t", 1)[0].strip().strip('"')
            if name != "/dev/null" and not name.startswith(("a/", "b/")):
                raise invalid_param(
                    f"apply_patch: format error: the header {line.strip()!r} needs the a/ or b/ prefix "
                    f"(--- a/{name}, +++ b/{name}), as git diff writes it"
                )


@dataclass
class PatchEffects:
    """What `git apply` itself says a diff would do (never a header parser of ours)."""

    paths: list[str] = field(default_factory=list)  # every path created, changed, renamed from/to or deleted
    binary: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)  # git's summary lines that set a mode ("create mode 100755 x")


def patch_effects(diff: str, root: Path) -> PatchEffects:
    """Ask `git apply --numstat --summary` which paths the diff touches, which are binary, which modes it sets."""
    numstat = _git_apply(root, diff, "--numstat", "-z").split("\0")
    out, i = PatchEffects(), 0
    while i < len(numstat):
        entry = numstat[i]
        i += 1
        if not entry.strip():
            continue
        added, deleted, path = (entry.split("\t", 2) + ["", ""])[:3]
        names = [path] if path else numstat[i : i + 2]  # a rename/copy: the two names follow
        i += 0 if path else 2
        for name in names:
            if name and name not in out.paths:
                out.paths.append(name)
            if added == "-" and deleted == "-" and name and name not in out.binary:
                out.binary.append(name)
    for line in _git_apply(root, diff, "--summary").splitlines():
        line = line.strip()
        if line.startswith(("create mode", "delete mode", "mode change")):
            out.modes.append(line)
    return out


def _check_patch(ctx: ToolContext, touched: PatchEffects) -> None:
    policy = ctx.sandbox.policy
    for path in touched.paths:
        ctx.sandbox.resolve_write(path)
        if os.path.islink(ctx.sandbox.root / path):
            raise _refused(path, "is a symlink; an existing link is treated as a path that leaves the sandbox")
    for line in touched.modes:
        if " 120000 " in f" {line} ":
            raise _refused(line.rsplit(" ", 1)[-1], f"patches may not create or change symlinks ({line})")
        if line.startswith("mode change") and not policy.allow_mode_change:
            raise _refused(line.rsplit(" ", 1)[-1], f"this role may not change file modes ({line})")
        if line.startswith("create mode 100755") and not policy.allow_mode_change:
            raise _refused(line.rsplit(" ", 1)[-1], f"this role may not create executable files ({line})")
    if touched.binary and not policy.allow_binary:
        raise _refused(touched.binary[0], f"binary patches are not allowed for this role ({', '.join(touched.binary)})")


def _refused(path: str, why: str) -> GraphLemonError:
    return GraphLemonError(ErrorCode.SANDBOX_VIOLATION, f"sandbox: apply_patch refused: {path!r} {why}", path=path)


def _git_apply(root: Path, diff: str, *options: str) -> str:
    """`git apply` in the sandbox root (never a repository above it); options like --numstat only report."""
    ceiling = {"GIT_CEILING_DIRECTORIES": str(root.parent)}  # paths are relative to the sandbox root
    proc = gitrun.git(root, "apply", "--whitespace=nowarn", *options, "-", input=diff.encode("utf-8"), check=False,
                      env=ceiling, timeout=60)  # fmt: skip
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", errors="replace").strip()[:2000]
        raise invalid_param(f"apply_patch: the diff does not apply: {detail}")
    return proc.stdout.decode("utf-8", errors="surrogateescape")


@contextmanager
def _judged(ctx: ToolContext, tool_name: str) -> Iterator[None]:
    """Run a change, then compare the work tree with git's eyes: anything this role may not change is reverted
    and the call fails with SANDBOX_VIOLATION (recorded by the registry)."""
    guard = TreeGuard(ctx.sandbox)
    try:
        yield
    finally:
        refusals = guard.judge()
    if refusals:
        raise violation(tool_name, refusals)


# -- helpers ---------------------------------------------------------------------------------


def _walk(base: Path):
    """(path relative to base, real path) of regular files, not following symlinked folders."""
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            real = Path(dirpath) / name
            if real.is_symlink() or not real.is_file():
                continue
            yield real.relative_to(base).as_posix(), real


def _read_text(real: Path, shown: str) -> str:
    try:
        return real.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise invalid_param(f"{shown}: not a UTF-8 text file", path=shown) from None


def _make_parents(real: Path, root: Path) -> None:
    """Create the missing folders of `real`, never through a symlink, never outside `root`."""
    folder = real.parent
    missing = []
    while not folder.exists() and not folder.is_symlink() and folder != root:
        missing.append(folder)
        folder = folder.parent
    for part in reversed(missing):
        os.mkdir(part)
    _check_parent(real, root)


def _check_parent(real: Path, root: Path) -> None:
    """The folder of `real` is a real folder inside `root` (no symlink anywhere on the way)."""
    parent = real.parent
    if os.path.realpath(parent) != str(parent) or (parent != root and root not in parent.parents):
        raise GraphLemonError(
            ErrorCode.SANDBOX_VIOLATION, f"sandbox: the folder of {real.name!r} leaves the sandbox", path=str(real)
        )


def _atomic_write(real: Path, data: bytes, root: Path) -> None:
    """Write through an unpredictable temporary file (O_EXCL | O_NOFOLLOW, via mkstemp) beside `real`, then
    rename it over `real` (a rename replaces a symlink, it never writes through one)."""
    _check_parent(real, root)
    mode = os.lstat(real).st_mode & 0o7777 if real.is_file() and not real.is_symlink() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".graphlemon-tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        _check_parent(real, root)
        os.replace(tmp, real)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    """The process umask, read without changing it (os.umask would race with other threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022
