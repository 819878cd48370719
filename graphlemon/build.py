"""GraphLemon's build: its version and a digest of its installed source, so two installs that both say `0.1.0`
are told apart. A remote unit job carries the devloop's build, and a worker of another build, or on a Python
older than `pyproject.toml` allows, refuses the job with words the devloop shows (docs/scale.md)."""

from __future__ import annotations

import hashlib
import os
import sys
from functools import cache
from pathlib import Path

from . import __version__

MIN_PYTHON = (3, 11, 4)  # pyproject.toml's requires-python: `tarfile`'s filter="data" came with 3.11.4


@cache
def build_id() -> str:
    """`<version>+<first 12 hex digits of the sha256 of every .py file of the package, by path>`."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root, followlinks=True):  # flows/, tasks/, blocks/ are linked in
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            path = Path(folder) / name
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{__version__}+{digest.hexdigest()[:12]}"


def python_refusal(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> str | None:
    """Why this Python cannot run GraphLemon's remote unit loops, or None."""
    if tuple(version[:3]) >= MIN_PYTHON:
        return None
    have, need = ".".join(map(str, version[:3])), ".".join(map(str, MIN_PYTHON))
    return f"this worker runs Python {have}; GraphLemon needs Python {need} or later (pyproject.toml)"


def build_refusal(wanted: str | None, have: str | None = None) -> str | None:
    """Why this install cannot run a job dispatched by build `wanted`, or None."""
    have = have or build_id()
    if wanted == have:
        return None
    said = f"GraphLemon {wanted}" if wanted else "a GraphLemon that names no build (older than 0.1.0+<digest>)"
    return (f"this worker runs GraphLemon {have}, the job was dispatched by {said}: install the devloop's "
            "GraphLemon on the worker (the same commit), then resume")  # fmt: skip
