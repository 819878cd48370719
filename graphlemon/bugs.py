"""Bug tracker over `bugs.ndjson`: open with de-duplication, transitions, list.

A bug's current state is the fold of its events. `open` de-duplicates on
`unit_id:test_name` against active bugs (open / fixing / reopened) inside one
ledger transaction, so two processes reporting the same failure get one bug.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from . import lifecycle
from .errors import ErrorCode, GraphLemonError, invalid_param
from .ledger import Ledger
from .models import (
    BugCategory,
    BugEvent,
    BugSource,
    BugStatus,
    RootCauseCategory,
    Severity,
    SuggestedRoute,
    utcnow,
)

_FIELDS = (
    "source",
    "task_id",
    "unit_id",
    "run_id",
    "test_name",
    "category",
    "severity",
    "title",
    "detail",
    "affected_units",
    "signature",
    "root_cause_category",
    "root_cause_detail",
    "suggested_route",
    "skill_role",
)


_FIELD_SET = frozenset(_FIELDS)
TITLE_MAX = 200  # characters: a title is one line a person reads in `bugs list`
DESCRIPTION_MAX = 20_000  # characters: a human report is prose, not a pasted log


class Bug(BaseModel):
    """The current state of one bug (a fold of its events)."""

    bug_id: str
    status: BugStatus
    source: BugSource | None = None
    task_id: str | None = None
    unit_id: str | None = None
    run_id: str | None = None
    test_name: str | None = None
    category: BugCategory = "unknown"
    severity: Severity = "medium"
    title: str = ""
    detail: str = ""
    affected_units: list[str] = Field(default_factory=list)
    signature: str | None = None
    root_cause_category: RootCauseCategory | None = None
    root_cause_detail: str | None = None
    suggested_route: SuggestedRoute | None = None
    skill_role: str | None = None  # a skill_defect: whose skill the validator blamed (REQ-08)
    fix_refs: list[str] = Field(default_factory=list)
    opened_at: datetime
    updated_at: datetime
    reopen_count: int = 0
    events: int = 0

    @property
    def dedup_key(self) -> str | None:
        return dedup_key(self.unit_id, self.test_name)


def dedup_key(unit_id: str | None, test_name: str | None) -> str | None:
    return f"{unit_id}:{test_name}" if unit_id and test_name else None


def apply_event(bugs: dict[str, Bug], ev: BugEvent) -> None:
    """Fold one event into the current-state map (no validation: the writer validated)."""
    bug = bugs.get(ev.bug_id)
    if bug is None:
        bug = bugs[ev.bug_id] = Bug(bug_id=ev.bug_id, status=ev.status, opened_at=ev.ts, updated_at=ev.ts)
    state = bug.__dict__  # plain attribute writes: values come from validated events
    for name in ev.model_fields_set & _FIELD_SET:
        value = getattr(ev, name)
        if value is not None:
            state[name] = value
    if ev.status == "reopened" and bug.status != "reopened":
        state["reopen_count"] += 1
    state["status"] = ev.status
    if ev.fix_refs:
        bug.fix_refs.extend(r for r in ev.fix_refs if r not in bug.fix_refs)
    state["updated_at"] = ev.ts
    state["events"] += 1


def fold(events: Iterable[BugEvent]) -> dict[str, Bug]:
    bugs: dict[str, Bug] = {}
    for ev in events:
        apply_event(bugs, ev)
    return bugs


class BugTracker:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._bugs: dict[str, Bug] = {}
        self._events: list = []  # the ledger records folded so far (the same objects the ledger holds)
        self._mutex = threading.Lock()  # parallel units share one tracker: each event is folded once

    # -- queries -----------------------------------------------------------------------------
    def all(self) -> dict[str, Bug]:
        return self._fold(self.ledger.read("bug"))

    def get(self, bug_id: str) -> Bug:
        bug = self.all().get(bug_id)
        if bug is None:
            raise GraphLemonError(ErrorCode.BUG_NOT_FOUND, f"no bug {bug_id!r} in this project", bug_id=bug_id)
        return bug

    def list(
        self,
        *,
        unit_id: str | None = None,
        status: str | Sequence[str] | None = None,
        category: str | None = None,
        source: str | None = None,
        task_id: str | None = None,
    ) -> list[Bug]:
        statuses = {status} if isinstance(status, str) else set(status or ())
        return [
            b
            for b in self.all().values()
            if (unit_id is None or b.unit_id == unit_id)
            and (not statuses or b.status in statuses)
            and (category is None or b.category == category)
            and (source is None or b.source == source)
            and (task_id is None or b.task_id == task_id)
        ]

    # -- commands ----------------------------------------------------------------------------
    def open(
        self,
        *,
        title: str,
        source: BugSource,
        unit_id: str | None = None,
        test_name: str | None = None,
        run_id: str | None = None,
        task_id: str | None = None,
        detail: str = "",
        category: BugCategory = "unknown",
        severity: Severity = "medium",
        affected_units: Sequence[str] | None = None,
        signature: str | None = None,
        by: str = "system",
    ) -> tuple[str, bool]:
        """Open a bug, or return the id of the active bug with the same unit:test. -> (bug_id, created)."""
        title = _one_line(title)
        key = dedup_key(unit_id, test_name)
        with self.ledger.transaction("bug") as tx:
            bugs = self._fold(tx.records())
            if key is not None:
                for bug in bugs.values():
                    if bug.dedup_key == key and bug.status in lifecycle.ACTIVE_BUG:
                        return bug.bug_id, False
            bug_id = _new_bug_id(bugs)
            tx.append(
                BugEvent(
                    bug_id=bug_id,
                    event="open",
                    status="open",
                    by=by,
                    source=source,
                    task_id=task_id,
                    unit_id=unit_id,
                    run_id=run_id,
                    test_name=test_name,
                    category=category,
                    severity=severity,
                    title=title,
                    detail=detail,
                    signature=signature,
                    affected_units=list(affected_units)
                    if affected_units is not None
                    else ([unit_id] if unit_id else []),
                )
            )
        return bug_id, True

    def report(
        self,
        *,
        title: str,
        description: str,
        unit_id: str | None = None,
        severity: Severity = "medium",
        by: str = "human",
    ) -> str:
        """A human-reported bug (REQ-11 v_bug_feedback): title and description are required."""
        if not description or not description.strip():
            raise invalid_param("bug description is empty; describe what you saw and what you expected")
        if len(title.strip()) > TITLE_MAX:
            raise invalid_param(
                f"bug title is {len(title.strip()):,} characters; keep it under {TITLE_MAX} and put the rest in the description"
            )
        if len(description) > DESCRIPTION_MAX:
            raise invalid_param(
                f"bug description is {len(description):,} characters (limit {DESCRIPTION_MAX:,}); attach long logs as a file and cite its path"
            )
        bug_id, _ = self.open(
            title=title, source="human_reported", unit_id=unit_id, detail=description.strip(), severity=severity, by=by
        )
        return bug_id

    def transition(
        self, bug_id: str, to: BugStatus, *, by: str = "system", fix_refs: Sequence[str] = (), note: str | None = None
    ) -> tuple[BugStatus, BugStatus]:
        """Validated status change -> (from, to). INVALID_TRANSITION if the table forbids it."""
        with self.ledger.transaction("bug") as tx:
            bug = self._fold(tx.records()).get(bug_id)
            if bug is None:
                raise GraphLemonError(ErrorCode.BUG_NOT_FOUND, f"no bug {bug_id!r} in this project", bug_id=bug_id)
            lifecycle.check("bug", bug.status, to)
            tx.append(
                BugEvent(
                    bug_id=bug_id,
                    event="transition",
                    status=to,
                    from_status=bug.status,
                    by=by,
                    fix_refs=list(fix_refs),
                    note=note,
                )
            )
            return bug.status, to

    def update(self, bug_id: str, *, by: str = "system", note: str | None = None, **fields: object) -> None:
        """Refine fields (category, severity, root cause, route, ...) without a status change."""
        unknown = set(fields) - set(_FIELDS)
        if unknown:
            raise invalid_param(f"cannot update bug fields {sorted(unknown)}")
        with self.ledger.transaction("bug") as tx:
            bug = self._fold(tx.records()).get(bug_id)
            if bug is None:
                raise GraphLemonError(ErrorCode.BUG_NOT_FOUND, f"no bug {bug_id!r} in this project", bug_id=bug_id)
            tx.append(BugEvent(bug_id=bug_id, event="update", status=bug.status, by=by, note=note, **fields))  # type: ignore[arg-type]

    # -- internals ---------------------------------------------------------------------------
    def _fold(self, records: list) -> dict[str, Bug]:
        """Incremental fold: the ledger's record list only grows, so apply the new tail. -> a copy of the map."""
        with self._mutex:
            if len(records) < len(self._events):
                if records and records[-1] is self._events[len(records) - 1]:
                    return dict(self._bugs)  # an older read of the same ledger (another thread folded further)
                self._bugs, self._events = {}, []  # the file was replaced: fold it from the start
            for ev in records[len(self._events) :]:
                apply_event(self._bugs, ev)
            self._events = records
            return dict(self._bugs)


def _new_bug_id(existing: dict[str, Bug]) -> str:
    stamp = utcnow().strftime("%Y%m%d-%H%M")
    while True:
        bug_id = f"bug-{stamp}-{secrets.token_hex(2)}"
        if bug_id not in existing:
            return bug_id


def _one_line(title: str) -> str:
    """A title as `bugs list` shows it: whitespace collapsed, at most TITLE_MAX characters. INVALID_PARAM if empty."""
    text = " ".join(title.split())
    if not text:
        raise invalid_param("bug title is empty")
    return text if len(text) <= TITLE_MAX else text[: TITLE_MAX - 1] + "…"
