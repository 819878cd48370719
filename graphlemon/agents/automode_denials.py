"""Count Claude Code auto-mode classifier denials per task (REQ-07 failure case).

A denial is a tool result that says "Permission for this action was denied by
the Claude Code auto mode classifier". Each one is a `classifier_denial` timeline
event for the task; a tool call that succeeds after a denial is a
`classifier_reset` event (it ends the streak). The counts are a fold over the
ledger, so they survive a process restart. `max_consecutive` in a row (3) or
`max_total` in all (20) raise `ClassifierBlocked` (CLASSIFIER_BLOCKED), and a
blocked task does not start Claude Code again until `reset_classifier_counts`
(a person's manual resume) zeroes both counters.
"""

from __future__ import annotations

import re

from ..errors import ClassifierBlocked
from ..ledger import Ledger
from ..models import TimelineEvent

DENIAL = re.compile(
    r"denied by the Claude Code auto[- ]mode classifier|auto[- ]mode classifier (?:denied|blocked)", re.I
)
EVENT_DENIAL = "classifier_denial"
EVENT_RESET = "classifier_reset"
MANUAL_RESET = "manual_resume"


def is_classifier_denial(text: str) -> bool:
    return bool(DENIAL.search(text or ""))


def classifier_counts(ledger: Ledger, task_id: str | None) -> tuple[int, int]:
    """-> (denials in a row, denials in total) for the task."""
    consecutive = total = 0
    if task_id is None:
        return 0, 0
    for ev in ledger.read_as("timeline", TimelineEvent):
        if ev.task_id != task_id:
            continue
        if ev.event == EVENT_DENIAL:
            consecutive += 1
            total += 1
        elif ev.event == EVENT_RESET:
            consecutive = 0
            if ev.ref == MANUAL_RESET:
                total = 0
    return consecutive, total


def reset_classifier_counts(ledger: Ledger, task_id: str, note: str = "") -> None:
    """A person resumed the task: both counters start again from zero (the events stay in the ledger). A task with no
    denial counted (it never used Claude Code, or its counts are zero already) has nothing to reset: nothing is
    written, so its timeline does not speak of a classifier it never met."""
    if classifier_counts(ledger, task_id) == (0, 0):
        return
    ledger.append(
        TimelineEvent(event=EVENT_RESET, task_id=task_id, ref=MANUAL_RESET,
                      summary="a person resumed the task"
                      + (f" (their note: {note})" if note and note != "manual resume" else "")
                      + "; Claude Code's classifier denial counts start again from zero")  # fmt: skip
    )


class ClassifierGuard:
    """Records denials / resets for one turn and raises when a threshold is reached."""

    def __init__(
        self, ledger: Ledger, task_id: str | None, unit_id: str | None, *, max_consecutive: int, max_total: int
    ) -> None:
        self.ledger, self.task_id, self.unit_id = ledger, task_id, unit_id
        self.max_consecutive, self.max_total = max_consecutive, max_total
        self.consecutive, self.total = classifier_counts(ledger, task_id)

    def check(self) -> None:
        if self.consecutive >= self.max_consecutive or self.total >= self.max_total:
            raise ClassifierBlocked(
                f"the Claude Code auto-mode classifier denied {self.consecutive} action(s) in a row and "
                f"{self.total} in total for task {self.task_id or '(none)'} "
                f"(limits: {self.max_consecutive} in a row, {self.max_total} in total)",
                task_id=self.task_id,
                consecutive=self.consecutive,
                total=self.total,
            )

    def denied(self, tool: str, reason: str, ref: str | None = None) -> None:
        self.consecutive += 1
        self.total += 1
        self.ledger.append(
            TimelineEvent(
                event=EVENT_DENIAL,
                task_id=self.task_id,
                unit_id=self.unit_id,
                ref=ref,
                summary=f"{tool}: {reason[:300]}",
            )
        )
        self.check()

    def allowed(self) -> None:
        if self.consecutive:
            self.consecutive = 0
            self.ledger.append(
                TimelineEvent(
                    event=EVENT_RESET,
                    task_id=self.task_id,
                    unit_id=self.unit_id,
                    summary="a tool call succeeded after a classifier denial",
                )
            )
