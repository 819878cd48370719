"""The Python a project runs its tests with: its own virtualenv's interpreter, and whether pytest is in it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from .. import beneath
from ..errors import GraphLemonError

_VENVS = (".venv", "venv")


def python_for(run_dir: Path) -> str:
    """The project's own virtualenv interpreter if it has one (here or up to two folders above), else the
    one running graphlemon."""
    for folder in (run_dir, *run_dir.parents[:2]):
        for venv in _VENVS:
            candidate = folder / venv / "bin" / "python"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return sys.executable


def has_pytest(python: str) -> bool:
    """Whether `python` can import pytest, without running anything of the project's: graphlemon's own
    interpreter is asked directly; a virtualenv (which an agent or a test may have written) is read — its
    site-packages, and when it also sees the system's packages (`include-system-site-packages = true`), those of
    the interpreter its `pyvenv.cfg` names. Its `python` is never started on the host."""
    if python == sys.executable:
        return importlib.util.find_spec("pytest") is not None
    venv = Path(python).parent.parent
    if _venv_has_pytest(venv):
        return True
    config = _pyvenv_cfg(venv)
    if config.get("include-system-site-packages", "").lower() != "true":
        return False
    home = config.get("home", "")
    return bool(home) and _system_has_pytest(Path(home).parent)


def _venv_has_pytest(venv: Path) -> bool:
    """pytest in the virtualenv's own site-packages, looked up without following a link."""
    try:
        versions = [e.name for e in beneath.entries(venv, "lib") if e.kind == "dir" and e.name.startswith("python3")]
        return any(beneath.kind(venv, f"lib/{v}/site-packages/{name}") == "dir"
                   for v in versions for name in ("pytest", "_pytest"))  # fmt: skip
    except (OSError, GraphLemonError):
        return False


def _system_has_pytest(prefix: Path) -> bool:
    """pytest among the packages of an interpreter installed on the machine (not in the work tree)."""
    patterns = ("lib/python3*/site-packages/pytest", "lib/python3*/dist-packages/pytest",
                "lib/python3/dist-packages/pytest")  # fmt: skip
    return any(any(prefix.glob(pattern)) for pattern in patterns)


def _pyvenv_cfg(venv: Path) -> dict[str, str]:
    """`key = value` lines of the virtualenv's pyvenv.cfg, read through the safe reader (not a link, not a FIFO)."""
    try:
        text = beneath.read_text(venv, "pyvenv.cfg", errors="replace", max_bytes=64 * 1024)
    except (OSError, GraphLemonError):
        return {}
    pairs = (line.partition("=") for line in text.splitlines())
    return {key.strip().lower(): value.strip() for key, sep, value in pairs if sep}
