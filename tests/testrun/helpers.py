"""Helpers for the test-runner tests: fixture copies, process liveness, result lookups."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "testrun"


def copy_fixture(name: str, dest: Path) -> Path:
    """A fresh copy of tests/fixtures/testrun/NAME under `dest` (node_modules linked, not copied)."""
    source = FIXTURES / name
    target = dest / name
    shutil.copytree(
        source, target, ignore=shutil.ignore_patterns("node_modules", "target", ".graphlemon", ".pytest_cache")
    )
    if (source / "node_modules").is_dir():
        (target / "node_modules").symlink_to(source / "node_modules", target_is_directory=True)
    return target


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def by_name(result, name: str):
    matches = [f for f in result.failures if f.name == name]
    assert matches, f"no failure named {name!r} in {[f.name for f in result.failures]}"
    return matches[0]


def statuses(result) -> dict[str, str]:
    return {c.name: c.status for c in result.cases}
