"""File tools: read_file, list_files, search_text, write_file, edit_file, apply_patch (all sandboxed)."""

from __future__ import annotations

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
    with _judged(ctx, "write_file"):
        _make_parents(real, ctx.sandbox.root)
        _atomic_write(real, data, ctx.sandbox.root)
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
    with _judged(ctx, "edit_file"):
        _atomic_write(real, text.replace(args.old, args.new).encode("utf-8"), ctx.sandbox.root)
    rel = ctx.sandbox.relative(real)
    ctx.files_changed.add(rel)
    return {"path": rel, "replacements": count}


class ApplyPatchArgs(_Args):
    diff: str = Field(min_length=1, description="A unified diff (git diff format, paths a/... b/...).")


@tool("apply_patch", "Apply a unified diff; every file it touches must be writable for this role.")
def apply_patch(ctx: ToolContext, args: ApplyPatchArgs) -> dict:
    diff = args.diff if args.diff.endswith("\n") else args.diff + "\n"
    touched = patch_effects(diff, ctx.sandbox.root)
    if not touched.paths:
        raise invalid_param("apply_patch: the diff changes no file")
    _check_patch(ctx, touched)
    with _judged(ctx, "apply_patch"):
        _git_apply(ctx.sandbox.root, diff)
    ctx.files_changed.update(touched.paths)
    return {"files": touched.paths}


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
