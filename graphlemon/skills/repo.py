"""A project's skills repository (REQ-08): `.graphlemon/skills/`, its own git repository.

`graphlemon init` (or the first use on an existing project) creates it, seeded from the
built-in skills in one commit, so the target repository's history stays clean. Every
change of a skill is a commit here (`iteration.py`); nothing is ever rewritten: an undo
is a revert commit. A task pins the commit it started with (`pin_for_task`), and its
agents render skills from that commit, which each usage record carries as `skill_commit`.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import gitrun
from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..models import SkillRecord
from . import ROLES, SKILLS_DIR, skill_path

SKILLS_FOLDER = "skills"
IDENTITY = {
    "GIT_AUTHOR_NAME": "GraphLemon",
    "GIT_AUTHOR_EMAIL": "skills@graphlemon.local",
    "GIT_COMMITTER_NAME": "GraphLemon",
    "GIT_COMMITTER_EMAIL": "skills@graphlemon.local",
}


class SkillRepo:
    """The skills repository of one project (`<state_dir>/skills`)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / SKILLS_FOLDER

    # -- git -----------------------------------------------------------------------------------
    def git(self, *args: str, check: bool = True) -> str:
        proc = gitrun.text(self.path, *args, env=IDENTITY)
        if check and proc.returncode != 0:
            raise GraphLemonError(
                ErrorCode.GIT_ERROR,
                f"git {args[0]} in the skills repository {self.path} failed: {(proc.stderr or proc.stdout).strip()}",
                action=args[0],
            )
        return proc.stdout.strip()

    @contextmanager
    def lock(self) -> Iterator[None]:
        """One writer at a time (parallel tasks, the CLI)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with (self.state_dir / "skills.lock").open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def exists(self) -> bool:
        return (self.path / ".git").is_dir()

    # -- create --------------------------------------------------------------------------------
    def ensure(self, ledger) -> str:
        """Create and seed the repository if it is missing (one commit of every built-in skill); a role the
        built-ins gained since is added in one more commit. Returns HEAD."""
        with self.lock():
            fresh = not self.exists()
            if fresh:
                self.path.mkdir(parents=True, exist_ok=True)
                self.git("init", "--quiet", "-b", "main")
            missing = [r for r in ROLES if fresh or not (self.path / f"{r}.md").exists()]
            if not missing:
                return self.head()
            for role in missing:
                (self.path / f"{role}.md").write_text(skill_path(role, SKILLS_DIR).read_text(encoding="utf-8"))
            self.git("add", "--", *(f"{r}.md" for r in missing))
            what = "seed: the built-in skills" if fresh else f"seed: built-in skill(s) {', '.join(missing)}"
            self.git("commit", "--quiet", "--no-verify", "-m", what)
            head = self.head()
        ledger.append(SkillRecord(event="seeded", commit=head, roles=missing))
        return head

    # -- read ----------------------------------------------------------------------------------
    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def has_commit(self, commit: str) -> bool:
        return self.exists() and bool(self.git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", check=False))

    def text_at(self, role: str, commit: str) -> str:
        """The text of `role`'s skill at `commit`."""
        skill_path(role)  # an unknown role is INVALID_PARAM
        proc = gitrun.text(self.path, "show", f"{commit}:{role}.md")
        if proc.returncode != 0:
            raise invalid_param(f"the skills repository has no {role}.md at commit {commit[:12]}", role=role)
        return proc.stdout

    def contains(self, commit: str, ancestor: str) -> bool:
        """`ancestor` is `commit` or in its history."""
        return (
            self.exists()
            and not gitrun.git(self.path, "merge-base", "--is-ancestor", ancestor, commit, check=False).returncode
        )

    def diff(self, old: str, new: str) -> str:
        return self.git("diff", old, new)

    def diff_stat(self, old: str, new: str) -> str:
        return self.git("diff", "--shortstat", old, new)

    # -- write (callers hold `lock()`) -----------------------------------------------------------
    def commit_text(self, role: str, text: str, message: str) -> tuple[str, str]:
        """Write `role`'s skill and commit it; returns (parent, commit). Unchanged text is INVALID_PARAM."""
        parent = self.head()
        file = self.path / f"{role}.md"
        if file.exists() and file.read_text(encoding="utf-8") == text:
            raise invalid_param(f"the new {role} skill is the same as the current one; nothing to commit", role=role)
        file.write_text(text, encoding="utf-8")
        self.git("add", "--", file.name)
        self.git("commit", "--quiet", "--no-verify", "-m", message)
        return parent, self.head()

    def revert(self, commit: str, message: str) -> str:
        """Undo `commit` as a new commit (history is kept)."""
        self.git("revert", "--no-edit", "--no-commit", commit)
        self.git("commit", "--quiet", "--no-verify", "--allow-empty", "-m", message)
        return self.head()


def pinned_commit(ledger, task_id: str) -> str | None:
    """The task's pinned skills commit, if it has one (read only)."""
    pinned = [r for r in ledger.read_as("skill", SkillRecord) if r.event == "pinned" and r.task_id == task_id]
    return pinned[-1].commit if pinned else None


def pin_for_task(state_dir: Path, ledger, task_id: str) -> str:
    """The skills commit a task renders its skills from: pinned when it first asks (the repository is created on
    first use), moved on by an applied iteration."""
    pinned = pinned_commit(ledger, task_id)
    if pinned is not None:
        return pinned
    head = SkillRepo(state_dir).ensure(ledger)
    ledger.append(SkillRecord(event="pinned", commit=head, task_id=task_id))
    return head


def repin(ledger, task_id: str, commit: str, iteration_id: str) -> None:
    ledger.append(SkillRecord(event="pinned", commit=commit, task_id=task_id, iteration_id=iteration_id))


def repin_reverted(repo: SkillRepo, ledger, commit: str, revert: str, iteration_id: str) -> list[str]:
    """After `commit` was reverted by `revert`: every task whose pin contains `commit` is pinned to `revert`, so its
    next turn (a resumed task included) renders the restored skill. Returns those tasks."""
    latest: dict[str, str] = {}
    for record in ledger.read_as("skill", SkillRecord):
        if record.event == "pinned" and record.task_id:
            latest[record.task_id] = record.commit
    moved = [task for task, pinned in latest.items() if pinned != revert and repo.contains(pinned, commit)]
    for task in moved:
        repin(ledger, task, revert, iteration_id)
    return moved
