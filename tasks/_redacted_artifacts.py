"""Prefect artifacts with secrets masked: the UI's copy of a record goes through the same redactor as the ledger.

Tasks and flows import `create_markdown_artifact` / `create_table_artifact` / the progress artifacts from here,
never from `prefect.artifacts`, so no caller has to remember to redact (test output, evidence packs, bug titles).

The DevLoop's stage tasks send theirs in the background: each artifact is one API request on a new client
(≈ 50 ms against a local server, more under load), and the UI's copy of a record is not worth making the loop
wait. `sent_in_background()` wraps the loop (the devloop flow, a unit-loop run on a work pool): inside it, an
artifact created in a task run is queued with that run's context (so it is linked to the run) and sent by one
thread; on leaving, it waits until all are sent, so they are in the UI before the run ends or waits for a person.
An artifact that cannot be sent is logged and never fails a stage. Everywhere else (flows' own artifacts, the
progress artifact whose id the caller needs, tasks run on their own) an artifact is sent at once.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from prefect import artifacts as _prefect
from prefect.context import TaskRunContext

from graphlemon.redact import DEFAULT as _REDACTOR

__all__ = [
    "create_markdown_artifact",
    "create_progress_artifact",
    "create_table_artifact",
    "sent_in_background",
    "update_progress_artifact",
]
_log = logging.getLogger("graphlemon.artifacts")
_outbox: queue.Queue = queue.Queue()
_sender: threading.Thread | None = None
_sender_lock = threading.Lock()
_in_background: contextvars.ContextVar[bool] = contextvars.ContextVar("graphlemon_artifacts_later", default=False)


def _send_forever() -> None:
    while True:
        context, send, kwargs = _outbox.get()
        try:
            context.run(send, **kwargs)
        except Exception as exc:  # the UI's copy only: the record is in the ledger
            _log.warning("artifact %s not sent: %s", kwargs.get("key") or "(no key)", exc)
        finally:
            _outbox.task_done()


def _in_task_run_later(send: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """In a task run inside `sent_in_background()`: queue it with the run's context; elsewhere: send it now."""
    global _sender
    if not _in_background.get() or TaskRunContext.get() is None:
        return send(**kwargs)
    with _sender_lock:
        if _sender is None:
            _sender = threading.Thread(target=_send_forever, name="graphlemon-artifacts", daemon=True)
            _sender.start()
    _outbox.put((contextvars.copy_context(), send, kwargs))
    return None


@contextmanager
def sent_in_background(timeout: float = 120.0):
    """Stage artifacts created inside are sent by a background thread; on leaving, wait (at most `timeout` s) until
    every queued artifact is sent or failed and logged. Nested (a unit subflow inside the devloop run), it does
    nothing: the outermost one waits."""
    if _in_background.get():
        yield
        return
    token = _in_background.set(True)
    try:
        yield
    finally:
        _in_background.reset(token)
        with _outbox.all_tasks_done:
            if not _outbox.all_tasks_done.wait_for(lambda: not _outbox.unfinished_tasks, timeout):
                _log.warning("%d artifacts still unsent after %.0f s", _outbox.unfinished_tasks, timeout)


def _clean(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: _REDACTOR.value(v) if k in ("markdown", "table", "description") else v for k, v in kwargs.items()}


def create_markdown_artifact(markdown: str, **kwargs: Any):
    return _in_task_run_later(_prefect.create_markdown_artifact, _clean({"markdown": markdown, **kwargs}))


def create_table_artifact(table: Any, **kwargs: Any):
    return _in_task_run_later(_prefect.create_table_artifact, _clean({"table": table, **kwargs}))


def create_progress_artifact(progress: float, **kwargs: Any):
    return _prefect.create_progress_artifact(progress=progress, **_clean(kwargs))


def update_progress_artifact(artifact_id: Any, progress: float, **kwargs: Any):
    return _prefect.update_progress_artifact(artifact_id=artifact_id, progress=progress, **_clean(kwargs))
