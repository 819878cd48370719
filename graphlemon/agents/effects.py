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
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .. import beneath, gitrun
from ..errors import ErrorCode, GraphLemonError
from ..staged_links import drop_special
from .kept_files import ABSENT, Keeper, KeptState, link_on_the_way, look, put_back, unchanged
from .sandbox import PROTECTED_TOP, Sandbox


@dataclass(frozen=True)
class Refusal:
    path: str
    why: str
    put_back: bool = True  # False: its earlier bytes were not kept, so it was left as it is (`why` says so)

    @property
    def outcome(self) -> str:
        """What became of the change, for a violation's message."""
        return "the change was reverted" if self.put_back else "it was left as it is"


@dataclass
class TreeGuard:
    sandbox: Sandbox
    keeper: Keeper = field(default_factory=Keeper)
    before: dict[str, KeptState] | None = field(init=False)  # dirty paths before; None: not a git work tree

    def __post_init__(self) -> None:
        root = self.sandbox.root
        self.before = {rel: self.keeper.look(root, rel) for rel in dirty_paths(root)} if is_work_tree(root) else None

    def changed(self, skip: set[str] = frozenset()) -> dict[str, tuple[KeptState, KeptState]]:
        """path -> (state before, state now) for every path git sees as changed since the guard was made
        (`skip`: paths judged elsewhere, e.g. files git ignored before a rule changed)."""
        if self.before is None:
            return {}
        root = self.sandbox.root
        now = dirty_paths(root)
        out: dict[str, tuple[KeptState, KeptState]] = {}
        for rel in sorted(now | set(self.before)):
            if rel.split("/", 1)[0] in PROTECTED_TOP or rel in skip:  # the loop's own state: never undone here
                continue
            current = look(root, rel)
            if rel in self.before:
                if not unchanged(root, rel, self.before[rel], current):
                    out[rel] = (self.before[rel], current)
            else:
                out[rel] = (index_state(root, rel), current)
        return out

    def judge(self, skip: set[str] = frozenset()) -> list[Refusal]:
        """Revert every change this role may not make; one Refusal per path (saying so when it could not be put
        back byte for byte, and was therefore left as it is)."""
        refusals = []
        for rel, (before, now) in self.changed(skip).items():
            why = self.refusal(rel, before, now)
            if why is not None:
                done = self.revert(rel)
                refusals.append(Refusal(rel, why if done else why + NOT_PUT_BACK, put_back=done))
        return refusals

    def refusal(self, rel: str, before: KeptState, now: KeptState) -> str | None:
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

    def revert(self, rel: str) -> bool:
        """Put `rel` back as it was when the guard was made. -> False when that cannot be done byte for byte:
        then nothing is touched (a file whose earlier bytes were not kept is never deleted)."""
        return restore_path(self.sandbox.root, rel, (self.before or {}).get(rel))


def clear_special_files(root: Path) -> list[Refusal]:
    """Remove every FIFO, socket and device file a confined run (a test run, a claude_code turn) left in the work
    tree, before git looks at it (`staged_links.drop_special`); one Refusal each, for the caller to record."""
    if not Path(root).is_dir():
        return []
    return [Refusal(r.path, r.why, put_back=r.why.endswith("it was removed")) for r in drop_special(Path(root))]


NOT_PUT_BACK = "; its earlier bytes were not kept, so it could not be put back byte for byte and was left as it is"


def restore_path(root: Path, rel: str, before: KeptState | None) -> bool:
    """`rel` as it was: its kept state, or (None: git showed it clean before) the index's version, or absent."""
    if before is not None:
        return put_back(root, rel, before)
    if _git(root, "cat-file", "-e", f":{rel}", check=False).returncode == 0:
        if beneath.kind(root, rel) == "dir":
            return False
        link = link_on_the_way(root, rel)  # it was tracked and clean: a link among its folders is the turn's
        if link is not None:
            beneath.remove(root, link)
        beneath.remove(root, rel)
        return _git(root, "checkout", "--", rel, check=False).returncode == 0
    return put_back(root, rel, ABSENT)


def violation(tool: str, refusals: list[Refusal]) -> GraphLemonError:
    """One SANDBOX_VIOLATION naming every reverted path."""
    text = "; ".join(r.why for r in refusals)
    head = "reverted" if all(r.put_back for r in refusals) else "refused (each says what became of it)"
    return GraphLemonError(
        ErrorCode.SANDBOX_VIOLATION,
        f"sandbox: {tool} changed what this role may not change; {head}: {text}",
        path=refusals[0].path,
    )


def index_state(root: Path, rel: str) -> KeptState:
    """The state git's index records for a path that was clean (absent when untracked)."""
    out = _git(root, "ls-files", "-s", "-z", "--", rel, check=False).stdout
    entry = out.split(b"\0", 1)[0]
    if not entry:
        return ABSENT
    mode = entry.split(b" ", 1)[0]
    if mode == b"120000":
        return KeptState("link")
    return KeptState("file", mode=0o755 if mode == b"100755" else 0o644)


def is_work_tree(root: Path) -> bool:
    proc = _git(root, "rev-parse", "--show-toplevel", check=False)
    return proc.returncode == 0 and Path(os.fsdecode(proc.stdout.strip())).resolve() == Path(root).resolve()


def dirty_paths(root: Path) -> set[str]:
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames").stdout
    return {os.fsdecode(entry[3:]) for entry in out.split(b"\0") if len(entry) > 3}


def _git(
    root: Path, *args: str, check: bool = True, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return gitrun.git(root, *args, check=check, input=input, timeout=120)


def guard_run(root: Path, writable: list[str]) -> TreeGuard:
    """A guard for a run of agent-written code (a test run) in `root`: it may change only `writable`."""
    from .executor_seam import SandboxPolicy

    return TreeGuard(Sandbox(SandboxPolicy(root=root, writable=writable)))


def record_run_refusals(guard: TreeGuard, ledger, *, what: str, result=None, **node: object) -> list[Refusal]:
    """Revert what the run changed that it may not, and record each as a violation node event (`node`: its
    node_exec_id, task_id, stage, unit_id, attempt); so is each of the run's files the host refused to read
    (`result.refused_reads`: a link or FIFO it planted)."""
    from ..models import NodeEvent

    for refused in getattr(result, "refused_reads", None) or []:
        ledger.append(NodeEvent(event="violation", status="running", error_code="SANDBOX_VIOLATION",
                                error=f"{what}: {refused}", **node))  # fmt: skip
    refusals = clear_special_files(guard.sandbox.root)  # before git looks: a FIFO would block it
    refusals += guard.judge()
    for refusal in refusals:
        ledger.append(
            NodeEvent(
                event="violation", status="running", error_code="SANDBOX_VIOLATION",
                error=f"{what}: {refusal.why}; {refusal.outcome}", **node,
            )
        )  # fmt: skip
    return refusals
