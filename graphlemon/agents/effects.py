"""Judge what a file-changing tool (or an executor turn) did, by git's view of the work tree.

The tools check the request (paths, allow-list); this module checks the effect.
`TreeGuard(sandbox)` observes the work tree before the change; `judge()` after
it lists every path whose state git sees as different (content, kind, mode),
reverts each one the role may not make and returns why. A change is refused when
its path is outside the role's allow-list, when it leaves a symlink (agents may
not create one), or when it changes a file's mode (unless the policy allows it).

What git does not see is not judged here: ignored paths (`.graphlemon/`, the
ledger, is one) and anything outside the work tree. Those are guarded by the
tools' own path checks and, for test runs, by the confinement (testrun/confine.py).
A folder that is not a git work tree is not observed (`judge()` returns nothing), and
`.git/` / `.graphlemon/` are never undone here (the loop writes its own state there
while a tool runs; agents cannot reach them through the tools' path checks).
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import gitrun
from ..errors import ErrorCode, GraphLemonError
from .sandbox import PROTECTED_TOP, Sandbox

MAX_KEPT_BYTES = 20_000_000
Kind = Literal["file", "link", "absent", "other"]


@dataclass(frozen=True)
class PathState:
    kind: Kind
    executable: bool = False
    data: bytes | None = None  # file bytes or link target; None when too large to keep
    size: int = 0
    mtime_ns: int = 0

    def same_as(self, other: PathState) -> bool:
        if (self.kind, self.executable) != (other.kind, other.executable):
            return False
        if self.data is not None and other.data is not None:
            return self.data == other.data
        return (self.size, self.mtime_ns) == (other.size, other.mtime_ns)


@dataclass(frozen=True)
class Refusal:
    path: str
    why: str


@dataclass
class TreeGuard:
    sandbox: Sandbox
    before: dict[str, PathState] | None = field(init=False)  # dirty paths before; None: not a git work tree

    def __post_init__(self) -> None:
        root = self.sandbox.root
        self.before = {rel: path_state(root / rel) for rel in dirty_paths(root)} if is_work_tree(root) else None

    def changed(self, skip: set[str] = frozenset()) -> dict[str, tuple[PathState, PathState]]:
        """path -> (state before, state now) for every path git sees as changed since the guard was made
        (`skip`: paths judged elsewhere, e.g. files git ignored before a rule changed)."""
        if self.before is None:
            return {}
        root = self.sandbox.root
        now = dirty_paths(root)
        out: dict[str, tuple[PathState, PathState]] = {}
        for rel in sorted(now | set(self.before)):
            if rel.split("/", 1)[0] in PROTECTED_TOP or rel in skip:  # the loop's own state: never undone here
                continue
            current = path_state(root / rel)
            if rel in self.before:
                if not current.same_as(self.before[rel]):
                    out[rel] = (self.before[rel], current)
            else:
                out[rel] = (index_state(root, rel), current)
        return out

    def judge(self, skip: set[str] = frozenset()) -> list[Refusal]:
        """Revert every change this role may not make; one Refusal per reverted path."""
        refusals = []
        for rel, (before, now) in self.changed(skip).items():
            why = self.refusal(rel, before, now)
            if why is not None:
                self.revert(rel)
                refusals.append(Refusal(rel, why))
        return refusals

    def refusal(self, rel: str, before: PathState, now: PathState) -> str | None:
        policy = self.sandbox.policy
        if not self.sandbox.is_writable(rel):
            allowed = ", ".join(policy.writable) or "nothing"
            return f"{rel!r} is outside this role's writable paths ({allowed})"
        if now.kind == "link":
            return f"{rel!r} became a symlink; agents may not create or change symlinks"
        if now.kind == "other":
            return f"{rel!r} is not a regular file"
        if now.kind == "file" and before.kind == "file" and now.executable != before.executable:
            if not policy.allow_mode_change:
                return f"{rel!r} changed mode (executable bit); this role may not change file modes"
        if now.kind == "file" and before.kind == "absent" and now.executable and not policy.allow_mode_change:
            return f"{rel!r} was created executable; this role may not set file modes"
        return None

    def revert(self, rel: str) -> None:
        """Put `rel` back as it was when the guard was made."""
        root = self.sandbox.root
        path = root / rel
        before = (self.before or {}).get(rel)
        _remove(path)
        if before is not None and before.kind == "file" and before.data is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(before.data)
            os.chmod(path, 0o755 if before.executable else 0o644)
        elif before is not None and before.kind == "link" and before.data is not None:
            os.symlink(os.fsdecode(before.data), path)
        elif before is None and _git(root, "cat-file", "-e", f":{rel}", check=False).returncode == 0:
            _git(root, "checkout", "--", rel)
        else:
            _prune_empty_dirs(path.parent, root)


def violation(tool: str, refusals: list[Refusal]) -> GraphLemonError:
    """One SANDBOX_VIOLATION naming every reverted path."""
    text = "; ".join(r.why for r in refusals)
    return GraphLemonError(
        ErrorCode.SANDBOX_VIOLATION,
        f"sandbox: {tool} changed what this role may not change; reverted: {text}",
        path=refusals[0].path,
    )


def path_state(path: Path) -> PathState:
    try:
        st = os.lstat(path)
    except OSError:
        return PathState("absent")
    if stat.S_ISLNK(st.st_mode):
        return PathState("link", data=os.fsencode(os.readlink(path)))
    if not stat.S_ISREG(st.st_mode):
        return PathState("other")
    data = _read_nofollow(path) if st.st_size <= MAX_KEPT_BYTES else None
    return PathState("file", bool(st.st_mode & 0o111), data, st.st_size, st.st_mtime_ns)


def index_state(root: Path, rel: str) -> PathState:
    """The state git's index records for a path that was clean (absent when untracked)."""
    out = _git(root, "ls-files", "-s", "-z", "--", rel, check=False).stdout
    entry = out.split(b"\0", 1)[0]
    if not entry:
        return PathState("absent")
    mode = entry.split(b" ", 1)[0]
    if mode == b"120000":
        return PathState("link")
    return PathState("file", executable=mode == b"100755")


def is_work_tree(root: Path) -> bool:
    proc = _git(root, "rev-parse", "--show-toplevel", check=False)
    return proc.returncode == 0 and Path(os.fsdecode(proc.stdout.strip())).resolve() == Path(root).resolve()


def dirty_paths(root: Path) -> set[str]:
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames").stdout
    return {os.fsdecode(entry[3:]) for entry in out.split(b"\0") if len(entry) > 3}


def _read_nofollow(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _git(
    root: Path, *args: str, check: bool = True, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return gitrun.git(root, *args, check=check, input=input, timeout=120)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()


def _prune_empty_dirs(folder: Path, root: Path) -> None:
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def guard_run(root: Path, writable: list[str]) -> TreeGuard:
    """A guard for a run of agent-written code (a test run) in `root`: it may change only `writable`."""
    from .executor_seam import SandboxPolicy

    return TreeGuard(Sandbox(SandboxPolicy(root=root, writable=writable)))


def record_run_refusals(guard: TreeGuard, ledger, *, what: str, **node: object) -> list[Refusal]:
    """Revert what the run changed that it may not, and record each as a violation node event (`node`: its
    node_exec_id, task_id, stage, unit_id, attempt)."""
    from ..models import NodeEvent

    refusals = guard.judge()
    for refusal in refusals:
        ledger.append(
            NodeEvent(
                event="violation", status="running", error_code="SANDBOX_VIOLATION",
                error=f"{what}: {refusal.why}; the change was reverted", **node,
            )
        )  # fmt: skip
    return refusals
