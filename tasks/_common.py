"""What every stage task shares: the retry rule, the stage options, the run's session and its logged timeline.

* A stage task receives the run's reference (`RunRef`) and opens the run's session from it
  (`graphlemon.stages.session.open_session`): the devloop flow's own session in its process, the task's
  recorded settings with the agents' Prefect blocks on a work-pool worker.
* The ledger is the one record of progress: a stage that finished is found there
  (`LoopSession.memo`) and never runs again, so the tasks keep no Prefect
  result cache and persist no results (`NO_CACHE`, `persist_result=False`).
* Retries are for transient trouble only (a model API that kept failing, a git lock,
  the test runner dying, I/O): a real test failure is a result, and a budget stop, a
  usage-limit wait, a classifier block or a corrupt ledger must never be retried.
"""

from __future__ import annotations

import re

from prefect.cache_policies import NO_CACHE

from graphlemon.errors import GraphLemonError
from graphlemon.stages.session import LoopSession, RunRef, open_session

TRANSIENT_CODES = frozenset({"EXECUTOR_ERROR", "GIT_ERROR", "TEST_RUNNER_ERROR"})
RETRY_DELAYS = [2, 10]


def transient_only(task, task_run, state) -> bool:
    """retry_condition_fn: retry only what a second try can fix."""
    try:
        state.result()
    except GraphLemonError as exc:
        return str(exc.code) in TRANSIENT_CODES
    except (OSError, TimeoutError, ConnectionError):
        return True
    except Exception:
        return False
    return False


STAGE_OPTIONS = dict(
    retries=2,
    retry_delay_seconds=RETRY_DELAYS,
    retry_condition_fn=transient_only,
    cache_policy=NO_CACHE,
    persist_result=False,
)


def session_of(run: RunRef) -> LoopSession:
    """The run's session (`open_session`); outside the devloop flow's process (a work-pool worker) the agents'
    settings come from their Prefect blocks (blocks/agents.py)."""
    from blocks.agents import load_agent_settings

    return open_session(run, load_agent_settings)


def finished(out, *, red: bool, name: str, message: str):
    """A stage that ran but did not succeed (tests red, unit blocked, validator routed back) ends in a named
    Completed state (`Red`, `Blocked`, `Routed`) with a one-line reason, so the UI never shows it as a plain
    success; the caller gets `out` back through `stage_result`."""
    if not red:
        return out
    from prefect.states import Completed

    return Completed(name=name, message=message[:500], data=out)


def stage_result(value):
    """A stage's return value, whether the task returned it or a named state holding it."""
    from prefect.states import State

    return value.result() if isinstance(value, State) else value


def log_timeline(session: LoopSession, since: int, unit_id: str | None = None) -> int:
    """Log the task's timeline events appended since `since` (a count) to this run's Prefect logs; returns the
    new count. The ledger's story (test_failed with its first hint, unit_blocked, routed, escalated, done) is
    then in the run's logs beside Prefect's own lines. With `unit_id`, only that unit's events (unit loops run
    side by side: one unit's tester must not log another unit's results)."""
    from prefect import get_run_logger

    events = session.ledger.read("timeline")
    logger = get_run_logger()
    for event in events[since:]:
        if event.task_id in (session.task_id, None) and unit_id in (None, event.unit_id):
            unit = f" [{event.unit_id}]" if event.unit_id else ""
            logger.info("%s%s %s", event.event, unit, event.summary)
    return len(events)


class timeline_logged:
    """`with timeline_logged(run) as session:` the run's session; the ledger events the block appended are logged."""

    def __init__(self, run: RunRef, unit_id: str | None = None) -> None:
        self.session, self.unit_id = session_of(run), unit_id

    def __enter__(self) -> LoopSession:
        self.since = len(self.session.ledger.read("timeline"))
        return self.session

    def __exit__(self, *exc) -> None:
        log_timeline(self.session, self.since, self.unit_id)


def artifact_key(*parts: str) -> str:
    """An artifact key Prefect accepts (^[a-z0-9-]*$), scoped by the parts given (project, task, ...)."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def task_key(session: LoopSession, *parts: str) -> str:
    """A key scoped to this project and task: one key's history is one task's story, never several projects'."""
    return artifact_key(session.project.project_id, session.task_id, *parts)
