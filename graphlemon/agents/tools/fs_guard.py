"""The file tools' safe steps: walking a tree, reading text, creating folders and writing files inside the
sandbox root without following a symlink, and judging a change with git's eyes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ... import beneath
from ...errors import ErrorCode, GraphLemonError, invalid_param
from ..effects import TreeGuard, violation
from ..tool_context import ToolContext

MAX_LINE_CHARS = 2_000  # a longer line is cut in a numbered view
MAX_READ_BYTES = 64 * 1024 * 1024  # the largest file a tool reads
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache"})


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


@contextmanager
def judged(ctx: ToolContext, tool_name: str) -> Iterator[None]:
    """Run a change, then compare the work tree with git's eyes: anything this role may not change is reverted
    and the call fails with SANDBOX_VIOLATION (recorded by the registry)."""
    guard = TreeGuard(ctx.sandbox)
    try:
        yield
    finally:
        refusals = guard.judge()
    if refusals:
        raise violation(tool_name, refusals)




def walk_files(root: Path, base: Path):
    """(path relative to base, real path) of regular files below `base` (inside `root`), through the safe reader:
    no link is followed, folders in SKIP_DIRS are not entered."""
    files, _ = beneath.walk_files(root, base, skip=SKIP_DIRS)
    prefix = base.relative_to(root).as_posix() if base != root else ""
    for rel in files:
        yield (rel[len(prefix) + 1 :] if prefix else rel), root / rel


def read_text(root: Path, real: Path, shown: str, *, max_bytes: int = MAX_READ_BYTES) -> str:
    """A text file of the work tree, through the safe reader (a link or a FIFO is a SANDBOX_VIOLATION, recorded by
    the registry); a file over `max_bytes` is IO_ERROR."""
    try:
        return beneath.read_text(root, real, max_bytes=max_bytes)
    except UnicodeDecodeError:
        raise invalid_param(f"{shown}: not a UTF-8 text file", path=shown) from None


def make_parents(real: Path, root: Path) -> None:
    """Create the missing folders of `real`, never through a symlink, never outside `root`."""
    folder = real.parent
    missing = []
    while not folder.exists() and not folder.is_symlink() and folder != root:
        missing.append(folder)
        folder = folder.parent
    for part in reversed(missing):
        os.mkdir(part)
    check_parent(real, root)


def check_parent(real: Path, root: Path) -> None:
    """The folder of `real` is a real folder inside `root` (no symlink anywhere on the way)."""
    parent = real.parent
    if os.path.realpath(parent) != str(parent) or (parent != root and root not in parent.parents):
        raise GraphLemonError(
            ErrorCode.SANDBOX_VIOLATION, f"sandbox: the folder of {real.name!r} leaves the sandbox", path=str(real)
        )


def atomic_write(real: Path, data: bytes, root: Path) -> None:
    """Write through an unpredictable temporary file (O_EXCL | O_NOFOLLOW, via mkstemp) beside `real`, then
    rename it over `real` (a rename replaces a symlink, it never writes through one)."""
    check_parent(real, root)
    mode = os.lstat(real).st_mode & 0o7777 if real.is_file() and not real.is_symlink() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".graphlemon-tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        check_parent(real, root)
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
