"""Git worktrees for the Coder stage (REQ-03), with GitPython.

Per task: an integration worktree on branch `graphlemon/<task>/integration`,
started from the repository's HEAD; per unit: a worktree on branch
`graphlemon/<task>/<unit>`, started from the integration branch. A unit's work
is committed in its worktree and merged into the integration branch; a merge
conflict aborts the merge (no conflict residue) and raises MERGE_CONFLICT
naming the files — never a silent overwrite. Worktrees live under
`.graphlemon/worktrees/` (excluded from git status).
"""

from __future__ import annotations

import fcntl
import re
import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from git import GitCommandError, InvalidGitRepositoryError, NoSuchPathError, Repo

from .errors import ErrorCode, GraphLemonError, invalid_param
from .staged_links import drop_outward_links

IDENTITY = {
    "GIT_AUTHOR_NAME": "GraphLemon",
    "GIT_AUTHOR_EMAIL": "devloop@graphlemon.local",
    "GIT_COMMITTER_NAME": "GraphLemon",
    "GIT_COMMITTER_EMAIL": "devloop@graphlemon.local",
}
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
INTEGRATION = "_integration"


@dataclass(frozen=True)
class Worktree:
    path: Path
    branch: str

    @property
    def repo(self) -> Repo:
        return Repo(self.path)

    def head(self) -> str:
        return self.repo.head.commit.hexsha


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


def _git_error(action: str, exc: GitCommandError) -> GraphLemonError:
    detail = (exc.stderr or exc.stdout or str(exc)).strip()
    return GraphLemonError(ErrorCode.GIT_ERROR, f"git {action} failed: {detail}", action=action)


class Worktrees:
    """The worktrees of one task in one repository."""

    def __init__(self, repo_root: Path, task_id: str, state_dir: Path | None = None) -> None:
        self.repo_root = Path(repo_root)
        self.task_id = _safe(task_id, "task id")
        self.base = task_lock_dir(state_dir or self.repo_root / ".graphlemon", task_id)
        self.repo = Repo(self.repo_root)
        self.refused_links: list[str] = []  # symlinks leaving the repository the commit step dropped

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
                    self._run(wt.repo, "merge", "--no-edit", "-m", f"graphlemon: sync {unit_id} with integration", integration.branch)
            except GraphLemonError as exc:
                self._abort_merge(wt.repo)
                raise GraphLemonError(
                    ErrorCode.MERGE_CONFLICT,
                    f"unit {unit_id} conflicts with the integration branch; the merge was aborted: {exc.message}",
                    unit_id=unit_id,
                ) from None
        return wt

    @staticmethod
    def _abort_merge(repo: Repo) -> None:
        try:
            repo.git.merge("--abort")
        except GitCommandError:
            pass

    def _ensure(self, unit_id: str, *, start_point: str) -> Worktree:
        path = self.base / unit_id
        branch = self.branch(unit_id)
        if (path / ".git").exists():
            return Worktree(path, branch)
        with self._lock():  # units start in parallel: one `git worktree add` at a time
            if (path / ".git").exists():
                return Worktree(path, branch)
            self._run(self.repo, "worktree", "prune")
            exists = branch in {h.name for h in Repo(self.repo_root).heads}
            add = ["worktree", "add", str(path), branch] if exists else ["worktree", "add", "-b", branch, str(path), start_point]
            self._run(self.repo, *add)
        return Worktree(path, branch)

    # -- changes -------------------------------------------------------------------------------
    def commit_all(self, wt: Worktree, message: str) -> str | None:
        """Commit everything in the worktree; returns the new commit, or None if nothing changed."""
        repo = wt.repo
        self._run(repo, "add", "-A")
        self.refused_links += drop_outward_links(wt.path)  # never commit a symlink that leaves the repository
        if not repo.is_dirty(index=True, working_tree=False, untracked_files=False):
            return None
        self._run(repo, "commit", "-q", "-m", message)
        return repo.head.commit.hexsha

    def diff(self, wt: Worktree, base: str) -> str:
        """Unified diff of the worktree's branch against `base` (a commit or branch)."""
        return self._run(wt.repo, "diff", f"{base}..{wt.branch}")

    def changed_files(self, wt: Worktree, base: str) -> list[str]:
        out = self._run(wt.repo, "diff", "--name-only", f"{base}..{wt.branch}")
        return [line for line in out.splitlines() if line]

    def merge_into_integration(self, unit_id: str, message: str | None = None) -> str:
        """Merge a unit branch into the integration branch; MERGE_CONFLICT (merge aborted) on conflict."""
        integration = self.integration()
        repo = integration.repo
        branch = self.branch(unit_id)
        try:
            with self._lock(), repo.git.custom_environment(**IDENTITY):
                repo.git.merge("--no-ff", "-m", message or f"graphlemon: merge {unit_id}", branch)
        except GitCommandError as exc:
            conflicted = sorted(repo.index.unmerged_blobs())
            try:
                repo.git.merge("--abort")
            except GitCommandError:
                pass
            if conflicted:
                raise GraphLemonError(
                    ErrorCode.MERGE_CONFLICT,
                    f"merging unit {unit_id} into the integration branch conflicts in {', '.join(conflicted)}; the merge "
                    "was aborted and nothing was overwritten",
                    unit_id=unit_id,
                    files=conflicted,
                ) from None
            raise _git_error("merge", exc) from None
        return repo.head.commit.hexsha

    def merge_into(self, target_repo_root: Path) -> str | None:
        """Merge the integration branch into the main worktree's current branch if that worktree is clean."""
        main = Repo(target_repo_root)
        if main.is_dirty(untracked_files=False) or main.head.is_detached:
            return None
        with main.git.custom_environment(**IDENTITY):
            try:
                main.git.merge("--no-ff", "-m", f"graphlemon: {self.task_id}", self.branch(INTEGRATION))
            except GitCommandError as exc:
                try:
                    main.git.merge("--abort")
                except GitCommandError:
                    pass
                raise GraphLemonError(
                    ErrorCode.MERGE_CONFLICT,
                    f"merging {self.branch(INTEGRATION)} into {main.active_branch.name} conflicts; the merge was aborted",
                ) from exc
        return main.head.commit.hexsha

    def _lock(self) -> AbstractContextManager[None]:
        """Units working at once (threads or processes) change the repository's worktrees and refs one at a time."""
        return task_lock(self.base)

    def recover(self) -> list[str]:
        """After a killed run: in every worktree of the task drop stale git locks and abort a half-done merge.
        Uncommitted files stay: they are whole files of finished tool calls (writes are atomic), and a turn whose
        answer was saved is not run again, so its files are still needed. -> what it did."""
        done = []
        for path in sorted(self.base.glob("*")):
            if not (path / ".git").exists():
                continue
            admin = self._admin_dir(path)
            if admin is not None and self._half_made(admin):  # killed inside `git worktree add`
                self._discard_half_made(path, admin)  # made again on first use, from its branch
                done.append(f"{path.name}: removed a worktree that `git worktree add` had not finished")
                continue
            try:
                repo = Repo(path)
                git_dir = Path(repo.git.rev_parse("--git-dir"))
            except (InvalidGitRepositoryError, NoSuchPathError, GitCommandError) as exc:
                raise GraphLemonError(
                    ErrorCode.GIT_ERROR, f"worktree {path} cannot be opened ({exc}); repair or remove it, then resume"
                ) from None
            git_dir = git_dir if git_dir.is_absolute() else path / git_dir
            done += [f"{path.name}: removed a stale {lock}" for lock in self._drop_stale_locks(repo, git_dir)]
            if (git_dir / "MERGE_HEAD").exists():
                self._abort_merge(repo)
                done.append(f"{path.name}: aborted an unfinished merge")
        return done

    def _drop_stale_locks(self, repo: Repo, git_dir: Path) -> list[str]:
        """A git command killed mid-write leaves `<file>.lock` beside what it was changing: index, HEAD, ORIG_HEAD in
        the worktree's own git dir, and the ref of its branch. All belong to this task (its run is dead): drop them.
        Locks shared with other tasks (packed-refs, the main worktree's) are left to git and the person."""
        locks = {lock.name: lock for lock in sorted(git_dir.glob("*.lock"))}
        ref = None if repo.head.is_detached else repo.head.reference.path
        if ref and (Path(self.repo.git_dir) / f"{ref}.lock").is_file():
            locks[f"lock on {ref}"] = Path(self.repo.git_dir) / f"{ref}.lock"
        for lock in locks.values():
            lock.unlink()
        return list(locks)

    def _admin_dir(self, path: Path) -> Path | None:
        """The worktree's admin dir in the main repository (from its `.git` pointer), if it lies there."""
        pointer = (path / ".git").read_text(encoding="utf-8", errors="replace") if (path / ".git").is_file() else ""
        if not pointer.startswith("gitdir:"):
            return None
        admin = Path(pointer.removeprefix("gitdir:").strip())
        return admin if admin.resolve().parent == Path(self.repo.git_dir).resolve() / "worktrees" else None

    @staticmethod
    def _half_made(admin: Path) -> bool:
        """git writes the admin dir, locks it as 'initializing', checks out, then unlocks: a kill leaves one of those."""
        locked = admin / "locked"
        initializing = locked.is_file() and locked.read_text(errors="replace").startswith("initializing")
        return not (admin / "HEAD").is_file() or not (admin / "commondir").is_file() or initializing

    def _discard_half_made(self, path: Path, admin: Path) -> None:
        """Such a worktree holds no work of its own (no turn runs before it exists): drop it and its admin dir."""
        shutil.rmtree(path)
        shutil.rmtree(admin, ignore_errors=True)
        self._run(self.repo, "worktree", "prune")

    def remove(self, unit_id: str) -> None:
        path = self.base / unit_id
        if path.exists():
            self._run(self.repo, "worktree", "remove", "--force", str(path))

    @staticmethod
    def _run(repo: Repo, *args: str) -> str:
        try:
            with repo.git.custom_environment(**IDENTITY):
                return repo.git.execute(["git", *args])
        except GitCommandError as exc:
            raise _git_error(args[0], exc) from None
