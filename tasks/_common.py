"""What every stage task shares: the retry rule, the stage options, the states it ends in, the run's session and its
logged timeline.

* A stage task receives the run's reference (`RunRef`) and opens the run's session from it
  (`graphlemon.stages.session.open_session`): the devloop flow's own session in its process, the task's
  recorded settings with the agents' Prefect blocks on a work-pool worker.
* The ledger is the one record of progress: a stage that finished is found there
  (`LoopSession.memo`) and never runs again, so the tasks keep no Prefect
  result cache and persist no results (`NO_CACHE`, `persist_result=False`); a stage a
  resumed run found recorded ends `Cached`, its message naming the outcome record.
* A stage that ran but did not succeed ends Failed with its result as the state's data
  (`finished`); the runner awaits the state and reads the result (`stage_result`).
* One retry policy: Prefect retries no stage. Every retry is GraphLemon's own, where the
  trouble is (a backend retries its API calls with back-off, and says when it gave up); what
  is left after them blocks the task for a person (`stage_failed`), who resumes it.
* An error GraphLemon knows (a `GraphLemonError`) ends the stage's run in a state with its
  message, never as a raised exception with a traceback (`stage_task`): an expected stop (a
  budget, a usage-limit wait that timed out, a classifier block, a person's stop, a lease taken
  over) is `Cancelled` named for it, any other known error `Failed`; the error is the state's data,
  and the caller raises it again where the loop decides (`stage_result`). Only a bug (an error
  GraphLemon does not know) keeps its traceback.
"""

from __future__ import annotations

import functools
import re
from contextlib import contextmanager

from prefect import task
from prefect.cache_policies import NO_CACHE

from graphlemon.errors import EXPECTED_STOPS, ErrorCode, GraphLemonError
from graphlemon.models import TimelineEvent
from graphlemon.stages.session import LoopSession, RunRef, open_session

STAGE_OPTIONS = dict(retries=0, cache_policy=NO_CACHE, persist_result=False)  # one retry policy: GraphLemon's own
STOP_NAMES = {
    ErrorCode.STOPPED: "Stopped",
    ErrorCode.BUDGET_EXCEEDED: "Budget exceeded",
    ErrorCode.QUOTA_EXCEEDED: "Quota wait timed out",
    ErrorCode.CLASSIFIER_BLOCKED: "Classifier blocked",
    ErrorCode.LEASE_LOST: "Lease lost",
    ErrorCode.TASK_HELD: "Refused",
}


def ended_state(exc: GraphLemonError):
    """The state a run ends in for an error GraphLemon knows: `Cancelled` named for an expected stop, else `Failed`
    named `Error`; its message is the error's, its data the error (raised again by the caller, `stage_result`)."""
    from prefect.states import Cancelled, Failed

    if exc.code in EXPECTED_STOPS:
        return Cancelled(name=STOP_NAMES.get(exc.code, "Stopped"), message=exc.message[:500], data=exc)
    return Failed(name="Error", message=f"{exc.code}: {exc.message}"[:500], data=exc)


def in_a_state(fn):
    """`fn`, whose known errors end its run in a state (`ended_state`) instead of being raised through Prefect."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except GraphLemonError as exc:
            return ended_state(exc)

    return run


def stage_task(**options):
    """`@stage_task(name=..., task_run_name=...)`: a stage's Prefect task with the stage options, whose known errors
    end it in a state (`in_a_state`)."""

    def decorate(fn):
        return task(**{**STAGE_OPTIONS, **options})(in_a_state(fn))

    return decorate


def session_of(run: RunRef) -> LoopSession:
    """The run's session (`open_session`); outside the devloop flow's process (a work-pool worker) the agents'
    settings come from their Prefect blocks (blocks/agents.py)."""
    from graphlemon.blocks.agents import load_agent_settings

    return open_session(run, load_agent_settings)


def finished(out, *, red: bool, name: str, message: str):
    """A stage that ran but did not succeed (tests red, unit blocked, plan rejected, integration red) ends in a
    Failed state named for why (`Red`, `Blocked`) with a one-line reason and the stage's result as its data: red in
    the UI, never retried (the retry condition refuses a result), and the caller, which awaits the state, reads the
    result through `stage_result` and carries on."""
    if not red:
        return out
    from prefect.states import Failed

    return Failed(name=name, message=message[:500], data=out)


def stage_result(state):
    """A stage's result from its final state (the caller runs it with `return_state=True`): the value it returned,
    the result a Failed (`Red`, `Blocked`) or Cached state holds, or the error it ended with (a Failed or Cancelled
    state's data, or the exception it raised), raised again."""
    from prefect.states import State

    if not isinstance(state, State):
        return state
    if state.is_failed() or state.is_cancelled():
        value = state.result(raise_on_failure=False)
        if isinstance(value, BaseException):
            raise value
        return value
    return state.result()


@contextmanager
def timeline_streamed(session: LoopSession):
    """Inside the block each timeline event of the task is logged as it is appended, to the Prefect run whose code
    appended it (a stage's task run, a unit's subflow run, else the devloop flow run): the run's Logs tab tells
    the story as it happens, each line once. Nested blocks for the same ledger and task stream once."""
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    ledger, task_id = session.ledger, session.task_id
    if any(getattr(w, "streams_task", None) == task_id for w in ledger.on_append):
        yield
        return
    fallback = get_run_logger()

    def log(record) -> None:
        if not isinstance(record, TimelineEvent) or record.task_id not in (task_id, None):
            return
        try:
            logger = get_run_logger()
        except MissingContextError:  # appended from a thread of no run: the run that streams the task
            logger = fallback
        unit = f" [{record.unit_id}]" if record.unit_id else ""
        logger.info("%s%s %s", record.event, unit, record.summary)

    log.streams_task = task_id  # type: ignore[attr-defined]
    ledger.on_append.append(log)
    try:
        yield
    finally:
        ledger.on_append.remove(log)


class timeline_logged:
    """`with timeline_logged(run) as session:` the run's session, its timeline streamed to the run's logs.

    With `step=(node_exec_id, name)`, the step's outcome record: when a resumed run finds it already recorded,
    `reused` names it and `cached(out)` is the task's Cached state saying so (the ledger stays the one store); a
    step recorded red (`red=True`: tests red, a unit blocked, a plan rejected) stays red when reused: its Cached state
    is Failed-type, so the UI shows it red and the run's counts keep the failure."""

    def __init__(self, run: RunRef, step: tuple[str, str] | None = None) -> None:
        self.session = session_of(run)
        self.reused = self.session.outcome_ref(*step) if step else None

    def cached(self, out, *, red: bool = False):
        from prefect.states import Completed, Failed

        if red:
            return Failed(name="Cached", message=f"reused {self.reused}: recorded red in the ledger by an earlier run",
                          data=out)  # fmt: skip
        return Completed(name="Cached", message=f"reused {self.reused}: recorded in the ledger by an earlier run", data=out)

    def __enter__(self) -> LoopSession:
        self.streaming = timeline_streamed(self.session)
        self.streaming.__enter__()
        return self.session

    def __exit__(self, *exc) -> None:
        self.streaming.__exit__(*exc)


def artifact_key(*parts: str) -> str:
    """An artifact key Prefect accepts (^[a-z0-9-]*$), scoped by the parts given (project, task, ...)."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def task_key(session: LoopSession, *parts: str) -> str:
    """A key scoped to this task, readable: `task-20261206-134450-0ac9-unit-add-tests`. A task id is unique to its
    project (its creation's second and 16 random bits), so one key's history is one task's story, never several
    projects' — without the project's opaque id in front of it."""
    return artifact_key(session.task_id, *parts)
