"""What every stage task shares: the task's LoopSession in this process, the retry rule, the stage options.

* The ledger is the one record of progress: a stage that finished is found there
  (`LoopSession.load_outcome`) and never runs again, so the tasks keep no Prefect
  result cache and persist no results (`NO_CACHE`, `persist_result=False`).
* Retries are for transient trouble only (a model API that kept failing, a git lock,
  the test runner dying, I/O): a real test failure is a result, and a budget stop, a
  usage-limit wait, a classifier block or a corrupt ledger must never be retried.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from prefect.cache_policies import NO_CACHE

from graphlemon.errors import GraphLemonError
from graphlemon.stages.session import LoopConfig, LoopSession

TRANSIENT_CODES = frozenset({"EXECUTOR_ERROR", "GIT_ERROR", "TEST_RUNNER_ERROR"})
RETRY_DELAYS = [2, 10]

_sessions: dict[tuple[str, str], LoopSession] = {}
_lock = threading.Lock()


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


def adopt_session(session: LoopSession) -> LoopSession:
    """The flow that built the task's session shares it with its stage tasks (one session per process and task)."""
    with _lock:
        return _sessions.setdefault((str(session.project.root), session.task_id), session)


def session_for(project: str, task_id: str) -> LoopSession:
    """This process's session of the task; a worker that runs only part of the task (a unit-loop deployment run)
    builds it from the task's recorded settings and the agents' Prefect blocks (blocks/agents.py)."""
    root = str(Path(project).resolve())
    with _lock:
        if (root, task_id) not in _sessions:
            from blocks.agents import load_agent_settings

            handle_config = LoopConfig.load(Path(root) / ".graphlemon", task_id)
            _sessions[(root, task_id)] = LoopSession(Path(root), task_id, handle_config, load_agent_settings())
        return _sessions[(root, task_id)]


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
    """`with timeline_logged(session):` logs the ledger events the block appended."""

    def __init__(self, session: LoopSession, unit_id: str | None = None) -> None:
        self.session, self.unit_id = session, unit_id

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
