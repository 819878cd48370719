"""What the loop may merge into the person's own branch, and what it must leave for a person to look at.

Two rules hold before `Worktrees.merge_into` touches the person's work tree (docs/agents.md, "What the sandbox
promises": leftovers):

* **Never over a file of the person's that git does not track.** git's merge replaces an ignored file (an `.env`, a
  local database) when the merged branch adds a tracked file at its path; `in_the_way` names every path the merge
  would write where the person's tree holds an untracked or ignored entry (the path itself, or a file or link where
  the merge needs a folder). Any such path holds the whole merge: nothing of the person's is replaced.
* **Never a configuration that runs code when the person opens the repository** (`runs_on_open`), wherever it is in
  the tree: Claude Code's and other agents' project settings, hooks, MCP servers and memory files (`.claude/`,
  `.mcp.json`, `CLAUDE.md`, ...),
  editor tasks (`.vscode/`, `.idea/`), dev containers, direnv's `.envrc`, git LFS's `.lfsconfig`, pre-commit's and
  husky's hooks, package managers' project config that names programs (`.npmrc`, `.yarnrc.yml`, `.pnpmfile.cjs`),
  and any file the person's own git config includes (`include.path` into the work tree). A change to one holds the
  merge: the work stays on its branch for a person to review, and the task says which paths and why.
* **Never a folder git would discover as a repository** (`HEAD` beside `objects/` and `refs/`), even one two units
  built half each: git run inside it would obey its config (`core.fsmonitor` runs a program). Such a merge is held
  the same way.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# a folder whose files tools run or load on open: wherever it is in the tree (a person opens a subfolder as the
# workspace, or starts Claude Code there)
OPEN_RUN_FOLDERS = frozenset({
    ".claude", ".vscode", ".idea", ".devcontainer", ".husky", ".cursor", ".gemini", ".codex", ".continue",
    ".windsurf", ".zed", ".fleet", ".githooks",
})  # fmt: skip
# a file name that tools read as settings that run code, wherever it is in the tree (an agent reads a subfolder's
# CLAUDE.md; direnv loads a subfolder's .envrc)
OPEN_RUN_NAMES = frozenset({
    "CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md", ".envrc", ".mcp.json", ".cursorrules",
    ".windsurfrules", ".devcontainer.json", ".lfsconfig", ".pre-commit-config.yaml", ".pre-commit-hooks.yaml",
    ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", ".gitconfig", ".aider.conf.yml",
})  # fmt: skip


@dataclass(frozen=True)
class MergeHold:
    """Why the merge into the person's branch did not happen: `kind` and the paths that hold it."""

    kind: str  # "in_the_way" | "runs_on_open" | "repository"
    paths: tuple[str, ...]

    def says(self) -> str:
        shown = ", ".join(self.paths[:8]) + (f" and {len(self.paths) - 8} more" if len(self.paths) > 8 else "")
        if self.kind == "in_the_way":
            return f"it would replace files of yours that git does not track ({shown}); nothing was replaced"
        if self.kind == "repository":
            return f"it would make folders git treats as a repository ({shown}): their config runs programs; review it first"
        return f"it changes configuration that runs code when the repository is opened ({shown}); review it first"


def runs_on_open(changed: Iterable[str], included: Iterable[str] = ()) -> list[str]:
    """The `changed` paths (relative, `/`-separated) that tools run or load on open, or that the person's git
    config includes (`included`, relative to the work tree)."""
    includes = {PurePosixPath(p).as_posix() for p in included}
    out = []
    for path in changed:
        parts = PurePosixPath(path).parts
        if not parts:
            continue
        if OPEN_RUN_FOLDERS.intersection(parts[:-1]) or parts[-1] in OPEN_RUN_NAMES or path in includes:
            out.append(path)
    return sorted(set(out))


def in_the_way(root: Path, added: Iterable[str]) -> list[str]:
    """The paths of `added` (new to the person's branch) where `root` holds something git does not track: an entry at
    the path itself, or a file or link where one of its folders must be. Links are never followed."""
    out = []
    for path in added:
        parts = PurePosixPath(path).parts
        for depth in range(1, len(parts) + 1):
            here = root.joinpath(*parts[:depth])
            try:
                mode = os.lstat(here).st_mode
            except FileNotFoundError:
                break
            except OSError:
                out.append(path)
                break
            if depth == len(parts) or not stat.S_ISDIR(mode):
                out.append(path)
                break
    return sorted(set(out))


def included_in(root: Path, config_files: Iterable[str]) -> list[str]:
    """The files of a git config include graph that lie in the work tree `root`, relative to it."""
    real_root = Path(os.path.realpath(root))
    out = []
    for name in config_files:
        real = Path(os.path.realpath(name))
        if real_root in real.parents:
            out.append(real.relative_to(real_root).as_posix())
    return out
