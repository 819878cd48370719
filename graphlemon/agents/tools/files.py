"""File tools: read_file, list_files, search_text, write_file, edit_file, apply_patch (all sandboxed)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...errors import ErrorCode, GraphLemonError, invalid_param
from ..context import ToolContext
from ..sandbox import glob_match
from .registry import tool

MAX_READ_CHARS = 100_000
MAX_WRITE_BYTES = 2_000_000
MAX_SEARCH_FILE_BYTES = 2_000_000
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache"})


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileArgs(_Args):
    path: str = Field(description="File path relative to the project root.")
    offset: int = Field(default=1, ge=1, description="First line to return (1-based).")
    limit: int = Field(default=2000, ge=1, le=20_000, description="Maximum number of lines.")


@tool("read_file", "Read a text file inside the project (numbered lines are not added).")
def read_file(ctx: ToolContext, args: ReadFileArgs) -> dict:
    real = ctx.sandbox.resolve_read(args.path)
    if not real.is_file():
        raise invalid_param(f"{args.path}: no such file", path=args.path)
    text = _read_text(real, args.path)
    lines = text.splitlines(keepends=True)
    chunk = "".join(lines[args.offset - 1 : args.offset - 1 + args.limit])
    truncated = len(chunk) > MAX_READ_CHARS or args.offset - 1 + args.limit < len(lines)
    return {
        "path": ctx.sandbox.relative(real),
        "content": chunk[:MAX_READ_CHARS],
        "total_lines": len(lines),
        "truncated": truncated,
    }


class ListFilesArgs(_Args):
    path: str = Field(default=".", description="Folder relative to the project root.")
    pattern: str = Field(default="**", description="Glob relative to `path` (`**` any depth, `*` one segment).")
    max_results: int = Field(default=1000, ge=1, le=10_000)


@tool("list_files", "List files under a folder of the project, filtered by a glob.")
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
    pattern: str = Field(min_length=1, description="A Python regular expression.")
    path: str = Field(default=".", description="File or folder relative to the project root.")
    glob: str = Field(default="**", description="Only files matching this glob (relative to `path`).")
    ignore_case: bool = False
    max_results: int = Field(default=200, ge=1, le=5000)


@tool("search_text", "Search files for a regular expression; returns path, line number and line text.")
def search_text(ctx: ToolContext, args: SearchTextArgs) -> dict:
    try:
        regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
    except re.error as exc:
        raise invalid_param(f"search_text: bad regular expression {args.pattern!r}: {exc}") from None
    base = ctx.sandbox.resolve_read(args.path)
    targets = [(base.name, base)] if base.is_file() else list(_walk(base)) if base.is_dir() else []
    if not targets:
        raise invalid_param(f"{args.path}: no such file or folder", path=args.path)
    matches, truncated = [], False
    for rel_to_base, real in targets:
        if base.is_dir() and not glob_match(args.glob, rel_to_base) and args.glob not in ("**", "**/*"):
            continue
        if real.stat().st_size > MAX_SEARCH_FILE_BYTES:
            continue
        try:
            text = real.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if regex.search(line):
                if len(matches) >= args.max_results:
                    truncated = True
                    break
                matches.append({"path": ctx.sandbox.relative(real), "line": lineno, "text": line[:500]})
        if truncated:
            break
    return {"matches": matches, "truncated": truncated}


class WriteFileArgs(_Args):
    path: str = Field(description="File path relative to the project root (must be writable for this role).")
    content: str = Field(description="The whole new file content.")


@tool("write_file", "Create or overwrite a file inside this role's writable paths.")
def write_file(ctx: ToolContext, args: WriteFileArgs) -> dict:
    data = args.content.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        raise invalid_param(f"write_file: {len(data)} bytes is over the {MAX_WRITE_BYTES}-byte limit", path=args.path)
    real = ctx.sandbox.resolve_write(args.path)
    if real.is_dir():
        raise invalid_param(f"{args.path}: is a folder", path=args.path)
    real.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(real, data)
    rel = ctx.sandbox.relative(real)
    ctx.files_changed.add(rel)
    return {"path": rel, "bytes": len(data)}


class EditFileArgs(_Args):
    path: str
    old: str = Field(min_length=1, description="Exact text to replace (must occur once unless replace_all).")
    new: str = Field(description="Replacement text.")
    replace_all: bool = False


@tool("edit_file", "Replace an exact piece of text in a file inside this role's writable paths.")
def edit_file(ctx: ToolContext, args: EditFileArgs) -> dict:
    real = ctx.sandbox.resolve_write(args.path)
    if not real.is_file():
        raise invalid_param(f"{args.path}: no such file", path=args.path)
    text = _read_text(real, args.path)
    count = text.count(args.old)
    if count == 0:
        raise invalid_param(f"edit_file: the text to replace was not found in {args.path}", path=args.path)
    if count > 1 and not args.replace_all:
        raise invalid_param(
            f"edit_file: the text occurs {count} times in {args.path}; give more context or set replace_all",
            path=args.path,
        )
    _atomic_write(real, text.replace(args.old, args.new).encode("utf-8"))
    rel = ctx.sandbox.relative(real)
    ctx.files_changed.add(rel)
    return {"path": rel, "replacements": count}


class ApplyPatchArgs(_Args):
    diff: str = Field(min_length=1, description="A unified diff (git diff format, paths a/... b/...).")


@tool("apply_patch", "Apply a unified diff; every file it touches must be writable for this role.")
def apply_patch(ctx: ToolContext, args: ApplyPatchArgs) -> dict:
    paths = patch_paths(args.diff)
    if not paths:
        raise invalid_param("apply_patch: no file headers found in the diff")
    if re.search(r"^(new file mode|new mode|old mode|deleted file mode) 120000", args.diff, re.M):
        raise GraphLemonError(ErrorCode.SANDBOX_VIOLATION, "sandbox: patches may not create or change symlinks")
    for path in paths:
        ctx.sandbox.resolve_write(path)
    root = ctx.sandbox.root
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(root.parent)}  # paths are relative to the sandbox root
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    proc = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-"],
        cwd=root,
        input=args.diff if args.diff.endswith("\n") else args.diff + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    if proc.returncode != 0:
        raise invalid_param(f"apply_patch: the diff does not apply: {proc.stderr.strip()[:2000]}")
    ctx.files_changed.update(paths)
    return {"files": paths}


def patch_paths(diff: str) -> list[str]:
    """Every path a unified diff creates, changes, renames or deletes (without a/ b/ prefixes)."""
    found: list[str] = []
    for line in diff.splitlines():
        m = re.match(r"^(?:---|\+\+\+) (?:[ab]/)?(.+?)(?:\t.*)?$", line) or re.match(
            r"^(?:rename|copy) (?:from|to) (.+)$", line
        )
        if m and m.group(1) != "/dev/null" and m.group(1) not in found:
            found.append(m.group(1).strip())
    return found


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


def _atomic_write(real: Path, data: bytes) -> None:
    tmp = real.with_name(f".{real.name}.graphlemon-tmp")
    tmp.write_bytes(data)
    if real.exists():
        os.chmod(tmp, real.stat().st_mode & 0o7777)
    os.replace(tmp, real)
