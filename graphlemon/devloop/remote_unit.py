"""A unit loop on a worker that shares nothing with the devloop but a git remote and a blob store (docs/scale.md).

    devloop (the one writer of the ledger)          worker (any machine)
    dispatch: push the integration branch, ──job──▶ run_remote_unit: clone the task's branches, unpack the state
              the state snapshot to the store        snapshot, run the unit loop on that scratch copy, push the
                                                     unit's branch, return what it wrote after the snapshot
    take_in: fetch the unit's branch, merge ◀─result─┘
             a green one, append the records

The worker learns the task's remaining budget from the snapshot and an allowance the devloop grants it: the
remaining budget shared by the units that may run at once (`MAX_PARALLEL_UNITS`), written into its
scratch copy as the task's budget limit (never returned). So units spending at once stay within the task's
budget, and each unit still checks it before every call as in one process.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field

from ..agents.budget import budget_status
from ..agents.playbook import Playbook
from ..build import build_id, build_refusal, python_refusal
from ..errors import ClassifierBlocked, ErrorCode, GraphLemonError, invalid_param
from ..models import BudgetConfig
from ..project import STATE_DIR, ProjectHandle, ensure_excluded
from ..stages.coder import unit_node_id
from ..stages.outcomes import UnitOutcome
from ..stages.session import LoopConfig, LoopSession, RunRef, open_session
from ..worktrees import task_lock
from . import remote_git
from .remote_records import (
    OUTCOMES,
    UnitRecords,
    absorb,
    check,
    collect,
    mark_state,
    pack_state,
    snapshot_key,
    unpack_state,
)
from .stages import MAX_PARALLEL_UNITS, Stages, call
from .unit_loop import green_merge_message, run_unit_loop


class BlobStore(Protocol):
    """Where snapshots go: a Prefect filesystem block (`read_path` / `write_path`), or `FolderStore`."""

    def read_path(self, path: str) -> bytes: ...

    def write_path(self, path: str, content: bytes) -> object: ...


class FolderStore:
    """A `BlobStore` in a folder of this machine."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def read_path(self, path: str) -> bytes:
        return (self.root / path).read_bytes()

    def write_path(self, path: str, content: bytes) -> str:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
            tmp.write_bytes(content)
            tmp.replace(target)
        return str(target)


Resolve = Callable[[str], str]  # a project's `git_remote` (a URL or a block's name) -> the URL


def as_given(reference: str) -> str:
    return reference


class RemoteUnitJob(BaseModel):
    """What a worker needs to run one unit loop: the unit, the remote, the snapshot's key, the budget allowance."""

    task_id: str = Field(min_length=1)
    unit_id: str = Field(min_length=1)
    loop_round: int = Field(ge=0)
    feedback: str | None = None
    pass_tag: str = ""
    remote: str  # the project's `git_remote`: the URL, or `block:<name>` which each side resolves itself
    snapshot: str = Field(pattern=r"^graphlemon-snapshots/[A-Za-z0-9_-][A-Za-z0-9._-]*-[0-9a-f]{64}\.tar\.gz$")
    budget_limit: float | None = None
    heartbeat_s: float = Field(default=5.0, gt=0, le=300)  # how often the run tells it lives (remote_watch.py)
    build: str | None = None  # the devloop's GraphLemon build (graphlemon/build.py): a worker of another refuses
    # the scripted executor's playbook (its `from_file` parts inlined) in the store: no worker reads the devloop's path
    playbook: str | None = Field(default=None, pattern=r"^graphlemon-playbooks/[0-9a-f]{64}\.json$")

    @property
    def node_exec_id(self) -> str:
        return unit_node_id(self.task_id, self.unit_id, self.loop_round, self.pass_tag)


class RemoteUnitResult(BaseModel):
    """What a worker returns: the unit's outcome (or the error that stopped it) and everything it wrote."""

    node_exec_id: str
    outcome: UnitOutcome | None = None
    error_code: str | None = None
    error: str | None = None
    records: UnitRecords = Field(default_factory=UnitRecords)


def remote_of(project: ProjectHandle) -> str:
    """The project's git remote as set (`git_remote` in .graphlemon/project.json: a URL, or `block:<name>`)."""
    url = project.meta.settings.git_remote
    if not url:
        raise invalid_param(
            f"project {project.root} names no git remote (`git_remote` in .graphlemon/project.json): unit loops "
            "on workers that share no filesystem with it get the code through one"
        )
    return url


# -- the devloop's side ------------------------------------------------------------------------------------------
def dispatch(
    session: LoopSession, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str, store: BlobStore,
    sharing: int, resolve: Resolve = as_given,
) -> RemoteUnitJob:  # fmt: skip
    """Publish the task's branches and state for one unit loop; -> the job a worker runs."""
    reference = remote_of(session.project)
    url = remote_git.check_remote_url(resolve(reference))
    worktrees = session.worktrees
    # only the integration branch: a unit's branch comes from its workers (pushing the devloop's copy of it could
    # undo what a worker of a killed devloop pushed meanwhile)
    integration = worktrees.integration().branch
    with task_lock(worktrees.base):  # units of a wave are dispatched at once: one push at a time
        remote_git.publish(session.project.root, url, [integration])
    data = pack_state(session.project.state_dir)
    key = snapshot_key(unit_node_id(session.task_id, unit_id, loop_round, pass_tag), data)
    store.write_path(key, data)
    return RemoteUnitJob(
        task_id=session.task_id, unit_id=unit_id, loop_round=loop_round, feedback=feedback, pass_tag=pass_tag,
        remote=reference, snapshot=key, budget_limit=_allowance(session, sharing), build=build_id(),
        playbook=_ship_playbook(session, store),
    )  # fmt: skip


def _ship_playbook(session: LoopSession, store: BlobStore) -> str | None:
    """The scripted executor's playbook as the devloop reads it (its `from_file` parts inlined), into the store;
    -> its key (None for another executor)."""
    config = session.config
    if config.executor != "scripted" or config.playbook is None:
        return None
    data = Playbook.load(config.playbook).model_dump_json(exclude={"source"}).encode()
    key = f"graphlemon-playbooks/{hashlib.sha256(data).hexdigest()}.json"
    store.write_path(key, data)
    return key


def _allowance(session: LoopSession, sharing: int) -> float | None:
    """The budget limit one of `sharing` units running at once may reach: what is used plus its share of the rest."""
    status = budget_status(session.ledger, session.task_id)
    if status is None:
        return None
    return max(status.used + max(status.remaining, 0.0) / max(1, sharing), 1e-9)


def take_in(
    session: LoopSession, job: RemoteUnitJob, result: RemoteUnitResult, resolve: Resolve = as_given
) -> UnitOutcome:
    """The worker's result into the project: a green unit's branch fetched and merged into the integration branch,
    its records appended (once: a result taken in before returns the recorded outcome); the worker's error
    raised as it was."""
    if result.node_exec_id != job.node_exec_id:
        raise invalid_param(f"a unit result for {result.node_exec_id} came back for {job.node_exec_id}")
    stored = session.load_outcome(job.node_exec_id, UnitOutcome)
    if stored is not None:
        return stored
    branch, url = session.worktrees.branch(job.unit_id), resolve(job.remote)
    outcome = result.outcome
    if result.error_code is None and outcome is None:
        raise GraphLemonError(ErrorCode.EXECUTOR_ERROR, f"the unit result for {job.node_exec_id} has no outcome")
    check(session.ledger.state_dir, result.records)  # a malformed result changes nothing, not even the branch
    if outcome is not None or remote_git.remote_has(session.project.root, url, branch):  # (a stopped one's too)
        remote_git.fetch_branch(session.project.root, url, branch)
    if outcome is not None and outcome.green:
        merged = session.worktrees.merge_into_integration(job.unit_id, green_merge_message(job.unit_id, job.loop_round))
        outcome = outcome.model_copy(update={"commit": merged})
        result = _with_commit(result, merged)
    absorb(session.ledger, result.records)
    if result.error_code is not None:
        raise _as_raised(result.error_code, result.error or "the remote unit loop stopped", job.node_exec_id)
    return outcome


def _as_raised(code: str, message: str, node_exec_id: str) -> GraphLemonError:
    """The worker's error as the loop would have seen it in one process (an unknown code: the executor's error)."""
    if code == ErrorCode.CLASSIFIER_BLOCKED:
        return ClassifierBlocked(message, node_exec_id=node_exec_id)
    known = code in ErrorCode.__members__.values()
    return GraphLemonError(code if known else ErrorCode.EXECUTOR_ERROR, message, node_exec_id=node_exec_id)


def _with_commit(result: RemoteUnitResult, merged: str) -> RemoteUnitResult:
    """The unit's outcome record names the devloop's merge commit (the worker merged into its own scratch copy)."""
    lines = []
    for line in result.records.lines.get(OUTCOMES, []):
        data = json.loads(line)
        if data.get("node_exec_id") == result.node_exec_id and data.get("name") == "outcome":
            data["value"]["commit"] = merged
            line = json.dumps(data)
        lines.append(line)
    records = result.records.model_copy(update={"lines": {**result.records.lines, OUTCOMES: lines}})
    return result.model_copy(update={"records": records})


# -- the worker's side -------------------------------------------------------------------------------------------
def run_remote_unit(
    job: RemoteUnitJob, store: BlobStore, scratch: Path, stages_for: Callable[[RunRef], Stages] = Stages,
    agent_settings=None, resolve: Resolve = as_given,
) -> RemoteUnitResult:  # fmt: skip
    """Run one unit loop in `scratch` (an empty folder of the worker) from the remote and the snapshot: the
    unit's branch pushed back, everything it wrote returned. An error that stops the loop comes back with the
    records written up to it. A worker on a Python older than GraphLemon needs, or of another GraphLemon build than
    the devloop's, refuses the job before anything (EXECUTOR_ERROR saying which)."""
    refusal = python_refusal() or build_refusal(job.build)
    if refusal is not None:
        raise GraphLemonError(ErrorCode.EXECUTOR_ERROR, refusal, node_exec_id=job.node_exec_id)
    root, url = scratch / "project", resolve(job.remote)
    remote_git.clone_task(url, root, job.task_id, f"refs/heads/graphlemon/{job.task_id}/integration")
    ensure_excluded(root)
    state = root / STATE_DIR
    unpack_state(store.read_path(job.snapshot), state)
    shipped = {}
    if job.playbook is not None:  # the devloop's playbook, never its path (which this machine may not have)
        shipped["playbook"] = scratch / "playbook.json"
        shipped["playbook"].write_bytes(store.read_path(job.playbook))
    session = LoopSession(root, job.task_id, LoopConfig.load(state, job.task_id, **shipped), agent_settings)
    if job.budget_limit is not None:
        _grant(session, job.budget_limit)
    mark = mark_state(state)
    result = RemoteUnitResult(node_exec_id=job.node_exec_id)
    try:
        with session.bound():
            result.outcome = run_unit_loop(
                session, stages_for(session.run), job.unit_id, job.loop_round, job.feedback, job.pass_tag
            )
    except GraphLemonError as exc:
        result.error_code, result.error = str(exc.code), exc.message
    branch = session.worktrees.branch(job.unit_id)
    if remote_git.local_branches(root, branch):
        remote_git.publish(root, url, [branch])
    result.records = collect(state, mark)
    return result


def _grant(session: LoopSession, limit: float) -> None:
    latest = budget_status(session.ledger, session.task_id)
    if latest is not None:
        session.ledger.append(BudgetConfig(task_id=session.task_id, limit_type=latest.limit_type, limit_value=limit,
                                           by="devloop: this unit's share of the task's budget"))  # fmt: skip


# -- a runner for one machine: unit loops isolated exactly as on a worker -----------------------------------------
class IsolatedUnits:
    """A `Runner` for `Stages`: every step a plain call, except each unit loop, which runs the remote path in this
    process (its own scratch clone and state copy, its records taken in by the devloop): the remote path without
    Prefect, to check a remote setup on one machine and to measure the path against in-process units."""

    def __init__(self, store: BlobStore, scratch: Path, sharing: int = MAX_PARALLEL_UNITS) -> None:
        self.store, self.scratch, self.sharing = store, Path(scratch), sharing

    def __call__(self, step: str, fn, run: RunRef, *args):
        if step != "unit-loop":
            return call(step, fn, run, *args)
        session = open_session(run)
        job = dispatch(session, *args, store=self.store, sharing=self.sharing)
        self.scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"{job.unit_id}-", dir=self.scratch) as folder:
            result = run_remote_unit(job, self.store, Path(folder))
        as_stored = RemoteUnitResult.model_validate_json(result.model_dump_json())  # as result storage returns it
        return take_in(session, job, as_stored)
