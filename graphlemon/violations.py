"""A task's refused actions, folded once from its ledger and said in every place a person looks.

Every refusal the sandbox makes — a write outside the role's paths, a symlink or FIFO the host would not follow,
a nested repository the commit took out, git state a turn changed — is a `NodeEvent(event="violation")` of the
task. `fold(node_events, task_id)` is the pure fold over those records; the run's closing lines, `graphlemon
status`, the console's task page and the evidence pack render it (`headline`, `with_refusals`, `lines`), so a task
with refused actions never reads as a clean "done".
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import ErrorCode, GraphLemonError
from .models import NodeEvent, Stage

SHOWN_CHARS = 300  # of each refused action's text, where a list of them is shown
BIDI_CONTROLS = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


@dataclass(frozen=True)
class RefusedAction:
    ts: datetime
    stage: str
    unit_id: str | None
    node_exec_id: str
    attempt: int
    what: str  # the violation's text, as recorded

    @property
    def shown(self) -> str:
        """The text as a person reads it: one line, control and bidi characters shown as escapes, capped."""
        return _short(self.what)

    def as_dict(self) -> dict[str, Any]:
        return {"ts": self.ts.isoformat(), "stage": self.stage, "unit_id": self.unit_id,
                "node_exec_id": self.node_exec_id, "attempt": self.attempt, "what": self.what}  # fmt: skip


@dataclass(frozen=True)
class TaskViolations:
    task_id: str
    actions: tuple[RefusedAction, ...] = ()

    @property
    def count(self) -> int:
        return len(self.actions)

    def by_stage(self) -> dict[str, int]:
        return dict(Counter(a.stage for a in self.actions))

    def headline(self) -> str:
        """`12 refused actions (tester 9, coder 3)`, or "" when there are none."""
        if not self.actions:
            return ""
        stages = ", ".join(f"{stage} {n}" for stage, n in sorted(self.by_stage().items()))
        noun = "refused action" if self.count == 1 else "refused actions"
        return f"{self.count} {noun} ({stages})"

    def lines(self, limit: int = 50) -> list[str]:
        """One line per refused action (the first `limit`), then how many more."""
        out = [f"{a.stage}{f' [{a.unit_id}]' if a.unit_id else ''}: {a.shown}" for a in self.actions[:limit]]
        if self.count > limit:
            out.append(f"... and {self.count - limit} more (`graphlemon status {self.task_id}` lists them all)")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "by_stage": self.by_stage(), "actions": [a.as_dict() for a in self.actions]}


def fold(node_events: Iterable[Any], task_id: str) -> TaskViolations:
    """The task's refused actions, in the order they were recorded (pure: over the node records)."""
    actions = tuple(
        RefusedAction(e.ts, e.stage, e.unit_id, e.node_exec_id, e.attempt, e.error or e.error_code or "refused")
        for e in node_events
        if isinstance(e, NodeEvent) and e.event == "violation" and e.task_id == task_id
    )
    return TaskViolations(task_id, actions)


def with_refusals(words: str, violations: TaskViolations) -> str:
    """A task's status words with its refusals: `done — with 3 refused actions (tester 3)` when it has any."""
    return f"{words} — with {violations.headline()}" if violations.count else words


def _short(text: str) -> str:
    flat = "".join(_visible(c) for c in " ".join(text.split()))
    return flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 1] + "…"


def _visible(char: str) -> str:
    """A control or bidi-formatting character as its escape (an agent's path cannot reorder or hide the line)."""
    if unicodedata.category(char) in ("Cc", "Cf") or unicodedata.bidirectional(char) in BIDI_CONTROLS:
        return char.encode("unicode_escape").decode("ascii")
    return char


def violation_event(
    error: GraphLemonError | str, *, node_exec_id: str, stage: Stage, task_id: str | None = None,
    unit_id: str | None = None, attempt: int = 1, what: str = "",
) -> NodeEvent:  # fmt: skip
    """The ledger record of one refused action (`what`: the step it happened in, e.g. "planner drafts")."""
    text = error.message if isinstance(error, GraphLemonError) else error
    return NodeEvent(
        event="violation", status="running", error_code=ErrorCode.SANDBOX_VIOLATION, node_exec_id=node_exec_id,
        task_id=task_id, stage=stage, unit_id=unit_id, attempt=attempt, error=f"{what}: {text}" if what else text,
    )  # fmt: skip
