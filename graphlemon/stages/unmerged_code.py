"""The code of units that never merged, as the validator reads it: its work tree (the integration tree) holds only
the units merged so far, so a red unit's bug would otherwise cite code the validator cannot read.

The files come from the unit's branch through git (`ls-tree`, `cat-file`): committed blobs, never the work
tree's files (an agent may have planted a link there), symlinks and binary files left out, each file and the
whole text capped. Lines are numbered so a verdict can cite `path:line`; the validator's citation check looks
the line up in the unit's own work tree, which holds the same commit.
"""

from __future__ import annotations

from .. import gitrun
from ..errors import GraphLemonError
from .session import LoopSession

FILE_CHARS = 8_000
TOTAL_CHARS = 24_000
MAX_BLOB = 1_000_000


def unmerged_code(session: LoopSession, unit_ids: list[str]) -> str:
    """Each red unit's code files at its branch's head, numbered; '' when there are none."""
    units = session.unit_files.units()
    parts: list[str] = []
    used = 0
    for unit_id in unit_ids:
        entry = units.get(unit_id)
        if entry is None:
            continue
        branch = session.worktrees.branch(unit_id)
        for path, text in _files(session, branch, entry.code):
            if used >= TOTAL_CHARS:
                parts.append(f"(more files of {unit_id} left out: {TOTAL_CHARS:,} characters shown)")
                return "\n\n".join(parts)
            shown = text[:FILE_CHARS]
            numbered = "\n".join(f"{n:>4}| {line}" for n, line in enumerate(shown.splitlines(), 1))
            cut = f"\n     (… {len(text) - FILE_CHARS:,} more characters)" if len(text) > FILE_CHARS else ""
            parts.append(f"### {unit_id}: {path} (branch {branch})\n```\n{numbered}{cut}\n```")
            used += len(shown)
    return "\n\n".join(parts)


def _files(session: LoopSession, branch: str, paths: list[str]) -> list[tuple[str, str]]:
    root = session.project.root
    try:
        listing = gitrun.git(root, "ls-tree", "-r", "-z", "-l", branch, "--", *paths).stdout.decode(errors="replace")
    except GraphLemonError:
        return []  # the unit was never coded: no branch yet
    out = []
    for entry in filter(None, listing.split("\0")):
        meta, _, path = entry.partition("\t")
        mode, kind, sha, size = (meta.split() + ["", "", "", ""])[:4]
        if kind != "blob" or mode not in ("100644", "100755") or not size.isdigit() or int(size) > MAX_BLOB:
            continue  # a link, a submodule or a huge file: not code to quote
        blob = gitrun.git(root, "cat-file", "blob", sha).stdout
        if b"\0" in blob[:8192]:
            continue  # binary
        out.append((path, blob.decode("utf-8", errors="replace")))
    return out
