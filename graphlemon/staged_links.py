"""The commit step's last check: what the loop never commits, whoever put it in the work tree.

`drop_refused(work_tree)` reads the staged tree the way git will commit it
(`git diff --cached --raw` against HEAD) and takes out, before the commit:

* a gitlink (mode 160000: a nested repository, e.g. a `tests/sub/.git` file naming some
  git dir) — unstaged, and the nested `.git` removed so it is not staged again;
* a change to `.gitmodules` (added, changed or deleted) — put back as HEAD has it;
* any path with a `.git` component (git refuses most; whatever gets through is unstaged);
* a symlink whose target is absolute, climbs above the repository root, or points into
  `.git/` or `.graphlemon/` — unstaged and deleted;
* everything staged in a folder git would take for a repository of its own once checked out,
  with no `.git` anywhere in its path: a `HEAD` file beside `objects/` and `refs/` (or beside a
  `commondir` file), names compared case-insensitively — a bare repository laid out as plain
  files, whose config (`core.fsmonitor`, hooks) the person's next `git status` there would run.
  New files are unstaged and deleted, changed ones put back as HEAD has them.

Before anything is staged, `drop_special(work_tree)` removes every FIFO, socket or device file a run left in the
work tree (git cannot commit one, and git reading a FIFO named `.gitignore` or `.gitattributes` would wait
forever), and `drop_oversize(work_tree, max_bytes)` bounds what one commit takes in: the files git
would stage (changed and untracked, not ignored) counted by their size, not their disk blocks (a sparse file is
checked out as real bytes), largest first taken out until the rest fits — new ones deleted, changed ones put back
as HEAD has them.

Each one is a `Refusal` (path, why) that the caller records as a violation.
"""

from __future__ import annotations

import logging
import os
import posixpath
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import beneath, gitrun
from .errors import GraphLemonError

log = logging.getLogger(__name__)
LINK_MODE = "120000"
GITLINK_MODE = "160000"
PROTECTED_TOP = (".git", ".graphlemon")
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"})  # the tools
# regenerate them: never committed, never put back, never judged as a change


@dataclass(frozen=True)
class Refusal:
    path: str
    why: str


def leaves_repository(link_path: str, target: str) -> bool:
    """Does a link at repo-relative `link_path` with `target` point outside the repository (or into its state)?"""
    if not target or target.startswith(("/", "~")) or "\0" in target:
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(link_path), target))
    return joined == ".." or joined.startswith("../") or joined.split("/", 1)[0] in PROTECTED_TOP


def staged_entries(work_tree: Path) -> list[tuple[str, str, str, str]]:
    """(path, old mode, new mode, status) of every entry the index changes against HEAD."""
    args = ["diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev", "--ignore-submodules=none"]
    if gitrun.git(work_tree, "rev-parse", "--verify", "-q", "HEAD", check=False).returncode != 0:
        args.append(gitrun.out(work_tree, "hash-object", "-t", "tree", "/dev/null"))  # no commit yet: the empty tree
    raw = gitrun.git(work_tree, *args).stdout.split(b"\0")
    out = []
    for meta, path in zip(raw[0::2], raw[1::2], strict=False):
        fields = meta.decode(errors="replace").lstrip(":").split()
        if len(fields) >= 5:
            out.append((os.fsdecode(path), fields[0], fields[1], fields[4]))
    return out


def repository_folders(work_tree: Path) -> set[str]:
    """The folders of the index (the tree the next commit holds; "" is the root) that git would discover as a
    repository when checked out: `HEAD` beside `objects/` and `refs/`, or beside `commondir` (git's own test,
    `is_git_directory`), case-insensitively (a checkout on a case-insensitive disk)."""
    return repository_folders_in(
        os.fsdecode(p) for p in gitrun.git(work_tree, "ls-files", "-z").stdout.split(b"\0") if p
    )


def repository_folders_in(names: Iterable[str]) -> set[str]:
    """The folders of a tree, given as its file paths, that git would discover as a repository (see above)."""
    paths = [name.lower() for name in names]
    heads = {posixpath.dirname(p) for p in paths if posixpath.basename(p) == "head"}
    if not heads:
        return set()
    folders = {posixpath.dirname(p) for p in paths}
    folders |= {"/".join(f.split("/")[:i]) for f in list(folders) for i in range(1, f.count("/") + 1)}
    found = set()
    for folder in heads:
        prefix = f"{folder}/" if folder else ""
        if (f"{prefix}objects" in folders and f"{prefix}refs" in folders) or f"{prefix}commondir" in paths:
            found.add(folder)
    return found


def drop_special(work_tree: Path) -> list[Refusal]:
    """Remove the FIFOs, sockets and device files in the work tree before git (or anything of the host) reads it: git
    opens `.gitignore`, `.gitattributes` and `.gitmodules` by name in every folder it walks, and a nested repository's
    `.git/HEAD`; a FIFO there blocks it for ever. Every folder is walked but the top's `.git` (read-only in the
    sandbox), links never followed, nothing opened (`beneath`: lstat only); no such file is a change git could
    commit. One Refusal each."""
    refused = []
    for path, what in _special_files(work_tree):
        removed = beneath.remove(work_tree, path)
        why = f"{path!r} is {what}, which the host never opens (git would block on it); "
        why += "it was removed" if removed else "it could not be removed"
        log.warning("sandbox: %s", why)
        refused.append(Refusal(path, why))
    return refused


def _special_files(work_tree: Path) -> list[tuple[str, str]]:
    """(path, what it is) for each FIFO, socket and device file below the work tree, its top `.git` aside."""
    found = []
    for entry in beneath.entries(work_tree):
        if entry.name == ".git":
            continue
        if entry.kind == "other":
            found.append(entry.name)
        elif entry.kind == "dir":
            found += beneath.walk_files(work_tree, entry.name)[1]
    out = []
    for path in found:
        st = beneath.lstat(work_tree, path)
        if st is None or stat.S_ISLNK(st.st_mode):
            continue  # a link: judged when staged
        what = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device file"
        out.append((path, what))
    return out


def drop_oversize(work_tree: Path, max_bytes: int) -> list[Refusal]:
    """Take out (largest first) the changed and untracked files whose sizes together pass `max_bytes`, before they
    are staged; returns what was taken out."""
    args = ["status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all"]
    sizes = []
    for entry in gitrun.git(work_tree, *args).stdout.split(b"\0"):
        if len(entry) <= 3:
            continue
        code, path = entry[:2].decode(errors="replace"), os.fsdecode(entry[3:])
        try:
            st = beneath.lstat(work_tree, path)
        except (OSError, GraphLemonError):
            continue  # a link on its way: `drop_refused` and git judge it, it holds no bytes of its own here
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_size:
            sizes.append((st.st_size, path, code))
    total = sum(size for size, _, _ in sizes)
    refused = []
    for size, path, code in sorted(sizes, reverse=True):
        if total <= max_bytes:
            break
        total -= size
        if code == "??":
            beneath.remove(work_tree, path)
        else:
            gitrun.git(work_tree, "checkout", "HEAD", "--", path, check=False)
        mb, limit = size / (1024 * 1024), max_bytes // (1024 * 1024)
        why = f"its {mb:.0f} MB would take the commit past the work-tree quota (worktree_mb {limit})"
        log.warning("sandbox: refused to commit %s: %s", path, why)
        refused.append(Refusal(path, why))
    return refused


def drop_refused(work_tree: Path) -> list[Refusal]:
    """Unstage (and where needed delete or put back) every refused entry; returns what was refused."""
    refused = []
    staged = staged_entries(work_tree)
    repositories = repository_folders(work_tree) if staged else set()
    for path, old_mode, new_mode, status in staged:
        why = _why_refused(work_tree, path, old_mode, new_mode, status) or _in_repository(path, status, repositories)
        if why is None:
            continue
        _take_out(work_tree, path, new_mode, in_head=old_mode != "000000", delete=why.startswith(REPOSITORY_WHY))
        log.warning("sandbox: refused to commit %s: %s", path, why)
        refused.append(Refusal(path, why))
    return refused


def _why_refused(work_tree: Path, path: str, old_mode: str, new_mode: str, status: str) -> str | None:
    parts = path.split("/")
    if any(part.lower() == ".git" for part in parts):
        return "a path inside a .git folder"
    if path == ".gitmodules":
        return "a change to .gitmodules (submodules are never added by the loop)"
    if new_mode == GITLINK_MODE and status != "D":
        return "a gitlink (a nested repository, mode 160000)"
    if new_mode == LINK_MODE and status != "D":
        target = os.fsdecode(gitrun.git(work_tree, "cat-file", "blob", f":{path}").stdout)
        if leaves_repository(path, target):
            return f"a symlink to {target!r}, which leaves the repository"
    return None


REPOSITORY_WHY = "inside a folder git would take for a repository"


def _in_repository(path: str, status: str, repositories: set[str]) -> str | None:
    if status == "D":
        return None
    lowered = path.lower()
    for folder in sorted(repositories):
        if folder == "" or lowered.startswith(f"{folder}/"):
            shown = repr(path[: len(folder)]) if folder else "the repository's root"
            return (f"{REPOSITORY_WHY} ({shown} holds HEAD beside objects/ and refs/ as plain files: a bare "
                    "repository whose config git would run)")  # fmt: skip
    return None


def _take_out(work_tree: Path, path: str, new_mode: str, *, in_head: bool, delete: bool = False) -> None:
    if in_head:
        gitrun.git(work_tree, "reset", "-q", "HEAD", "--", path)
        gitrun.git(work_tree, "checkout", "HEAD", "--", path, check=False)
    else:
        gitrun.git(work_tree, "rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch", "--", path)
        if delete:
            beneath.remove(work_tree, path)  # never what a link on its way points at
            beneath.prune_empty_dirs(work_tree, posixpath.dirname(path))
    if new_mode == GITLINK_MODE:
        beneath.remove_tree(work_tree, f"{path}/.git")  # the nested repository's pointer or git dir
    elif new_mode == LINK_MODE and not in_head and beneath.kind(work_tree, path) == "link":
        beneath.remove(work_tree, path)
    elif not in_head and path == ".gitmodules" and beneath.kind(work_tree, path) == "file":
        beneath.remove(work_tree, path)
