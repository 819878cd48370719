"""Deployment records: transitions checked against `lifecycle.DEPLOYMENT`, and the fold that gives a deployment's
current state, its timeline and its signals."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from .. import lifecycle
from ..errors import ErrorCode, GraphLemonError
from ..ledger import Ledger
from ..models import DeployHealthSignal, DeploymentEvent, DeploymentFields, DeploymentStatus

_CARRIED = tuple(DeploymentFields.model_fields)  # what an event learnt stays with the deployment

TERMINAL = frozenset({"finalized", "rolled_back"})
NEEDS_PERSON = frozenset({"rollback_failed", "blocked_pending_human"})
ROLLBACK_FAILED_MESSAGE = (
    "The automatic recovery itself failed: the previous instance could not be brought back to serve. "
    "This is not a request to review the candidate's code."
)


class TimelineEntry(BaseModel):
    ts: datetime
    status: DeploymentStatus
    from_status: DeploymentStatus | None = None
    by: str
    note: str | None = None
    duration_ms: int | None = None


class Deployment(DeploymentFields):
    """The current state of one deployment (a fold of its events)."""

    deployment_id: str
    status: DeploymentStatus
    note: str | None = None
    started_at: datetime
    updated_at: datetime
    timeline: list[TimelineEntry] = Field(default_factory=list)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def what_to_do(self) -> str | None:
        """Plain words for a person, when the deployment needs one."""
        if self.status in ("rollback_failed", "blocked_pending_human") and self.blocked_reason == "rollback_failed":
            return (
                f"{ROLLBACK_FAILED_MESSAGE} The candidate {short(self.commit)} is still serving so the service stays "
                f"up. To do: repair the previous instance directory {self.previous_instance_dir} (commit "
                f"{short(self.previous_commit)}) - or remove it (`git worktree remove --force <dir>`), and the "
                f"rollback checks it out anew - then run `graphlemon deploy rollback {self.deployment_id}`."
            )
        return None

    def person_summary(self) -> dict:
        """One line of `deploy status`'s and the console's "needs a person" list."""
        return {
            "deployment_id": self.deployment_id, "commit": self.commit, "status": self.status,
            "blocked_reason": self.blocked_reason, "updated_at": self.updated_at.isoformat(),
            "what_to_do": self.what_to_do() or self.note,
        }  # fmt: skip


def short(commit: str | None) -> str:
    return (commit or "?")[:12]


def fold(events: list[DeploymentEvent]) -> dict[str, Deployment]:
    out: dict[str, Deployment] = {}
    for ev in events:
        dep = out.get(ev.deployment_id)
        if dep is None:
            dep = out[ev.deployment_id] = Deployment(
                deployment_id=ev.deployment_id, status=ev.status, started_at=ev.ts, updated_at=ev.ts
            )
        dep.status, dep.updated_at = ev.status, ev.ts
        for name in _CARRIED:
            value = getattr(ev, name)
            if value is not None:
                setattr(dep, name, value)
        if ev.note:
            dep.note = ev.note
        dep.timeline.append(TimelineEntry(ts=ev.ts, status=ev.status, from_status=ev.from_status, by=ev.by,
                                          note=ev.note, duration_ms=ev.duration_ms))  # fmt: skip
    return out


class DeploymentBook:
    """Deployments in one project's ledger: start one, move it, read them."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def all(self) -> dict[str, Deployment]:
        return fold(self.ledger.read_as("deployment", DeploymentEvent))

    def get(self, deployment_id: str) -> Deployment:
        try:
            return self.all()[deployment_id]
        except KeyError:
            raise GraphLemonError(ErrorCode.DEPLOYMENT_NOT_FOUND, f"no deployment {deployment_id!r} in this project",
                                  deployment_id=deployment_id) from None

    def latest(self) -> Deployment | None:
        deployments = sorted(self.all().values(), key=lambda d: d.started_at)
        return deployments[-1] if deployments else None

    def needing_person(self) -> list[Deployment]:
        """Every deployment a person must act on (a failed rollback, blocked), oldest first — whichever is latest."""
        return sorted((d for d in self.all().values() if d.status in NEEDS_PERSON), key=lambda d: d.started_at)

    def active(self) -> Deployment | None:
        """The one deployment not yet finalized or rolled back (at most one runs at a time)."""
        return next((d for d in self.all().values() if not d.terminal), None)

    def stage(self, *, by: str = "supervisor", **fields: Any) -> Deployment:
        with self.ledger.transaction("deployment") as tx:
            current = fold(tx.records())  # type: ignore[arg-type]
            running = next((d for d in current.values() if not d.terminal), None)
            if running is not None:
                raise GraphLemonError(
                    ErrorCode.INVALID_TRANSITION,
                    f"deployment {running.deployment_id} ({short(running.commit)}) is still {running.status}; "
                    "one deployment at a time",
                )
            deployment_id = f"dep-{secrets.token_hex(4)}"
            lifecycle.check("deployment", None, "staged")
            tx.append(DeploymentEvent(deployment_id=deployment_id, status="staged", by=by, **fields))
        return self.get(deployment_id)

    def move(self, deployment_id: str, to: DeploymentStatus, *, by: str = "supervisor", **fields: Any) -> Deployment:
        with self.ledger.transaction("deployment") as tx:
            current = fold(tx.records()).get(deployment_id)  # type: ignore[arg-type]
            if current is None:
                raise GraphLemonError(ErrorCode.DEPLOYMENT_NOT_FOUND, f"no deployment {deployment_id!r} in this project",
                                      deployment_id=deployment_id)  # fmt: skip
            lifecycle.check("deployment", current.status, to)
            tx.append(DeploymentEvent(deployment_id=deployment_id, status=to, from_status=current.status, by=by,
                                      **fields))  # fmt: skip
        return self.get(deployment_id)

    def signals(self, deployment_id: str) -> list[DeployHealthSignal]:
        return [s for s in self.ledger.read_as("deploy_health_signal", DeployHealthSignal)
                if s.deployment_id == deployment_id]  # fmt: skip

    def record(self, *signals: DeployHealthSignal) -> None:
        if signals:
            self.ledger.append(*signals)
