"""The commit step's last check: a symlink that leaves the repository is never committed by the loop.

Agents may not create symlinks (the tools refuse and revert them), so a staged link
that leaves the repository means a route around the tools. `drop_outward_links`
reads the staged tree the way git will commit it (`git diff --cached --raw`), and
unstages and deletes every symlink whose target is absolute, climbs above the
repository root, or points into `.git/` or `.graphlemon/`.
"""

from __future__ import annotations

import logging
import os
import posixpath
import subprocess
from pathlib import Path

from .errors import ErrorCode, GraphLemonError

log = logging.getLogger(__name__)
LINK_MODE = "120000"
PROTECTED_TOP = (".git", ".graphlemon")


def leaves_repository(link_path: str, target: str) -> bool:
    """Does a link at repo-relative `link_path` with `target` point outside the repository (or into its state)?"""
    if not target or target.startswith(("/", "~")) or "\0" in target:
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(link_path), target))
    return joined == ".." or joined.startswith("../") or joined.split("/", 1)[0] in PROTECTED_TOP


def staged_links(work_tree: Path) -> dict[str, str]:
    """Repo-relative path -> target of every symlink the index adds or changes against HEAD."""
    raw = _git(work_tree, "diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev").split(b"\0")
    links: dict[str, str] = {}
    for meta, path in zip(raw[0::2], raw[1::2], strict=False):
        fields = meta.decode(errors="replace").lstrip(":").split()
        if len(fields) >= 5 and fields[1] == LINK_MODE and fields[4] != "D":
            target = _git(work_tree, "cat-file", "blob", fields[3])
            links[os.fsdecode(path)] = os.fsdecode(target)
    return links


def drop_outward_links(work_tree: Path) -> list[str]:
    """Unstage and delete every staged symlink that leaves the repository; returns their paths."""
    dropped = []
    for path, target in sorted(staged_links(work_tree).items()):
        if not leaves_repository(path, target):
            continue
        _git(work_tree, "rm", "--cached", "-q", "--", path)
        link = Path(work_tree) / path
        if link.is_symlink():
            link.unlink()
        log.warning("sandbox: refused to commit %s, a symlink to %r that leaves the repository", path, target)
        dropped.append(path)
    return dropped


def _git(work_tree: Path, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    proc = subprocess.run(["git", *args], cwd=work_tree, capture_output=True, env=env, timeout=120)
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()
        raise GraphLemonError(ErrorCode.GIT_ERROR, f"git {' '.join(args)} failed in {work_tree}: {detail}")
    return proc.stdout
