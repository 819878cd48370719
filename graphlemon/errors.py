"""One exception hierarchy with error codes (the codes every interface answers with: CLI, console, ledger).

Raise `GraphLemonError(code, message, **context)`; never degrade silently. The CLI
prints `error[CODE]: message` and exits 2 for bad input, 1 for a failed operation.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    # bad input (exit 2)
    INVALID_PARAM = "INVALID_PARAM"
    PROJECT_NOT_FOUND = "PROJECT_NOT_FOUND"
    TASK_NOT_FOUND = "TASK_NOT_FOUND"
    BUG_NOT_FOUND = "BUG_NOT_FOUND"
    UNIT_NOT_FOUND = "UNIT_NOT_FOUND"
    RUN_NOT_FOUND = "RUN_NOT_FOUND"
    ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND"
    NODE_EXEC_NOT_FOUND = "NODE_EXEC_NOT_FOUND"
    ITERATION_NOT_FOUND = "ITERATION_NOT_FOUND"
    DEPLOYMENT_NOT_FOUND = "DEPLOYMENT_NOT_FOUND"
    UNKNOWN_FRAMEWORK = "UNKNOWN_FRAMEWORK"
    # failed operations (exit 1)
    INVALID_TRANSITION = "INVALID_TRANSITION"
    LEDGER_CORRUPT = "LEDGER_CORRUPT"
    LEDGER_WRITE_FAILED = "LEDGER_WRITE_FAILED"  # the state folder cannot be written (disk full, read-only)
    IO_ERROR = "IO_ERROR"  # any other file the command needed could not be read or written
    SANDBOX_VIOLATION = "SANDBOX_VIOLATION"
    EVIDENCE_NOT_VERIFIED = "EVIDENCE_NOT_VERIFIED"
    CLASSIFIER_BLOCKED = "CLASSIFIER_BLOCKED"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    EXECUTOR_ERROR = "EXECUTOR_ERROR"
    OUTPUT_INVALID = "OUTPUT_INVALID"
    TEST_RUNNER_ERROR = "TEST_RUNNER_ERROR"
    GIT_ERROR = "GIT_ERROR"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    MERGE_CONFLICT = "MERGE_CONFLICT"
    ABORTED = "ABORTED"
    # a work tree's `.git` (pointer or git dir) is not the one GraphLemon made: git is not run in it
    WORKTREE_TAMPERED = "WORKTREE_TAMPERED"
    # one lease per task (graphlemon/lease.py): another holder runs the task (the message names it and since when)
    TASK_HELD = "TASK_HELD"
    # this run's lease was taken over by another holder: it stops at once and writes nothing more for the task
    LEASE_LOST = "LEASE_LOST"
    # a person asked the run to stop: it stopped at a safe point (the task is blocked, reason stopped_by_person)
    STOPPED = "STOPPED"


BAD_INPUT_CODES = frozenset(
    {
        ErrorCode.INVALID_PARAM,
        ErrorCode.PROJECT_NOT_FOUND,
        ErrorCode.TASK_NOT_FOUND,
        ErrorCode.BUG_NOT_FOUND,
        ErrorCode.UNIT_NOT_FOUND,
        ErrorCode.RUN_NOT_FOUND,
        ErrorCode.ARTIFACT_NOT_FOUND,
        ErrorCode.NODE_EXEC_NOT_FOUND,
        ErrorCode.ITERATION_NOT_FOUND,
        ErrorCode.DEPLOYMENT_NOT_FOUND,
        ErrorCode.UNKNOWN_FRAMEWORK,
    }
)


# Stops that are states of the task, not failures: the run ends with a message and the task's state (blocked for a
# person, or left to the lease's new holder); never a traceback, and never retried (docs/devloop.md, "Stop").
EXPECTED_STOPS = frozenset(
    {
        ErrorCode.BUDGET_EXCEEDED,
        ErrorCode.QUOTA_EXCEEDED,
        ErrorCode.CLASSIFIER_BLOCKED,
        ErrorCode.STOPPED,
        ErrorCode.LEASE_LOST,
        ErrorCode.TASK_HELD,
    }
)


class GraphLemonError(Exception):
    """The one error type of the domain: a code, a human message and context fields."""

    def __init__(self, code: ErrorCode | str, message: str, **context: Any) -> None:
        self.code = ErrorCode(code)
        self.message = message
        self.context = context
        super().__init__(f"{self.code}: {message}")

    @property
    def exit_code(self) -> int:
        return 2 if self.code in BAD_INPUT_CODES else 1

    def to_dict(self) -> dict[str, Any]:
        return {"code": str(self.code), "message": self.message, **_jsonable(self.context)}

    def __reduce__(self):  # picklable across processes and Prefect result storage
        return (_rebuild, (type(self), str(self.code), self.message, self.context))


def _rebuild(cls, code, message, context):
    err = cls.__new__(cls)
    GraphLemonError.__init__(err, code, message, **context)
    return err


def _jsonable(context: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v if isinstance(v, str | int | float | bool | None | list | dict) else str(v) for k, v in context.items()
    }


def invalid_param(message: str, **context: Any) -> GraphLemonError:
    return GraphLemonError(ErrorCode.INVALID_PARAM, message, **context)


def write_failed(path: Any, exc: OSError) -> GraphLemonError:
    """LEDGER_WRITE_FAILED naming the file and the system's reason (`No space left on device`, ...)."""
    reason = exc.strerror or type(exc).__name__
    return GraphLemonError(
        ErrorCode.LEDGER_WRITE_FAILED, f"cannot write {path}: {reason}", path=str(path), errno=exc.errno
    )


def permission_denied(path: Any, need: str, fix: str | None = None) -> GraphLemonError:
    """PERMISSION_DENIED naming the path and the permission that is missing (`need`: "write", "read", ...)."""
    remedy = (
        fix or f"give your user {need} permission on it (e.g. `chmod u+{need[0]} {path}`) and run the command again"
    )
    return GraphLemonError(
        ErrorCode.PERMISSION_DENIED, f"{path}: {need} permission denied; {remedy}", path=str(path), need=need
    )


# -- typed errors the agents raise (their fields live in `context`, so pickling keeps them) --


class BudgetExceeded(GraphLemonError):
    """A model call was not sent: its estimate would cross the task's budget (REQ-10)."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(ErrorCode.BUDGET_EXCEEDED, message, **context)


class QuotaExceeded(GraphLemonError):
    """A plan usage limit was hit (REQ-14): `limit_type` session | weekly | opus, `resets_at` if known."""

    def __init__(self, limit_type: str, resets_at: Any = None, message: str | None = None, **context: Any) -> None:
        when = resets_at.isoformat() if hasattr(resets_at, "isoformat") else resets_at
        text = message or f"{limit_type} usage limit reached" + (f"; resets at {when}" if when else "")
        super().__init__(ErrorCode.QUOTA_EXCEEDED, text, limit_type=limit_type, resets_at=when, **context)

    @property
    def limit_type(self) -> str:
        return self.context["limit_type"]

    @property
    def resets_at(self):
        from datetime import datetime

        when = self.context.get("resets_at")
        return datetime.fromisoformat(when) if when else None


class ExecutorGaveUp(GraphLemonError):
    """A model backend stopped trying (EXECUTOR_ERROR): the API kept failing after GraphLemon's own retries
    (`attempts` > 1), or answered something no retry can fix (`attempts` == 1: HTML from a proxy, a bad key).
    Either way it is final for this turn: an orchestrator must not retry it again."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(ErrorCode.EXECUTOR_ERROR, message, **context)


class ClassifierBlocked(GraphLemonError):
    """Claude Code's auto-mode classifier denied too many actions for one task (REQ-07)."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(ErrorCode.CLASSIFIER_BLOCKED, message, **context)


class TaskHeld(GraphLemonError):
    """Another holder has the task's lease (graphlemon/lease.py): this start is refused, nothing was changed.
    `holder`, `pid`, `host`, `since` and `lease_id` name who runs it."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(ErrorCode.TASK_HELD, message, **context)


class StopRequested(GraphLemonError):
    """A person asked the run to stop; raised at the run's next safe point (before a step starts, or in a wait).
    `then` is what the stop leads to: `block` (stopped_by_person, resumable) or `abandon`."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(ErrorCode.STOPPED, message, **context)

    @property
    def then(self) -> str:
        return self.context.get("then") or "block"


class LeaseLost(GraphLemonError):
    """This run's lease was taken over (its holder was judged gone): the run stops and writes nothing more."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(ErrorCode.LEASE_LOST, message, **context)
