"""A `LoopSession`: everything a DevLoop stage needs for one task, opened from its `RunRef`.

The project and its trackers (tasks, nodes, bugs, artifacts, unit files,
worktrees), the loop's limits (`LoopConfig`), the executor, and two helpers every
stage uses: `turn()` (one role turn through the Executor) and `timeline()`.

What crosses a process or a Prefect task boundary is the run's reference, `RunRef(project, task_id)`,
never a session: `open_session(run)` is the one factory. Inside a run (`with session.bound():`) it returns
that run's session, so every stage of the run shares one executor and one ledger reader; elsewhere (a
work-pool worker running one unit loop) it opens the task from its recorded settings.

Every replayable step goes through `memo`: its result is an append-only outcome record in the ledger
(`outcomes.ndjson`), so a resumed run returns a finished step's result instead of running it again.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import lease as leases
from ..artifacts import ArtifactStore
from ..bugs import BugTracker
from ..errors import ErrorCode, GraphLemonError
from ..ledger import Ledger
from ..models import NodeEvent, OutcomeRecord, TaskSettingsRecord, TimelineEvent
from ..nodes import NodeTracker
from ..project import ProjectHandle, open_project
from ..taskboard import TaskBoard
from ..testrun.process import stopping
from ..units import UnitFiles
from ..worktrees import Worktrees
from .usage_limit_wait import QuotaAwareExecutor

if TYPE_CHECKING:
    from ..agents.settings import AgentSettings

M = TypeVar("M", bound=BaseModel)


class LoopSettings(BaseModel):
    """The loop's limits a person chooses (the `config` of a devloop run; each field is a field of its Prefect form)."""

    model_config = ConfigDict(extra="forbid")

    max_unit_attempts: int = Field(default=3, ge=1, le=20, description="Coder/tester attempts per unit per round (L1).")
    max_plan_attempts: int = Field(default=2, ge=1, le=10, description="Planner re-plans after a rejected plan.")
    max_integration_attempts: int = Field(
        default=3, ge=1, le=10, description="Integration runs per round (L2) before asking a person."
    )
    max_loop_rounds: int = Field(default=5, ge=1, le=50, description="Org-loop rounds before asking a person.")
    non_convergence_rounds: int = Field(
        default=3, ge=2, le=20, description="The same bug this many rounds in a row stops the task (not_converging)."
    )
    test_timeout_s: float = Field(default=60.0, gt=0, le=3600, description="Seconds one test run may take.")
    merge_into_main: bool = Field(default=True, description="Merge the finished work into the repository's branch.")
    quota_session_timeout_s: float = Field(
        default=8 * 3600, gt=0, description="How long to wait for a Claude plan's session limit to reset (REQ-14)."
    )
    quota_weekly_timeout_s: float = Field(default=9 * 86400, gt=0, description="... and for its weekly limit.")
    quota_poll_initial_s: float = Field(
        default=60.0, gt=0, description="First back-off, and the margin after a reset time."
    )
    quota_poll_max_s: float = Field(default=1800.0, gt=0, description="Longest back-off between usage-limit probes.")
    fallback_model: str = Field(
        default="claude-sonnet-5-5", min_length=1, description="Where Opus turns go when the Opus limit is hit."
    )
    unit_runner: Literal["in_process", "work_pool", "remote_pool"] = Field(
        default="in_process",
        description="Run unit loops in this flow run's process, as runs of the unit-loop deployment on a work pool "
        "(workers see the project's folder), or as runs of the remote-unit-loop deployment (workers see only the "
        "project's git remote and Prefect; docs/scale.md).",
    )
    unit_deployment: str = Field(default="unit-loop/unit-loop", min_length=3, description="The unit-loop deployment.")
    remote_unit_deployment: str = Field(
        default="remote-unit-loop/remote-unit-loop", min_length=3, description="The remote-unit-loop deployment."
    )


class LoopConfig(LoopSettings):
    """A task's settings: the loop's limits plus the executor that runs its agents (recorded per task)."""

    executor: str = "scripted"
    playbook: Path | None = None

    @field_validator("fallback_model")
    @classmethod
    def _not_opus(cls, value: str) -> str:
        if "opus" in value.lower():
            raise ValueError("fallback_model must not be an Opus model (it is where Opus turns go at an Opus limit)")
        return value

    @staticmethod
    def legacy_path(state_dir: Path, task_id: str) -> Path:
        """Where projects before the `task_settings` record kept a task's settings (still read, never written)."""
        return Path(state_dir) / "tasks" / f"{task_id}.config.json"

    @classmethod
    def recorded(cls, state_dir: Path, task_id: str) -> dict | None:
        """The task's latest recorded settings (a `task_settings` record, else an older project's file), or None."""
        records = [r for r in Ledger(state_dir).read_as("task_settings", TaskSettingsRecord) if r.task_id == task_id]
        if records:
            return records[-1].settings
        legacy = cls.legacy_path(state_dir, task_id)
        return json.loads(legacy.read_text(encoding="utf-8")) if legacy.exists() else None

    @classmethod
    def load(cls, state_dir: Path, task_id: str, **overrides: object) -> LoopConfig:
        saved = cls.recorded(state_dir, task_id) or {}
        return cls.model_validate({**saved, **{k: v for k, v in overrides.items() if v is not None}})

    @classmethod
    def record(cls, state_dir: Path, task_id: str, *, by: str = "system", **overrides: object) -> LoopConfig:
        """The task's recorded settings with these overrides; a `task_settings` record is appended when they differ
        from the latest one (when its task is created, and when a run changes them)."""
        saved = cls.recorded(state_dir, task_id)
        config = cls.model_validate({**(saved or {}), **{k: v for k, v in overrides.items() if v is not None}})
        settings = config.model_dump(mode="json")
        if saved != settings:
            Ledger(state_dir).append(TaskSettingsRecord(task_id=task_id, settings=settings, by=by))
        return config


class RunRef(BaseModel):
    """The one serialisable reference to a task's run: what a stage task, a unit-loop subflow or a work-pool run
    receives. `open_session(run)` turns it into the run's `LoopSession`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    project: str = Field(min_length=1, description="The project's root (the target git repository).")
    task_id: str = Field(min_length=1)


_BOUND: contextvars.ContextVar[LoopSession | None] = contextvars.ContextVar("graphlemon_session", default=None)


def open_session(run: RunRef, agent_settings: Callable[[], AgentSettings] | None = None) -> LoopSession:
    """The session of `run`: the one bound by the run this code runs in (`LoopSession.bound`), or else a new one
    from the task's recorded settings, its agents' settings from `agent_settings()` (None: the environment)."""
    current = _BOUND.get()
    if current is not None and current.run == run:
        return current
    config = LoopConfig.load(Path(run.project) / ".graphlemon", run.task_id)
    return LoopSession(Path(run.project), run.task_id, config, agent_settings() if agent_settings else None)


class LoopSession:
    def __init__(
        self,
        project: ProjectHandle | Path | str,
        task_id: str,
        config: LoopConfig | None = None,
        agent_settings: AgentSettings | None = None,
    ) -> None:
        self.project = project if isinstance(project, ProjectHandle) else open_project(project)
        self.task_id = task_id
        self.config = config or LoopConfig()
        self.agent_settings = agent_settings  # None: from the environment (the Prefect layer passes its blocks)
        self.human_step: Literal["cli", "prefect_ui"] = "cli"  # where a person resumes a block (the evidence says)
        self.lease: leases.HeldLease | None = None  # the task's lease while this session's run holds it
        self._lock = threading.Lock()

    @classmethod
    def start(
        cls, project: ProjectHandle, task_id: str, agent_settings: AgentSettings | None = None, **overrides: object
    ) -> LoopSession:
        """The session of a run: the task's recorded settings with this run's overrides, recorded again, so a
        resume runs with the same settings."""
        return cls(project, task_id, LoopConfig.record(project.state_dir, task_id, **overrides), agent_settings)

    @cached_property
    def run(self) -> RunRef:
        return RunRef(project=str(self.project.root), task_id=self.task_id)

    @contextmanager
    def bound(self) -> Iterator[LoopSession]:
        """`open_session(self.run)` returns this session inside the block (in this context and the threads and
        Prefect task runs started from it)."""
        token = _BOUND.set(self)
        try:
            yield self
        finally:
            _BOUND.reset(token)

    # -- trackers ------------------------------------------------------------------------------
    @property
    def ledger(self):
        return self.project.ledger

    @cached_property
    def board(self) -> TaskBoard:
        return TaskBoard(self.ledger)

    @cached_property
    def nodes(self) -> NodeTracker:
        return NodeTracker(self.ledger)

    @cached_property
    def bugs(self) -> BugTracker:
        return BugTracker(self.ledger)

    @cached_property
    def artifacts(self) -> ArtifactStore:
        return ArtifactStore(self.ledger)

    @cached_property
    def unit_files(self) -> UnitFiles:
        return UnitFiles(self.project.state_dir)

    @cached_property
    def worktrees(self) -> Worktrees:
        return Worktrees(self.project.root, self.task_id, self.project.state_dir)

    @cached_property
    def executor(self):
        """The backend, wrapped in the usage-limit wait (every turn of the task, tester turns included)."""
        from ..agents import build_executor

        executor = build_executor(self.config.executor, playbook=self.config.playbook, settings=self.agent_settings)
        return QuotaAwareExecutor(executor, self)

    # -- helpers -------------------------------------------------------------------------------
    def checkpoint(self, step: str) -> None:
        """A safe point, before `step` starts (nothing is half-written here): LEASE_LOST when this run's lease was
        taken over, STOPPED when a person asked the task's run to stop. A helper of the run that holds no lease
        itself (a unit loop on a work-pool worker) checks for a stop only."""
        if stopping():  # GraphLemon is ending (Ctrl-C): a unit loop still going in a thread starts nothing more
            raise GraphLemonError(ErrorCode.ABORTED, f"GraphLemon is stopping: {step} not started", task_id=self.task_id)
        held = self.lease or leases.holding(self.ledger, self.task_id)
        leases.check(self.ledger, self.task_id, held.lease_id if held is not None else None, step)

    def turn(self, role: str, context: Mapping[str, str], *, output_model: type[M], **kwargs):
        """One role turn whose answer the stage needs; a turn that stopped without a valid one is OUTPUT_INVALID.
        Keyword arguments as `run_turn`."""
        result = self.run_turn(role, context, output_model=output_model, **kwargs)
        if not result.ok or result.output is None:
            raise self.turn_failed(role, kwargs["node_exec_id"], kwargs.get("attempt", 1), result)
        return result, output_model.model_validate(result.output)

    def run_turn(
        self,
        role: str,
        context: Mapping[str, str],
        *,
        output_model: type[BaseModel],
        node_exec_id: str,
        workdir: Path,
        writable: list[str],
        unit_id: str | None = None,
        run_id: str | None = None,
        attempt: int = 1,
        skill_vars: Mapping[str, object] | None = None,
        skill_commit: str | None = None,
        documents: Mapping[str, str] | None = None,
    ):
        """One role turn through the Executor -> its `AgentResult`, whatever it stopped with. The skill is rendered
        from the task's pinned skills commit unless `skill_commit` names another; `documents` are the texts every
        unit of the task shares (cached once for all of them)."""
        from ..agents import build_request, run_turn

        request = build_request(
            self.project,
            role,
            context=context,
            unit_id=unit_id,
            run_id=run_id,
            task_id=self.task_id,
            node_exec_id=node_exec_id,
            attempt=attempt,
            workdir=workdir,
            writable=writable,
            output_model=output_model,
            skill_vars=skill_vars,
            skill_commit=skill_commit or self.skill_commit,
            documents=documents,
            settings=self.agent_settings,
        )
        return run_turn(self.project, request, self.executor)

    @staticmethod
    def turn_failed(role: str, node_exec_id: str, attempt: int, result) -> GraphLemonError:
        return GraphLemonError(
            ErrorCode.OUTPUT_INVALID,
            f"{role} turn ({node_exec_id}, attempt {attempt}) stopped with {result.stop_reason}: "
            f"{result.output_error or 'no output'}",
            node_exec_id=node_exec_id,
            transcript=result.transcript_path,
        )

    @property
    def skill_commit(self) -> str:
        """The skills-repository commit this task renders skills from (pinned on first use, REQ-08)."""
        from ..skills.repo import pin_for_task

        with self._lock:
            return pin_for_task(self.project.state_dir, self.ledger, self.task_id)

    def timeline(self, event: str, summary: str, *, unit_id: str | None = None, ref: str | None = None) -> None:
        self.ledger.append(TimelineEvent(event=event, task_id=self.task_id, unit_id=unit_id, ref=ref, summary=summary))

    def timeline_once(self, event: str, summary: str, *, ref: str) -> None:
        """A timeline event of this task written once per `ref`: a step replayed by a resumed run finds it, and a
        run killed between the step's record and its event writes the event now."""
        seen = self.ledger.read_as("timeline", TimelineEvent)
        if not any(e.event == event and e.ref == ref and e.task_id == self.task_id for e in seen):
            self.timeline(event, summary, ref=ref)

    def commit_work(self, worktree, message: str, *, node_exec_id: str, stage: str, unit_id: str | None = None):
        """Commit a work tree; each entry the commit step refused (a gitlink, a `.gitmodules` change, a `.git` entry,
        a symlink leaving the repository, files past the work-tree quota) is recorded as a violation of the node.
        -> the commit or None."""
        quota = self.project.meta.settings.sandbox.worktree_mb * 1024 * 1024
        commit = self.worktrees.commit_all(worktree, message, max_bytes=quota)
        refused, self.worktrees.refused = self.worktrees.refused, []
        for item in refused:
            self.ledger.append(
                NodeEvent(
                    event="violation", status="running", error_code="SANDBOX_VIOLATION", node_exec_id=node_exec_id,
                    task_id=self.task_id, stage=stage, unit_id=unit_id,
                    error=f"commit: refused {item.path!r}: {item.why}; it was taken out of the commit",
                )
            )  # fmt: skip
        return commit

    # -- node executions and their persisted outcomes (resume) ------------------------------------
    def enter_node(
        self, nid: str, outcome: type[M], *, stage: str, loop_round: int, attempt: int | None = None
    ) -> M | None:
        """A node whose outcome is recorded returns it (`memo`'s record is the one sign a step finished; a node a
        killed run left just before its `done` gets it now); otherwise the node is (back) in `running`, whatever
        state an interrupted run left it in, and None says: run the stage."""
        node = self.nodes.find(nid)
        stored = self.load_outcome(nid, outcome)
        if stored is not None:
            if node is not None and node.status in ("running", "verifying"):
                self.nodes.transition(nid, "done")
            return stored
        if node is None:
            self.nodes.transition(
                nid, "running", task_id=self.task_id, stage=stage, loop_round=loop_round, attempt=attempt
            )  # type: ignore[arg-type]
            return None
        path = {"verifying": ["reflecting", "retrying"], "reflecting": ["retrying"], "failed": ["retrying"],
                "blocked": ["retrying"], "retrying": [], "waiting_for_quota": []}.get(node.status)  # fmt: skip
        for status in [*(path or []), "running"] if path is not None else []:
            self.nodes.transition(
                nid, status, error="resumed after an interruption" if status == "reflecting" else None
            )  # type: ignore[arg-type]
        return None

    # -- stage outcomes: append-only ledger records (resume) ------------------------------------
    def memo(
        self,
        node_exec_id: str,
        name: str,
        model: type[M],
        compute: Callable[[], M],
        then: Callable[[M], None] | None = None,
    ) -> M:
        """A replayable step: its recorded result, or `compute()` recorded once. Every step a resumed run must not
        repeat (a coder or tester turn and its answer, an SDD patch; a stage's node through
        `enter_node`) is found by its record here, never by node status or file contents. `then(result)` follows a
        fresh result once it is recorded (an artifact, a log rendered from the records): at most once."""
        done = self.load_outcome(node_exec_id, model, name)
        if done is not None:
            return done
        value = compute()
        self.save_outcome(node_exec_id, value, name)
        if then is not None:
            then(value)
        return value

    def save_outcome(self, node_exec_id: str, outcome: BaseModel, name: str = "outcome") -> str:
        """Append the step's result to outcomes.ndjson (once: a replayed step finds it and never writes again)."""
        self.ledger.append(
            OutcomeRecord(
                node_exec_id=node_exec_id, name=name, task_id=self.task_id, model=type(outcome).__name__,
                value=outcome.model_dump(mode="json"),
            )
        )  # fmt: skip
        return f"outcomes.ndjson#{node_exec_id}/{name}"

    def outcome_ref(self, node_exec_id: str, name: str = "outcome") -> str | None:
        """Where the step's result is recorded (`outcomes.ndjson#<node>/<name>`), or None: not recorded yet."""
        records = self.ledger.read_as("outcome", OutcomeRecord)
        if any(r.node_exec_id == node_exec_id and r.name == name for r in records):
            return f"outcomes.ndjson#{node_exec_id}/{name}"
        return None

    def load_outcome(self, node_exec_id: str, model: type[M], name: str = "outcome") -> M | None:
        """The latest recorded result of this step, or None: run it. A record the model cannot read is LEDGER_CORRUPT."""
        found = next(
            (r for r in reversed(self.ledger.read_as("outcome", OutcomeRecord))
             if r.node_exec_id == node_exec_id and r.name == name),
            None,
        )  # fmt: skip
        if found is None:
            return None
        try:
            return model.model_validate(found.value)
        except (ValueError, TypeError) as exc:
            raise GraphLemonError(
                ErrorCode.LEDGER_CORRUPT,
                f"outcomes.ndjson: the recorded {name} of {node_exec_id} is not a {model.__name__} "
                f"({exc.__class__.__name__}); refusing to silently redo the stage",
                file="outcomes.ndjson",
                node_exec_id=node_exec_id,
            ) from None
