"""`graphlemon gc`: what finished tasks leave behind, removed when nothing is lost.

A task that ended (done or abandoned) keeps its worktrees under `.graphlemon/worktrees/<task>/`
and its branches `graphlemon/<task>/*`. Nothing here loses work:

* a worktree is removed only when git calls it clean (its commits stay on its branch);
* a branch is deleted only when its tip is already in HEAD of the main worktree
  (for a done task: merged); any other branch is kept and reported;
* the test runner's scratch folders are removed only when their owning process has ended;
* an execution log a killed run left `open` (no live run holds its task, nothing written for 10 minutes) is closed,
  so retention can purge it in time (a resumed node reopens it and appends; docs/logs.md).

A task that is blocked, paused or running is never touched: a person or a run still needs it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from . import gitrun
from .errors import ErrorCode, GraphLemonError
from .project import ProjectHandle
from .scratch import sweep_stale
from .taskboard import TaskBoard

Action = Literal["remove_worktree", "delete_branch", "keep", "remove_scratch", "close_log"]


class GcItem(BaseModel):
    action: Action
    target: str
    task_id: str | None = None
    reason: str = ""


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = gitrun.text(root, *args)
    if check and proc.returncode != 0:
        raise GraphLemonError(ErrorCode.GIT_ERROR, f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


def _in_head(root: Path, branch: str) -> bool:
    return _git(root, "merge-base", "--is-ancestor", f"refs/heads/{branch}", "HEAD", check=False).returncode == 0


def _clean(path: Path) -> bool:
    proc = _git(path, "status", "--porcelain", "--untracked-files=all", check=False)
    return proc.returncode == 0 and not proc.stdout.strip()


def plan_gc(handle: ProjectHandle) -> list[GcItem]:
    """What `gc` would do, in order: worktrees first (a branch checked out in one cannot be deleted)."""
    root, items = handle.root, []
    finished = [t for t in TaskBoard(handle.ledger).all().values() if t.terminal]
    for task in finished:
        base = handle.state_dir / "worktrees" / task.task_id
        checked_out = set()
        for path in sorted(p for p in base.glob("*") if (p / ".git").exists()):
            if _clean(path):
                items.append(GcItem(action="remove_worktree", target=str(path), task_id=task.task_id))
            else:
                checked_out.add(_git(path, "rev-parse", "--abbrev-ref", "HEAD", check=False).stdout.strip())
                items.append(GcItem(action="keep", target=str(path), task_id=task.task_id,
                                    reason="the worktree has uncommitted changes"))  # fmt: skip
        refs = _git(root, "for-each-ref", "--format=%(refname:short)", f"refs/heads/graphlemon/{task.task_id}/")
        for branch in refs.stdout.split():
            if branch in checked_out:
                items.append(GcItem(action="keep", target=branch, task_id=task.task_id,
                                    reason="checked out in a kept worktree"))  # fmt: skip
            elif _in_head(root, branch):
                items.append(GcItem(action="delete_branch", target=branch, task_id=task.task_id))
            else:
                items.append(GcItem(action="keep", target=branch, task_id=task.task_id,
                                    reason="its commits are not in HEAD"))  # fmt: skip
    items += [
        GcItem(action="remove_scratch", target=str(p), reason="its run has ended") for p in sweep_stale(dry_run=True)
    ]
    from .execlogs.retention import abandoned_logs

    items += [
        GcItem(action="close_log", target=log.node_exec_id, task_id=log.task_id,
               reason=f"no live run of its task, {log.idle_s} s without a line")
        for log in abandoned_logs(handle.ledger)
    ]  # fmt: skip
    return items


def run_gc(handle: ProjectHandle, *, dry_run: bool = False) -> list[GcItem]:
    items = plan_gc(handle)
    if dry_run:
        return items
    root = handle.root
    for item in items:
        if item.action == "remove_worktree":
            _git(root, "worktree", "remove", item.target)  # no --force: git re-checks that it is clean
        elif item.action == "delete_branch":
            _git(root, "branch", "-D", item.target)  # -D: merged into HEAD, checked above, not only upstream
        elif item.action == "remove_scratch":
            shutil.rmtree(item.target, ignore_errors=True)
    from .execlogs.retention import abandoned_logs, close_abandoned

    closing = {i.target for i in items if i.action == "close_log"}
    close_abandoned(handle.ledger, [log for log in abandoned_logs(handle.ledger) if log.node_exec_id in closing])
    for task_id in {i.task_id for i in items if i.action == "remove_worktree"}:
        base = handle.state_dir / "worktrees" / str(task_id)
        if base.is_dir() and not any(p for p in base.iterdir() if p.name != ".lock"):
            shutil.rmtree(base, ignore_errors=True)
    return items
