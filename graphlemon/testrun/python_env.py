"""The Python a project runs its tests with: its own virtualenv's interpreter, and whether pytest is in it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

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
    """Whether `python` can import pytest: graphlemon's own interpreter is asked directly; a virtualenv is
    read from its site-packages, and asked only when it also sees the system's packages."""
    if python == sys.executable:
        return importlib.util.find_spec("pytest") is not None
    venv = Path(python).parent.parent
    if any(venv.glob("lib/python3*/site-packages/pytest")) or any(venv.glob("lib/python3*/site-packages/_pytest")):
        return True
    config = venv / "pyvenv.cfg"
    try:
        sees_system = "include-system-site-packages = true" in config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        sees_system = False
    if not sees_system:
        return False
    try:
        asked = subprocess.run([python, "-c", "import pytest"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return asked.returncode == 0
