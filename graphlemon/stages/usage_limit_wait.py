"""p_usage_limit_wait (REQ-14): a plan usage limit pauses the task until the plan has quota again.

`QuotaAwareExecutor` wraps the session's executor, so every agent turn of the task
(planner, coder, tester, integrator, validator) runs through it. When a turn
raises `QuotaExceeded`:

* `limit_type == "opus"` → no waiting: the turn runs again at once on the
  configured non-Opus model (`LoopConfig.fallback_model`), and later Opus turns
  of the task go to that model too until the reported reset time;
* otherwise the turn's node goes `waiting_for_quota` (with `quota_wait_started_at`
  and `quota_limit_type`) and the task too; the per-task `TaskGate` closes, so no
  other turn of the task starts (units in other threads wait at the gate); the
  waiter sleeps — until the reset time when the message gave one (plus
  `quota_poll_initial_s`), else with exponential back-off from
  `quota_poll_initial_s` to `quota_poll_max_s` — and asks the backend's cheap
  `probe(model)` (claude_code, anthropic); without one, retrying the turn is the
  probe. When the turn succeeds the node goes back to `running`, the task to the
  stage it was in, the gate opens: never `blocked_pending_human` on the way;
* past `quota_session_timeout_s` (8 h) / `quota_weekly_timeout_s` (9 days) the
  `QuotaExceeded` escapes with a clear message and the org loop blocks the task
  with `blocked_reason='usage_limit_wait_timeout'`; turns waiting at the gate get
  the same error.

Every wait is in the ledger: node and task events (so analytics measures the
time spent in `waiting_for_quota`) and timeline events `quota_wait`,
`quota_fallback`, `quota_resumed`, `quota_wait_timeout`. The clock is a seam
(`Clock`: `SystemClock`, `SimulatedClock`), so tests wait hours in milliseconds.

A wait is a safe point: a person's stop ends it (the real clock sleeps in slices of `slice_s`, and the
task's lease is checked between them: `WaitingTask.checkpoint`).
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from .. import lifecycle
from ..errors import GraphLemonError, QuotaExceeded
from ..execlogs import write_line
from ..ledger import Ledger
from ..models import QuotaLimitType, TimelineEvent, utcnow
from ..nodes import NodeTracker
from ..project import ProjectHandle
from ..taskboard import ACTIVE_STAGES, TaskBoard

if TYPE_CHECKING:
    from ..agents import AgentRequest, AgentResult, Executor, ToolContext
    from ..nodes import NodeExec

WAITING = "waiting_for_quota"


class WaitingTask(Protocol):
    """What a wait needs of the task's run (a `LoopSession` is one): its records, its limits, its safe point."""

    task_id: str
    project: ProjectHandle
    config: Any  # the task's LoopConfig (its quota timeouts, poll delays, fallback model)

    @property
    def ledger(self) -> Ledger: ...
    @property
    def board(self) -> TaskBoard: ...
    @property
    def nodes(self) -> NodeTracker: ...
    def timeline(self, event: str, summary: str, *, unit_id: str | None = None, ref: str | None = None) -> None: ...
    def checkpoint(self, step: str) -> None: ...


class Clock(Protocol):
    def now(self) -> datetime: ...
    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    slice_s = 5.0  # a long sleep is cut in slices, a person's stop checked between them

    def now(self) -> datetime:
        return utcnow()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class SimulatedClock:
    """A clock whose `sleep` only moves `now` forward (and records the sleeps): hours of waiting in no time."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or utcnow()
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self._now += timedelta(seconds=seconds)


# -- the per-task gate ---------------------------------------------------------------------------


class TaskGate:
    """One per task and process: while a turn of the task waits for quota, no other turn of it starts."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._holder: int | None = None
        self._failure: QuotaExceeded | None = None
        self.fallback_until: datetime | None = None  # Opus turns use the fallback model until then
        self.fallback_active = False

    def enter(self, still_stopped) -> None:
        """Wait while another thread holds the gate; a wait that timed out stops this turn too
        (until a human has resumed the task: `still_stopped()` is False then)."""
        with self._cond:
            while self._holder is not None and self._holder != threading.get_ident():
                self._cond.wait()
            if self._failure is not None:
                if still_stopped():
                    raise self._failure
                self._failure = None

    def acquire(self) -> bool:
        """Become the task's waiter; False if another turn already waits."""
        with self._cond:
            if self._holder is not None:
                return False
            self._holder = threading.get_ident()
            return True

    def release(self, failure: QuotaExceeded | None = None) -> None:
        with self._cond:
            self._holder = None
            self._failure = failure
            self._cond.notify_all()


_GATES: dict[tuple[str, str], TaskGate] = {}
_GATES_LOCK = threading.Lock()


def gate_for(session: WaitingTask) -> TaskGate:
    """The task's gate in this process (shared by every session object of the task, e.g. Prefect task threads)."""
    key = (str(session.project.state_dir), session.task_id)
    with _GATES_LOCK:
        return _GATES.setdefault(key, TaskGate())


# -- one wait -------------------------------------------------------------------------------------


def is_opus(model: str | None) -> bool:
    return model is None or "opus" in model.lower()


def _limit_type(hit: QuotaExceeded) -> QuotaLimitType:
    return hit.limit_type if hit.limit_type in ("session", "weekly", "opus") else "session"  # type: ignore[return-value]


def owning_node(session: WaitingTask, turn_node_id: str | None) -> NodeExec | None:
    """The node a turn belongs to: its own id, or the longest tracked prefix (tester turns run under the
    coder node: `<coder node>-tester-a<n>`)."""
    if not turn_node_id:
        return None
    owners = [
        n for n in session.nodes.for_task(session.task_id)
        if turn_node_id == n.node_exec_id or turn_node_id.startswith(n.node_exec_id + "-")
    ]  # fmt: skip
    return max(owners, key=lambda n: len(n.node_exec_id), default=None)


class QuotaWait:
    """One episode of waiting for a usage limit to reset (the task's gate is held meanwhile)."""

    def __init__(self, session: WaitingTask, clock: Clock, request: AgentRequest, hit: QuotaExceeded) -> None:
        self.session, self.clock, self.request = session, clock, request
        self.started = clock.now()
        self.polls = 0
        self.probes_failed = 0
        self.last_error: str | None = None
        self.update(hit)
        self.node = owning_node(session, request.node_exec_id)
        self.who = f"{request.role}" + (f" {request.unit_id}" if request.unit_id else "")

    def update(self, hit: QuotaExceeded) -> None:
        self.hit = hit
        self.limit_type = _limit_type(hit)
        self.resets_at = hit.resets_at
        cfg = self.session.config
        timeout = cfg.quota_session_timeout_s if self.limit_type == "session" else cfg.quota_weekly_timeout_s
        self.deadline = self.started + timedelta(seconds=timeout)

    # -- ledger --------------------------------------------------------------------------------
    def begin(self, *, task_too: bool = True) -> None:
        s = self.session
        if self.node is not None and WAITING in lifecycle.allowed("node", self.node.status):
            s.nodes.transition(
                self.node.node_exec_id, WAITING, quota_wait_started_at=self.started, quota_limit_type=self.limit_type,
                error_code="QUOTA_EXCEEDED", error=self.hit.message[:2000],
            )  # fmt: skip
        if task_too and s.board.get(s.task_id).status in ACTIVE_STAGES:
            s.board.transition(s.task_id, WAITING, note=self.hit.message[:2000], by="quota-wait")
        when = f"; resets at {self.resets_at.isoformat()}" if self.resets_at else "; reset time unknown"
        s.timeline(
            "quota_wait",
            f"{self.who}: {self.limit_type} usage limit{when}; no new turn of this task starts until it passes",
            unit_id=self.request.unit_id, ref=self._ref(),
        )  # fmt: skip

    def end(self, note: str = "quota available again") -> None:
        s = self.session
        waited = (self.clock.now() - self.started).total_seconds()
        if self.node is not None and s.nodes.get(self.node.node_exec_id).status == WAITING:
            s.nodes.transition(self.node.node_exec_id, "running", duration_ms=int(waited * 1000))
        task = s.board.get(s.task_id)
        if task.status == WAITING:
            s.board.transition(s.task_id, task.resume_status or "queued", note=f"{note} after {_span(waited)}",
                               by="quota-wait")  # fmt: skip
        s.timeline(
            "quota_resumed",
            f"{self.who}: {note} after {_span(waited)} ({self.polls} poll(s), {self.probes_failed} failed probe(s))",
            unit_id=self.request.unit_id, ref=self._ref(),
        )  # fmt: skip

    def give_up(self) -> QuotaExceeded:
        waited = (self.clock.now() - self.started).total_seconds()
        limit = (self.deadline - self.started).total_seconds()
        message = (
            f"waited {_span(waited)} for the {self.limit_type} usage limit to reset (timeout {_span(limit)}, "
            f"{self.polls} poll(s)) and it still holds: {self.hit.message[:300]}"
            + (f"; last probe error: {self.last_error}" if self.last_error else "")
            + ". Resume the task when the plan has quota again."
        )
        self.session.timeline(
            "quota_wait_timeout", f"{self.who}: {message}", unit_id=self.request.unit_id, ref=self._ref()
        )
        return QuotaExceeded(self.limit_type, self.resets_at, message, waited_s=round(waited, 3))

    def _ref(self) -> str | None:
        return self.node.node_exec_id if self.node else self.request.node_exec_id

    # -- sleeping ------------------------------------------------------------------------------
    def next_delay(self, now: datetime) -> float:
        cfg = self.session.config
        if self.resets_at is not None and self.resets_at > now:
            delay = (self.resets_at - now).total_seconds() + cfg.quota_poll_initial_s
        else:
            delay = min(cfg.quota_poll_initial_s * 2 ** min(self.polls, 30), cfg.quota_poll_max_s)
        return max(0.0, min(delay, (self.deadline - now).total_seconds()))

    def sleep_until_probe(self, probe, model: str | None) -> None:
        """Sleep and probe until the probe succeeds (without a probe: sleep once; the retried turn probes);
        past the deadline raise the timeout error."""
        while True:
            now = self.clock.now()
            if now >= self.deadline:
                raise self.give_up()
            delay = self.next_delay(now)
            write_line(self.session.project.state_dir, self._ref(), "quota",
                       f"{self.who}: {self.limit_type} usage limit; poll {self.polls + 1} after {_span(delay)}")  # fmt: skip
            self._sleep(delay)
            self.polls += 1
            if probe is None:
                return
            try:
                if probe(model):
                    return
                self.probes_failed += 1
            except GraphLemonError as exc:  # a probe that cannot run is "not yet", not the end of the wait
                self.probes_failed += 1
                self.last_error = exc.message[:300]

    def _sleep(self, delay: float) -> None:
        """Sleep `delay` on the clock, a person's stop checked before and between its slices (a stop ends the
        wait; the turn never ran, so nothing is half-written)."""
        step = getattr(self.clock, "slice_s", None) or delay  # a simulated clock jumps the whole delay at once
        while True:
            self.session.checkpoint(f"{self.who} waiting for the {self.limit_type} usage limit")
            chunk = min(step, delay)
            self.clock.sleep(chunk)
            delay -= chunk
            if delay <= 0:
                return


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f}s"
    minutes = int(seconds // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


# -- the executor ---------------------------------------------------------------------------------


class QuotaAwareExecutor:
    """An `Executor` running its task's turns through the usage-limit wait (a peer of the backends it wraps)."""

    def __init__(self, inner: Executor, session: WaitingTask, clock: Clock | None = None) -> None:
        self.inner, self.session = inner, session
        self.clock: Clock = clock or SystemClock()
        self.name = inner.name
        self.secrets = getattr(inner, "secrets", ())

    def plays(self, role: str) -> bool:
        """Whether the wrapped executor plays `role` (a scripted playbook may leave a role out; a model plays all)."""
        plays = getattr(self.inner, "plays", None)
        return plays(role) if plays is not None else True

    @property
    def gate(self) -> TaskGate:
        return gate_for(self.session)

    def run(self, request: AgentRequest, ctx: ToolContext) -> AgentResult:
        wait: QuotaWait | None = None
        try:
            while True:
                if wait is None:
                    self.gate.enter(self._task_stopped)
                request = self._route(request)
                try:
                    result = self.inner.run(request, ctx)
                except QuotaExceeded as hit:
                    if hit.limit_type == "opus" and self._fall_back(request, hit):
                        continue
                    if wait is None and not self.gate.acquire():
                        self._follow(request, hit)
                        continue
                    if wait is None:
                        wait = QuotaWait(self.session, self.clock, request, hit)
                        wait.begin()
                    else:
                        wait.update(hit)
                    wait.sleep_until_probe(getattr(self.inner, "probe", None), self._model(request))
                    continue
                if wait is not None:
                    wait.end()
                    self.gate.release()
                    wait = None
                return result
        except QuotaExceeded as exc:
            if wait is not None:
                self.gate.release(failure=exc)
            raise
        except BaseException:
            if wait is not None:  # another error while retrying: the wait itself is over
                wait.end("the wait ended with an error")
                self.gate.release()
            raise

    # -- helpers -------------------------------------------------------------------------------
    def _model(self, request: AgentRequest) -> str | None:
        settings = getattr(self.inner, "settings", None)
        return request.model or (settings.model_for(request.role) if settings is not None else None)

    def _route(self, request: AgentRequest) -> AgentRequest:
        """After an Opus limit, Opus turns of the task go to the fallback model until the reset time."""
        gate = self.gate
        if not gate.fallback_active:
            return request
        if gate.fallback_until is not None and self.clock.now() >= gate.fallback_until:
            gate.fallback_active = False
            return request
        if is_opus(self._model(request)):
            return request.model_copy(update={"model": self.session.config.fallback_model})
        return request

    def _fall_back(self, request: AgentRequest, hit: QuotaExceeded) -> bool:
        """Opus limit: retry at once on the non-Opus model (False when the turn already ran on it)."""
        model = self._model(request)
        fallback = self.session.config.fallback_model
        if model == fallback or not is_opus(model):
            return False
        gate = self.gate
        gate.fallback_active, gate.fallback_until = True, hit.resets_at
        self.session.ledger.append(
            TimelineEvent(
                event="quota_fallback", task_id=self.session.task_id, unit_id=request.unit_id,
                ref=request.node_exec_id,
                summary=f"{request.role}: Opus usage limit on {model or 'the default model'}; retrying at once on "
                f"{fallback} (no wait){'' if hit.resets_at is None else f' until {hit.resets_at.isoformat()}'}",
            )
        )  # fmt: skip
        return True

    def _follow(self, request: AgentRequest, hit: QuotaExceeded) -> None:
        """Another turn of the task already waits: this node waits at the gate too, then tries again."""
        wait = QuotaWait(self.session, self.clock, request, hit)
        wait.begin(task_too=False)
        self.gate.enter(self._task_stopped)  # raises if the other wait timed out
        wait.end("the task's wait ended")

    def _task_stopped(self) -> bool:
        task = self.session.board.get(self.session.task_id)
        return task.status == WAITING or (
            task.status == "blocked_pending_human" and task.blocked_reason == "usage_limit_wait_timeout"
        )
