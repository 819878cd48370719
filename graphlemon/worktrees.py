"""Git worktrees for the Coder stage (REQ-03); every git command through `gitrun` (no hook, fsmonitor or driver
of the repository's choosing runs, and each work tree's `.git` is checked before each call).

Per task: an integration worktree on branch `graphlemon/<task>/integration`,
started from the repository's HEAD; per unit: a worktree on branch
`graphlemon/<task>/<unit>`, started from the integration branch. A unit's work
is committed in its worktree and merged into the integration branch; a merge
conflict aborts the merge (no conflict residue) and raises MERGE_CONFLICT
naming the files — never a silent overwrite. Worktrees live under
`.graphlemon/worktrees/` (excluded from git status). A commit never carries a gitlink, a
`.gitmodules` change, a `.git` entry or a symlink that leaves the repository
(`staged_links.drop_refused`: listed in `refused`, for the caller to record).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from git import Repo

from . import beneath, git_config, gitrun, merge_guard, staged_links
from .errors import ErrorCode, GraphLemonError, invalid_param
from .merge_guard import MergeHold
from .staged_links import CACHE_DIRS, Refusal, drop_oversize, drop_refused, drop_special

IDENTITY = {
    "GIT_AUTHOR_NAME": "GraphLemon",
    "GIT_AUTHOR_EMAIL": "devloop@graphlemon.local",
    "GIT_COMMITTER_NAME": "GraphLemon",
    "GIT_COMMITTER_EMAIL": "devloop@graphlemon.local",
}
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
INTEGRATION = "_integration"
SCRATCH = "_scratch-"  # a turn's throw-away work tree (`Worktrees.scratch`)


@dataclass(frozen=True)
class Merged:
    """What `Worktrees.merge_into` did: the merge commit, or None (not merged) and, when a rule held it, why."""

    commit: str | None
    held: MergeHold | None = None


@dataclass(frozen=True)
class Worktree:
    path: Path
    branch: str

    @property
    def repo(self) -> Repo:
        """A GitPython view for reading in tests; GraphLemon itself runs git only through `gitrun`."""
        return Repo(self.path)

    def head(self) -> str:
        return gitrun.out(self.path, "rev-parse", "HEAD")


@contextmanager
def task_lock(base: Path) -> Iterator[None]:
    """The lock of one task's worktrees folder (`<state>/worktrees/<task>`): held while the loop adds a worktree or
    merges, and while a claude_code turn's refs are put back (so a worktree being added is never judged)."""
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def task_lock_dir(state_dir: Path, task_id: str) -> Path:
    return Path(state_dir) / "worktrees" / task_id


def _safe(name: str, what: str) -> str:
    if not _SAFE.match(name):
        raise invalid_param(f"{what} {name!r} is not usable in a branch or folder name")
    return name


class Worktrees:
    """The worktrees of one task in one repository."""

    def __init__(self, repo_root: Path, task_id: str, state_dir: Path | None = None) -> None:
        self.repo_root = Path(repo_root)
        self.task_id = _safe(task_id, "task id")
        self.base = task_lock_dir(state_dir or self.repo_root / ".graphlemon", task_id)
        self.common_dir = Path(
            os.path.realpath(self.repo_root / gitrun.out(self.repo_root, "rev-parse", "--git-common-dir"))
        )
        self.refused: list[Refusal] = []  # entries the commit step refused (gitlinks, outward symlinks, ...)

    def branch(self, unit_id: str) -> str:
        return f"graphlemon/{self.task_id}/{'integration' if unit_id == INTEGRATION else _safe(unit_id, 'unit id')}"

    # -- create / reuse ------------------------------------------------------------------------
    def integration(self) -> Worktree:
        """The integration worktree, created from HEAD on first use."""
        return self._ensure(INTEGRATION, start_point="HEAD")

    def unit(self, unit_id: str, *, sync: bool = False) -> Worktree:
        """A unit's worktree, branched from the integration branch. `sync` merges what other units have
        merged since (the unit keeps its own commits, green or not)."""
        integration = self.integration()
        wt = self._ensure(unit_id, start_point=integration.branch)
        if sync:
            try:
                with self._lock():
                    self._settle_interrupted_merge(wt.path)
                    self._run(
                        wt.path,
                        "merge",
                        "--no-edit",
                        "--no-verify",
                        "-m",
                        f"graphlemon: sync {unit_id} with integration",
                        integration.branch,
                    )
            except GraphLemonError as exc:
                if exc.code == ErrorCode.WORKTREE_TAMPERED:
                    raise
                self._abort_merge(wt.path)
                raise GraphLemonError(
                    ErrorCode.MERGE_CONFLICT,
                    f"unit {unit_id} conflicts with the integration branch; the merge was aborted: {exc.message}",
                    unit_id=unit_id,
                ) from None
        return wt

    def _settle_interrupted_merge(self, path: Path) -> None:
        """A run killed inside `git merge`, after the merge result was written and before its commit, leaves that
        result staged (a merge without conflicts writes no MERGE_HEAD), and the next merge refuses to overwrite it.
        Undo it with `git reset --merge`, which keeps every change that is not staged, so the merge runs again whole.
        Nothing else stages changes here between steps: every step commits what it writes."""
        staged = gitrun.git(path, "diff", "--cached", "--quiet", check=False, common_dir=self.common_dir).returncode
        merging = gitrun.git(path, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False, common_dir=self.common_dir)
        if staged != 0 or merging.returncode == 0:
            self._run(path, "reset", "-q", "--merge")

    def _abort_merge(self, path: Path) -> None:
        gitrun.git(path, "merge", "--abort", check=False, common_dir=self.common_dir)

    def _ensure(self, unit_id: str, *, start_point: str) -> Worktree:
        path = self.base / unit_id
        branch = self.branch(unit_id)
        if (path / ".git").exists():
            return Worktree(path, branch)
        with self._lock():  # units start in parallel: one `git worktree add` at a time
            if (path / ".git").exists():
                return Worktree(path, branch)
            self._run(self.repo_root, "worktree", "prune")
            exists = (
                gitrun.git(self.repo_root, "show-ref", "--verify", "-q", f"refs/heads/{branch}", check=False).returncode
                == 0
            )
            add = (
                ["worktree", "add", str(path), branch]
                if exists
                else ["worktree", "add", "-b", branch, str(path), start_point]
            )
            self._run(self.repo_root, *add)
        return Worktree(path, branch)

    @contextmanager
    def scratch(self, name: str) -> Iterator[Worktree]:
        """A detached work tree of the repository's HEAD for one agent turn that must not run in the person's own
        work tree (the planner's): made fresh (whatever a killed run left there is discarded first) and removed
        afterwards with everything the turn left in it. Its `branch` is empty: nothing is committed from it."""
        path = self.base / f"{SCRATCH}{_safe(name, 'scratch name')}"
        with self._lock():
            self._discard(path)
            self._run(self.repo_root, "worktree", "add", "--detach", str(path), "HEAD")
        try:
            yield Worktree(path, "")
        finally:
            with self._lock():
                self._discard(path)

    def _discard(self, path: Path) -> None:
        """Remove a work tree of this task's folder and its admin dir (never following a link inside it)."""
        beneath.remove_tree(self.base, path.name)
        self._run(self.repo_root, "worktree", "prune")

    # -- changes -------------------------------------------------------------------------------
    def commit_all(self, wt: Worktree, message: str, *, max_bytes: int | None = None) -> str | None:
        """Commit everything in the worktree (at most `max_bytes` of changed files: `drop_oversize`); returns the new
        commit, or None if nothing changed. A step replayed after a kill that followed its commit finds nothing to
        commit and gets that commit back (HEAD's message is `message`: messages name the unit and attempt, so they
        are unique per step)."""
        self.refused += drop_special(wt.path)  # before git reads the tree: a FIFO named .gitignore would block it
        if max_bytes is not None:
            self.refused += drop_oversize(wt.path, max_bytes)  # a sparse file counts by its size, not its blocks
        self._run(wt.path, "add", "-A")
        self.refused += drop_refused(wt.path)  # never a gitlink, .gitmodules, .git entry or outward symlink
        if gitrun.git(wt.path, "diff", "--cached", "--quiet", "--ignore-submodules=none", check=False,
                      common_dir=self.common_dir).returncode == 0:  # fmt: skip
            last = self._run(wt.path, "log", "-1", "--format=%B", wt.branch)
            return wt.head() if last.split() == message.split() else None
        self._run(wt.path, "commit", "-q", "--no-verify", "-m", message)
        return wt.head()

    def require_committed(self, wt: Worktree, paths: list[str]) -> None:
        """A green run counts only when the unit's branch holds the tests that ran: HEAD is the unit's branch and
        no file under `paths` differs from it (changed, untracked, or hidden by an ignore rule; the tools' caches
        aside). WORKTREE_TAMPERED, naming what differs, otherwise."""
        head = gitrun.text(wt.path, "symbolic-ref", "-q", "HEAD").stdout.strip()
        if head != f"refs/heads/{wt.branch}":
            raise GraphLemonError(ErrorCode.WORKTREE_TAMPERED, f"work tree {wt.path}: HEAD is {head or 'detached'}, "
                                  f"not {wt.branch}; its green run does not count", work_tree=str(wt.path))  # fmt: skip
        if not paths:
            return
        args = ["status", "--porcelain=v1", "-z", "--no-renames", "--ignored=matching", "--untracked-files=all", "--"]
        raw = gitrun.git(wt.path, *args, *paths, common_dir=self.common_dir).stdout
        loose = [os.fsdecode(e[3:]) for e in raw.split(b"\0") if len(e) > 3]
        loose = [p for p in loose if not CACHE_DIRS.intersection(p.split("/")[:-1])]
        if loose:
            raise GraphLemonError(
                ErrorCode.WORKTREE_TAMPERED,
                f"work tree {wt.path}: the tests that ran are not what its branch holds ({', '.join(sorted(loose)[:10])}"
                "); a green run counts only for committed tests",
                work_tree=str(wt.path), paths=sorted(loose)[:50],
            )  # fmt: skip

    def diff(self, wt: Worktree, base: str) -> str:
        """Unified diff of the worktree's branch against `base` (a commit or branch)."""
        return self._run(wt.path, "diff", f"{base}..{wt.branch}")

    def commit_files(self, wt: Worktree, commit: str) -> list[str]:
        """The paths one commit changed (against its first parent)."""
        out = self._run(wt.path, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", commit)
        return [line for line in out.splitlines() if line]

    def changed_files(self, wt: Worktree, base: str) -> list[str]:
        out = self._run(wt.path, "diff", "--name-only", f"{base}..{wt.branch}")
        return [line for line in out.splitlines() if line]

    def merge_into_integration(self, unit_id: str, message: str | None = None) -> str:
        """Merge a unit branch into the integration branch; MERGE_CONFLICT (merge aborted) on conflict."""
        integration = self.integration()
        branch = self.branch(unit_id)
        try:
            with self._lock():
                self._settle_interrupted_merge(integration.path)
                self._run(
                    integration.path,
                    "merge",
                    "--no-ff",
                    "--no-verify",
                    "-m",
                    message or f"graphlemon: merge {unit_id}",
                    branch,
                )
        except GraphLemonError as exc:
            if exc.code == ErrorCode.WORKTREE_TAMPERED:
                raise
            conflicted = self._conflicted(integration.path)
            self._abort_merge(integration.path)
            if conflicted:
                raise GraphLemonError(
                    ErrorCode.MERGE_CONFLICT,
                    f"merging unit {unit_id} into the integration branch conflicts in {', '.join(conflicted)}; the merge "
                    "was aborted and nothing was overwritten",
                    unit_id=unit_id,
                    files=conflicted,
                ) from None
            raise
        return integration.head()

    def _conflicted(self, path: Path) -> list[str]:
        names = self._run(path, "diff", "--name-only", "--diff-filter=U")
        return sorted({line for line in names.splitlines() if line})

    def merge_into(self, target_repo_root: Path) -> Merged:
        """Merge the integration branch into the main worktree's current branch if that worktree is clean and the
        merge replaces no file of the person's that git does not track and changes no configuration that runs code
        on open (`merge_guard`): otherwise nothing is merged and `Merged.held` says why."""
        root = Path(target_repo_root)
        dirty = gitrun.git(root, "diff", "--quiet", "HEAD", "--ignore-submodules=none", check=False).returncode != 0
        branch = gitrun.git(root, "symbolic-ref", "-q", "--short", "HEAD", check=False)
        if dirty or branch.returncode != 0:
            return Merged(None)
        held = self._merge_hold(root)
        if held is not None:
            return Merged(None, held)
        try:
            gitrun.git(root, "merge", "--no-ff", "--no-verify", "-m", f"graphlemon: {self.task_id}",
                       self.branch(INTEGRATION), env=IDENTITY)  # fmt: skip
        except GraphLemonError as exc:
            if exc.code == ErrorCode.WORKTREE_TAMPERED:
                raise
            gitrun.git(root, "merge", "--abort", check=False)
            name = branch.stdout.decode(errors="replace").strip()
            raise GraphLemonError(
                ErrorCode.MERGE_CONFLICT,
                f"merging {self.branch(INTEGRATION)} into {name} conflicts; the merge was aborted",
            ) from exc
        return Merged(gitrun.out(root, "rev-parse", "HEAD"))

    def _merge_hold(self, root: Path) -> MergeHold | None:
        """What holds the merge into the person's branch (`merge_guard`), or None."""
        target = self.branch(INTEGRATION)
        added = self._names(root, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", "HEAD", target)
        blocking = merge_guard.in_the_way(root, added)
        if blocking:
            return MergeHold("in_the_way", tuple(blocking))
        changed = self._names(root, "diff", "--name-only", "-z", "--no-renames", f"HEAD...{target}")
        git_dir, common = gitrun.verify_work_tree(root)
        included = merge_guard.included_in(root, git_config.files(git_dir, common, {**os.environ, **gitrun.ENV}))
        opening = merge_guard.runs_on_open(changed, included)
        if opening:
            return MergeHold("runs_on_open", tuple(opening))
        nested = staged_links.repository_folders_in(self._names(root, "ls-tree", "-r", "--name-only", "-z", target))
        made = sorted(f for f in nested if any(c.lower().startswith(f"{f}/" if f else "") for c in changed))
        return MergeHold("repository", tuple(made)) if made else None

    @staticmethod
    def _names(root: Path, *args: str) -> list[str]:
        out = gitrun.git(root, *args).stdout.decode(errors="surrogateescape")
        return [name for name in out.split("\0") if name]

    def _lock(self) -> AbstractContextManager[None]:
        """Units working at once (threads or processes) change the repository's worktrees and refs one at a time."""
        return task_lock(self.base)

    def recover(self) -> list[str]:
        """After a killed run: in every worktree of the task drop stale git locks and abort a half-done merge.
        Uncommitted files stay: they are whole files of finished tool calls (writes are atomic), and a turn whose
        answer was saved is not run again, so its files are still needed. -> what it did."""
        done = []
        for path in sorted(self.base.glob("*")):
            if path.name.startswith(SCRATCH):  # a turn's throw-away tree a killed run left: nothing in it is kept
                with self._lock():
                    self._discard(path)
                done.append(f"{path.name}: removed a scratch work tree a killed run left")
                continue
            if not (path / ".git").exists():
                continue
            admin = self._admin_dir(path)
            if admin is not None and self._half_made(admin):  # killed inside `git worktree add`
                self._discard_half_made(path, admin)  # made again on first use, from its branch
                done.append(f"{path.name}: removed a worktree that `git worktree add` had not finished")
                continue
            try:
                git_dir = Path(gitrun.out(path, "rev-parse", "--absolute-git-dir", common_dir=self.common_dir))
            except GraphLemonError as exc:
                if exc.code == ErrorCode.WORKTREE_TAMPERED:
                    raise
                raise GraphLemonError(
                    ErrorCode.GIT_ERROR,
                    f"worktree {path} cannot be opened ({exc.message}); repair or remove it, then resume",
                ) from None
            done += [f"{path.name}: removed a stale {lock}" for lock in self._drop_stale_locks(path, git_dir)]
            if (git_dir / "MERGE_HEAD").exists():
                self._abort_merge(path)
                done.append(f"{path.name}: aborted an unfinished merge")
        return done

    def _drop_stale_locks(self, path: Path, git_dir: Path) -> list[str]:
        """A git command killed mid-write leaves `<file>.lock` beside what it was changing: index, HEAD, ORIG_HEAD in
        the worktree's own git dir, and the ref of its branch. All belong to this task (its run is dead): drop them.
        Locks shared with other tasks (packed-refs, the main worktree's) are left to git and the person."""
        locks = {lock.name: lock for lock in sorted(git_dir.glob("*.lock"))}
        head = _read_head(git_dir)
        ref = head.removeprefix("ref: ").strip() if head.startswith("ref: refs/") else None
        if ref and (self.common_dir / f"{ref}.lock").is_file():
            locks[f"lock on {ref}"] = self.common_dir / f"{ref}.lock"
        for lock in locks.values():
            lock.unlink()
        return list(locks)

    def _admin_dir(self, path: Path) -> Path | None:
        """The worktree's admin dir in the main repository (from its `.git` pointer), if it lies there."""
        pointer = _read_small(path, ".git")  # the work tree's own file: never a link, never a FIFO
        if not pointer.startswith("gitdir:"):
            return None
        admin = Path(pointer.removeprefix("gitdir:").strip())
        return admin if admin.resolve().parent == self.common_dir / "worktrees" else None

    @staticmethod
    def _half_made(admin: Path) -> bool:
        """git writes the admin dir, locks it as 'initializing', checks out, then unlocks: a kill leaves one of those."""
        initializing = _read_small(admin, "locked").startswith("initializing")
        return beneath.kind(admin, "HEAD") != "file" or beneath.kind(admin, "commondir") != "file" or initializing

    def _discard_half_made(self, path: Path, admin: Path) -> None:
        """Such a worktree holds no work of its own (no turn runs before it exists): drop it and its admin dir."""
        shutil.rmtree(path)
        shutil.rmtree(admin, ignore_errors=True)
        self._run(self.repo_root, "worktree", "prune")

    def remove(self, unit_id: str) -> None:
        path = self.base / unit_id
        if path.exists():
            self._run(self.repo_root, "worktree", "remove", "--force", str(path))

    def _run(self, path: Path, *args: str) -> str:
        proc = gitrun.git(path, *args, env=IDENTITY, common_dir=self.common_dir)
        return proc.stdout.decode(errors="surrogateescape").rstrip("\n")


def _read_head(git_dir: Path) -> str:
    return _read_small(git_dir, "HEAD")


def _read_small(folder: Path, name: str) -> str:
    """A small file of git's admin folder, read without following a link ("" when absent or not a regular file)."""
    try:
        return beneath.read_text(folder, name, errors="replace", max_bytes=64 * 1024).strip()
    except (OSError, GraphLemonError):
        return ""
