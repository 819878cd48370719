"""The file tools' safe steps: walking a tree, reading text, creating folders and writing files inside the
sandbox root without following a symlink, and judging a change with git's eyes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ...errors import ErrorCode, GraphLemonError, invalid_param
from ..effects import TreeGuard, violation
from ..tool_context import ToolContext

MAX_LINE_CHARS = 2_000  # a longer line is cut in a numbered view
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




def walk_files(base: Path):
    """(path relative to base, real path) of regular files, not following symlinked folders."""
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            real = Path(dirpath) / name
            if real.is_symlink() or not real.is_file():
                continue
            yield real.relative_to(base).as_posix(), real


def read_text(real: Path, shown: str) -> str:
    try:
        return real.read_text(encoding="utf-8")
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
