"""Find and undo what a Claude Code turn changed in a git work tree.

Before the turn: `snapshot` records the bytes of every path git already shows as
changed or untracked. After it: `changed_since` lists the paths whose state
differs (new, modified, deleted, or restored to HEAD), and `restore` puts one
path back exactly as it was before the turn. Paths git ignores (and the state
folder `.graphlemon/`) are not seen; writes outside the work tree are not either
— Claude Code's own permission rules (`--allowedTools`) guard those.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ErrorCode, GraphLemonError
from .effects import _git, _prune_empty_dirs, _remove  # one git runner and one way to undo a file

MAX_SNAPSHOT_BYTES = 20_000_000


@dataclass
class Snapshot:
    root: Path
    dirty: dict[str, bytes | None] = field(default_factory=dict)  # path -> bytes before the turn (None: absent)


def dirty_paths(root: Path) -> set[str]:
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames").stdout
    paths = set()
    for entry in out.split(b"\0"):
        if len(entry) > 3:
            paths.add(os.fsdecode(entry[3:]))
    return paths


def _read(root: Path, rel: str) -> bytes | None:
    path = root / rel
    if path.is_symlink():
        return b"symlink:" + os.fsencode(os.readlink(path))
    if not path.is_file():
        return None
    return path.read_bytes() if path.stat().st_size <= MAX_SNAPSHOT_BYTES else b"large:%d" % path.stat().st_mtime_ns


def snapshot(root: Path) -> Snapshot:
    if _git(root, "rev-parse", "--is-inside-work-tree", check=False).returncode != 0:
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM, f"{root} is not a git work tree; the claude_code executor needs one"
        )
    return Snapshot(root=root, dirty={rel: _read(root, rel) for rel in dirty_paths(root)})


def changed_since(snap: Snapshot) -> list[str]:
    now = dirty_paths(snap.root)
    changed = {rel for rel in now if rel not in snap.dirty}
    changed |= {rel for rel, before in snap.dirty.items() if _read(snap.root, rel) != before}
    return sorted(changed)


def restore(snap: Snapshot, rel: str) -> None:
    """Put `rel` back as it was before the turn."""
    path = snap.root / rel
    if rel in snap.dirty and snap.dirty[rel] is not None and not snap.dirty[rel].startswith((b"symlink:", b"large:")):
        _remove(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(snap.dirty[rel])  # type: ignore[arg-type]
        return
    if rel not in snap.dirty and _git(snap.root, "cat-file", "-e", f"HEAD:{rel}", check=False).returncode == 0:
        _remove(path)
        _git(snap.root, "checkout", "HEAD", "--", rel)
        return
    _remove(path)
    _prune_empty_dirs(path.parent, snap.root)
