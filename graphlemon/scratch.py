"""The test runner's scratch folders: `<tmp>/graphlemon-testrun-<pid>-<random>/`.

A run's report and captured output (which may hold secrets a test printed) live there and
are removed when the run ends. A process that is killed cannot remove its own, so the
folder names their owner's pid: `sweep_stale` removes the folders whose owner is gone —
only ours (this prefix, this user, a real folder, not a symlink), never a live process's.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from .processes import pid_alive

PREFIX = "graphlemon-testrun-"
_NAME = re.compile(rf"^{PREFIX}(?P<pid>\d+)-[A-Za-z0-9_]+$")


def scratch_dir() -> tempfile.TemporaryDirectory:
    """A scratch folder named after this process (removed when the context ends)."""
    return tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-")


def stale_dirs(tmp: Path | None = None) -> list[Path]:
    """Scratch folders of this user whose owning process has ended."""
    tmp = Path(tmp or tempfile.gettempdir())
    out = []
    try:
        entries = list(tmp.iterdir())
    except OSError:
        return []
    for path in entries:
        m = _NAME.match(path.name)
        if not m or path.is_symlink() or not path.is_dir():
            continue
        try:
            if path.stat().st_uid != os.geteuid():
                continue
        except OSError:
            continue
        if int(m["pid"]) != os.getpid() and not pid_alive(int(m["pid"])):
            out.append(path)
    return sorted(out)


def sweep_stale(tmp: Path | None = None, *, dry_run: bool = False) -> list[Path]:
    """Remove (or with `dry_run` only list) the scratch folders of dead runs. -> the folders."""
    found = stale_dirs(tmp)
    if not dry_run:
        for path in found:
            shutil.rmtree(path, ignore_errors=True)
    return found
