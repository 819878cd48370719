"""What every stage task shares: the per-process LoopSession, the retry rule, the cache policy, result storage.

* Retries are for transient trouble only (a model API that kept failing, a git lock,
  the test runner dying, I/O): a real test failure is a result, and a budget stop, a
  usage-limit wait, a classifier block or a corrupt ledger must never be retried.
* Cache keys are the stage's real inputs (project, task, config, round, unit, attempt,
  feedback) plus the task's source: a resumed flow run gets the finished stages back
  from results persisted under `.graphlemon/prefect-results/` (PREFECT_NOTES.md).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from prefect.cache_policies import INPUTS, TASK_SOURCE
from prefect.filesystems import LocalFileSystem

from blocks.agents import load_agent_settings
from graphlemon.devloop.session import LoopConfig, LoopSession
from graphlemon.errors import GraphLemonError

TRANSIENT_CODES = frozenset({"EXECUTOR_ERROR", "GIT_ERROR", "TEST_RUNNER_ERROR"})
STAGE_CACHE = INPUTS + TASK_SOURCE
RETRY_DELAYS = [2, 10]

_sessions: dict[tuple[str, str, str], LoopSession] = {}
_lock = threading.Lock()


def session_for(project: str, task_id: str, config: dict) -> LoopSession:
    """One LoopSession (and executor) per process and task, shared by the stage tasks' threads; the agents'
    settings come from the Prefect blocks when a Prefect API is configured (blocks/agents.py)."""
    key = (str(Path(project).resolve()), task_id, json.dumps(config, sort_keys=True, default=str))
    with _lock:
        if key not in _sessions:
            settings = load_agent_settings()  # the AnthropicCredentials / ExecutorSettings blocks, else the environment
            _sessions[key] = LoopSession(Path(project), task_id, LoopConfig.model_validate(config), settings)
        return _sessions[key]


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


def result_storage(project: str, project_id: str) -> LocalFileSystem:
    """Task results of this project under its .graphlemon/ (a saved block: Prefect resolves results by reference)."""
    path = Path(project).resolve() / ".graphlemon" / "prefect-results"
    path.mkdir(parents=True, exist_ok=True)
    block = LocalFileSystem(basepath=str(path))
    block.save(f"graphlemon-results-{project_id}", overwrite=True)
    return block
