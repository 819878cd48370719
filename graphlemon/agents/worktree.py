"""Find and undo what a Claude Code turn changed in a git work tree.

Before the turn: `snapshot` records the state of every path git already shows as
changed or untracked, keeping what is needed to put it back (`kept_files`: bytes in
memory, a large file's copy aside, through the safe reader). After it: `changed_since`
lists the paths whose state differs (new, modified, deleted, or restored to HEAD), and
`restore` puts one path back exactly as it was before the turn — or, when its earlier
bytes were not kept, leaves it as it is and says so (False): never deleted. Paths git
ignores (and the state folder `.graphlemon/`) are not seen here (git_ignored.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ErrorCode, GraphLemonError
from .effects import _git, dirty_paths, restore_path
from .kept_files import Keeper, KeptState, unchanged


@dataclass
class Snapshot:
    root: Path
    dirty: dict[str, KeptState] = field(default_factory=dict)  # path -> its state before the turn
    keeper: Keeper = field(default_factory=Keeper)


def snapshot(root: Path) -> Snapshot:
    if _git(root, "rev-parse", "--is-inside-work-tree", check=False).returncode != 0:
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM, f"{root} is not a git work tree; the claude_code executor needs one"
        )
    snap = Snapshot(root=root)
    snap.dirty = {rel: snap.keeper.look(root, rel) for rel in dirty_paths(root)}
    return snap


def changed_since(snap: Snapshot) -> list[str]:
    now = dirty_paths(snap.root)
    changed = {rel for rel in now if rel not in snap.dirty}
    changed |= {rel for rel, before in snap.dirty.items() if not unchanged(snap.root, rel, before)}
    return sorted(changed)


def restore(snap: Snapshot, rel: str) -> bool:
    """Put `rel` back as it was before the turn. -> False when that cannot be done byte for byte (left as it is)."""
    return restore_path(snap.root, rel, snap.dirty.get(rel))
